rt.program @p {
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
}
