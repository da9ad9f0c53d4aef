//===- Passes.td - tpc dialect passes ----------------------*- tablegen -*-===//

#ifndef DIALECTS_TPC_TRANSFORMS_PASSES_TD
#define DIALECTS_TPC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TpcModelSummary : Pass<"tpc-model-summary", "ModuleOp"> {
  let summary = "Prints a summary of an imported model";
  let description = [{
    Reads the `tpc.model` module attribute and the `@forward` function and
    prints, to stdout (or the file given by `output`), the model's shape,
    its parameters (tensors, elements, bytes), the op count per kind and the
    ops per transformer layer. The IR is not changed.

    ```
    $ tpc-opt model.mlir --tpc-model-summary -o /dev/null
    model gpt2: 2 layers, hidden 64, heads 4 (kv 4), ffn 256, vocab 256
    ...
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to print the summary ('-' is stdout)">
  ];
}

#endif // DIALECTS_TPC_TRANSFORMS_PASSES_TD
