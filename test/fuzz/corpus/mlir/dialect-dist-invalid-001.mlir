dist.mesh @m axes [dp = 2, tp = 0]
