dist.mesh @m axes []
