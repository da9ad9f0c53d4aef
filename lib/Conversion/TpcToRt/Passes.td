//===- Passes.td - tpc -> rt conversion --------------------*- tablegen -*-===//

#ifndef LIB_CONVERSION_TPCTORT_PASSES_TD
#define LIB_CONVERSION_TPCTORT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TpcLowerToRt : Pass<"tpc-lower-to-rt", "ModuleOp"> {
  let summary = "Lowers a tpc function (@forward, @train_step) to an rt.program";
  let description = [{
    Replaces `func.func @<function>` (`@forward` by default) by
    `rt.program @<function>`, one buffer per value and one kernel per op, in
    the op order of the function:

    * an argument with `tpc.param` becomes an `rt.param` with its Hugging
      Face name and shape (`tpc.hf_shape`, else the argument's shape). Its
      `init` follows from its uses (through casts, slices and the
      collectives that move blocks: `dist.shard_slice`, `dist.all_gather`,
      `dist.all_to_all`): `ones` for a
      `tpc.layer_norm` or `tpc.rms_norm` weight, else `zeros` for a
      `tpc.layer_norm` or `tpc.linear` bias (or the right operand of a
      `tpc.add` to a linear's all-reduced or reduce-scattered output: a
      row-parallel bias), else `normal` with std 0.02;
    * an argument with `tpc.input` becomes an `rt.input`; its `bound` is the
      embedding table's row count for the ids of a `tpc.embedding`, the
      logits' last dimension for the labels of a `tpc.cross_entropy` (the
      smallest one when several uses give one, looking through the same
      ops), else 0;
    * an argument with `tpc.state = {name, param}` becomes an `rt.state`;
    * every tpc op becomes one `rt.alloc` per result and one `rt.kernel`
      with the attributes of the executable's kernel table
      (`tpc.reshape` is a `copy`, `tpc.cast` a `cast`, `tpc.rotary_grad` a
      `rotary` with the inverse flag), except:
      - `tpc.adamw_update` and `tpc.sgd_update` update their parameter and
        state arguments in place (their results are those buffers), which
        needs every other reader of the old values to come before them. An
        SGD update without a momentum buffer gets an `rt.state "momentum"`,
        since the kernel always keeps one;
      - a dropout `block` (the microbatch index of `tpc.dropout_mask`,
        `tpc.attention` and `tpc.attention_grad`) must be a constant `n`:
        the kernel's first index is `n` times the global elements of one
        block (the mask, or the probabilities `[b, h, sq, sk]`);
      - `tensor.extract_slice` along one dimension (a microbatch of an
        input) is a `slice` kernel, of the whole tensor the same buffer;
      - `arith.constant` has no kernel; an op that reads a constant other
        than those above is refused;
    * the returned values become `rt.output`s (`tpc.output` names) and
      `rt.grad`s (`tpc.grad`); those tagged `tpc.update` and `tpc.state`
      must be the in-place results of an update of that very argument, and
      need nothing more.

    A partitioned module (after `dist-partition`: one `dist.mesh`, the
    function marked `dist.partitioned`, local types, collectives) becomes
    one rank's program:

    * the `dist.mesh` becomes the program's `mesh` (and is erased unless
      something else still names it); two meshes, or a function on a mesh
      without `dist.partitioned` (its types are global), are errors;
    * an argument's `dist.sharding` (its global layout; never partial)
      becomes the `splits` of its `rt.param` or `rt.input`, the global shape
      being the local one times the split sizes; a parameter's
      `dist.unpadded_shape` becomes its `view`, with `padded` the global
      shape. The `hf_shape` default and the ids' `bound` (a split table's
      global row count) are global too. An optimizer state must have its
      parameter's layout;
    * `dist.all_reduce` (sum, or max as flag 1), `dist.all_gather`,
      `dist.reduce_scatter` (sum), `dist.shard_slice` and
      `dist.all_to_all` become the kernels of the same names, their axes
      mesh indices at the end of the `ints`; `dist.shard` (run
      `dist-partition` first), `broadcast`, `send` and `recv` are errors;
    * the `dist.sharding` of `tpc.dropout`, `tpc.dropout_mask`,
      `tpc.attention` and `tpc.attention_grad` (their first result's global
      layout) becomes the kernel's `splits`, and the first index counts
      global elements: the local block's dimensions times the split sizes;
    * an output must be whole: returning a split argument is an error.

    The module gets `rt.seed` (the dropout seed). An argument or op it cannot
    lower, or a result without a tag, is an error at that place.

    ```mlir
    // tpc-opt model.mlir --tpc-lower-to-rt
    %x = tpc.gelu %h tanh : tensor<4x32x256xf32>
    // becomes
    %x = rt.alloc : memref<4x32x256xf32>
    rt.kernel gelu(%h) -> (%x) flags 1
        : memref<4x32x256xf32> -> memref<4x32x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rt::RtDialect"];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to lower (forward, or train_step after "
           "tpc-unroll-train-step)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"0",
           "The dropout seed recorded as rt.seed (tpc-compile --seed)">,
    Option<"actions", "actions", "bool", /*default=*/"false",
           "Lower a one-microbatch training step template (from "
           "tpc-unroll-train-step=first-microbatch-only) as functions run "
           "by actions, one per microbatch: the executable does not grow "
           "with the microbatches">
  ];
}

#endif // LIB_CONVERSION_TPCTORT_PASSES_TD
