dist.mesh @mesh axes [dp = 2]
"func.func"() <{function_type = (tensor<4xf32>) -> (), sym_name = "f", arg_attrs = [{dist.sharding = #dist.sharding<@mesh, [[dp]]>}]}> ({
^bb0:
  "func.return"() : () -> ()
}) : () -> ()
