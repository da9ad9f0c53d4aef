func.func private @forward(tensor<2xf32>)
