dist.mesh @m axes [tp = 2, tp = 4]
