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

def TpcAutodiff : Pass<"tpc-autodiff", "ModuleOp"> {
  let summary = "Builds the training step (F, B, W and a driver) from @forward";
  let description = [{
    Reverse-mode differentiation of `@forward` (whose loss is
    `tpc.loss_mean` of a `tpc.cross_entropy`) into per-microbatch functions
    and a driver, added next to `@forward` (docs/design/training.md):

    - `@train_F(params..., input_ids, labels, microbatch)` returns the loss
      sum, the target count and the *stash*: every forward value the
      backward reads, once, each result tagged `tpc.stash` ("B", "W" or
      "BW": who reads it) and `tpc.layer` (the layer of the op that reads
      it; a silu whose input the backward reads anyway is not stashed: B
      recomputes it from that input, right where it reads it); the op
      that computes a layer's stash value is marked
      `tpc.stash_layer` (per result: the layer, or -1), which the copies
      of the op keep through unrolling and partitioning, so the report's
      stash analysis finds the stash in the step that is lowered. Dropouts
      are split into `tpc.dropout_mask` (stashed, one byte per
      element) and `tpc.apply_mask`; masks and attention dropout draw the
      microbatch's block of the whole batch's stream, so the number of
      microbatches does not change them.
    - `@train_B(params..., input_ids, labels, microbatch, dloss_sum,
      stash...)` computes the activation gradients in reverse order and
      returns the gradients `dY` of the results of ops that read a
      parameter; a norm's parameter gradients (row sums of the dY and x
      its input gradient reads) it computes itself, right before the input
      gradient, and returns after the dYs, so that W's stash holds neither.
    - `@train_W(inputs it reads..., stash..., dY...)` returns one f32
      gradient per parameter (`tpc.grad = <name>`); a parameter used twice
      (tied embedding and head) gets the sum of both uses, a parameter's
      views (slice, reshape, ...) are differentiated here.
    - `@train_step(params..., input_ids, labels) -> (loss, grads...)` takes
      f32 master parameters (cast to the model's precision once), counts the
      targets of the global batch, and runs an `scf.for` over the
      microbatches that slices the inputs, calls F, B and W, and accumulates
      the loss sum and the f32 gradients. Every microbatch scales its
      gradient by `1 / global count`, so the result does not depend on
      `microbatches`.

    A `@forward` that only calls functions (the chunks of
    `dist-pipeline-outline`) is differentiated per chunk: each callee
    `@forward_<name>` gets `@train_F_<name>`, `@train_B_<name>` and
    `@train_W_<name>`. A chunk's F returns the activations it hands on
    (or, the last chunk, the loss sum and count) and its stash; its B takes
    the gradients of those activations (or `dloss_sum`) and returns the
    gradients of the activations it received, then the dYs; its W returns
    the gradients of the chunk's own parameters. `@train_step` has the same
    signature as for the unsplit model: per microbatch it calls every F in
    model order, every B in reverse with each W after its B, and each chunk
    accumulates its own gradients; a parameter several chunks read (a tied
    embedding) gets the sum of their accumulators once, after the loop
    (docs/design/pipeline-schedules.md, "The way there").

    Every op on a path from a parameter to the loss must implement
    `TpcDerivativeOpInterface`; the pass refuses, naming the op, when one
    does not, and refuses a batch that `microbatches` does not divide.

    ```
    $ tpc-opt model.mlir --tpc-autodiff=microbatches=4
    ```
  }];
  let options = [
    Option<"microbatches", "microbatches", "unsigned", /*default=*/"1",
           "Number of microbatches the global batch is split into">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TpcOptimizer : Pass<"tpc-optimizer", "ModuleOp"> {
  let summary = "Appends the optimizer step to the training driver";
  let description = [{
    Extends `@train_step` (built by `tpc-autodiff`) with one optimizer
    update. It gains the input `step` (an i64 scalar, the 1-based optimizer
    step, `tpc.input = "step"`) and one argument per optimizer state tensor
    (`tpc.state = {name, param}`: AdamW's `exp_avg` and `exp_avg_sq`, SGD's
    `momentum` when the momentum is non-zero; f32, zero at the start). It
    then computes

    - the global gradient norm over every parameter (a tied parameter
      counts once): `tpc.sum_squares`, then `tpc.clip_coefficient`, whose
      coefficient (as `torch.nn.utils.clip_grad_norm_`) scales each gradient
      inside the update when `grad-clip` > 0;
    - the learning rate of `step`: `tpc.lr_schedule`, `constant` or
      `cosine` (linear warm-up over `warmup-steps`, then cosine decay to
      `min-lr` at `total-steps`; a constant schedule ignores `min-lr` and
      `total-steps` and refuses a warm-up);
    - per parameter, `tpc.adamw_update` (as `torch.optim.AdamW`: decoupled
      weight decay, bias correction) or `tpc.sgd_update` (as
      `torch.optim.SGD`: L2 weight decay, momentum without dampening).
      Parameters whose name contains one of `decay-exclude` get no weight
      decay.

    `@train_step` then returns the loss, `grad_norm` and `lr`
    (`tpc.output`), the gradients (`tpc.grad`, as computed, before
    clipping), the new parameters (`tpc.update = <name>`) and the new state
    (`tpc.state`), in that order.

    ```
    $ tpc-opt model.mlir --tpc-autodiff \
        --tpc-optimizer="optimizer=adamw lr=6e-4 lr-schedule=cosine warmup-steps=10 total-steps=100 grad-clip=1.0 decay-exclude=bias,ln_"
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", /*default=*/"1e-3",
           "Peak learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (negative: the optimizer's default, 0.01 for adamw "
           "as torch.optim.AdamW, 0 for sgd as torch.optim.SGD)">,
    ListOption<"decayExclude", "decay-exclude", "std::string",
               "Parameters whose name contains one of these get no weight "
               "decay">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0.0",
           "Clip the global gradient norm to this value (0: no clipping)">,
    Option<"lrSchedule", "lr-schedule", "std::string",
           /*default=*/"\"constant\"", "constant or cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Steps of linear learning-rate warm-up">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Step at which the cosine schedule reaches min-lr">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0",
           "Learning rate at the end of the cosine schedule">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TpcStashReport : Pass<"tpc-stash-report", "ModuleOp"> {
  let summary = "Prints the stash bytes of @train_F per transformer layer";
  let description = [{
    Prints, for one microbatch, the values and bytes each transformer layer
    stashes between the forward and the backward (a value belongs to the
    layer of the op whose backward reads it), those outside every layer and
    the total: from the results of `@train_F` when `tpc-autodiff` ran, else
    from what it would build from `@forward` for `microbatches`. The IR is
    not changed. Tools get the same numbers from `mlir::tpc::summarizeStash`,
    `computeStashSummary` and `computeLayerStashBytes` (Autodiff.h).

    ```
    $ tpc-opt model.mlir --tpc-autodiff --tpc-stash-report -o /dev/null
    layer 0: 14 values, 360448 bytes
    ...
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to print the report ('-' is stdout)">,
    Option<"microbatches", "microbatches", "unsigned", /*default=*/"1",
           "Microbatches, when the stash is computed from @forward">
  ];
  // What tpc-autodiff builds, on a copy of the module.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TpcTestShardingRules : Pass<"tpc-test-sharding-rules", "ModuleOp"> {
  let summary = "Prints the sharding rule of every op (a test pass)";
  let description = [{
    Prints, to stdout, one line per op that implements
    `TpcShardingOpInterface`: the op name, its operands' and results'
    dimensions as factors (a dimension made of several factors prints them
    major first, joined by `*`; `1` is a dimension without factor), each
    factor's size and kind (parallel unless marked `reduction` or `whole`),
    and the op's linearity (docs/design/sharding.md). Ops without a rule
    print `no sharding rule`. The IR is not changed.

    ```
    $ tpc-opt model.mlir --tpc-test-sharding-rules -o /dev/null
    tpc.linear: ([i, j, k], [k, l]) -> ([i, j, l]) {i=4, j=32, k=64 reduction, l=256} linearity multilinear
    ```
  }];
}

def TpcUnrollTrainStep : Pass<"tpc-unroll-train-step", "ModuleOp"> {
  let summary = "Inlines F, B and W into the training step and unrolls it";
  let description = [{
    Turns the training driver that `tpc-autodiff` and `tpc-optimizer` build
    (`@train_step` calling `@train_F`, `@train_B` and `@train_W` in an
    `scf.for` over the microbatches) into one straight-line function, which
    `tpc-lower-to-rt` then lowers to one kernel list per step:

    * every `scf.for` with constant bounds is fully unrolled, iteration by
      iteration (microbatch 0 first), its induction variable a constant;
    * every `func.call` is replaced by the callee's body, each inlined op
      tagged `tpc.phase` with its function's name (`"train_F"`,
      `"train_B"`, `"train_W"`: dist-partition shares a gather among the
      forward's readers, and among the backward's, never between the two);
      callees left without uses are erased (`@forward` is kept unless
      `keep-forward=false`);
    * what became constant folds: the microbatch offsets of the
      `tensor.extract_slice`s of the inputs become static, the microbatch
      index tensor becomes a constant (the dropout `block` of the ops that
      read it), and the zero accumulators of the first microbatch fold away
      (`tpc.add` of a zero splat);
    * what every microbatch computes again from the parameters alone (the
      16-bit casts of the f32 master weights, a slice of the position
      table) is computed once, by the first (common subexpressions);
    * every op of W moves up to right after the latest definition of its
      operands: each layer's weight gradients run right after its input
      gradients, as in Megatron, instead of after the whole backward. The
      stash a layer's W reads is freed earlier, and a row-parallel matmul's
      gathered output gradient serves B and W without living across other
      layers (pipeline schedules that defer W will order the phases
      themselves);
    * a `tpc.add` that is the only reader of both its operands (a gradient
      accumulator and a microbatch's share of it) moves up to right after
      the later of them: the loop adds after the whole of W, which would
      keep every share and every previous sum live at once.

    Within a microbatch the ops otherwise keep the order of F, then B, then
    W, so the stash of microbatch `i` lives from its forward to its last
    reader in B or W, and microbatches run one after the other. A loop whose bounds are
    not constant, or a call of a function without a body, is an error.

    ```
    $ tpc-opt model.mlir --tpc-autodiff=microbatches=2 --tpc-optimizer \
        --tpc-unroll-train-step
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"train_step\"",
           "The function to flatten">,
    Option<"keepForward", "keep-forward", "bool", /*default=*/"true",
           "Keep @forward (false: the training step replaces it, as in "
           "tpc-compile --train)">,
    Option<"tagMicrobatches", "tag-microbatches", "bool",
           /*default=*/"false",
           "Mark every op of an iteration of the microbatch loop with "
           "`tpc.microbatch_index` (its iteration), for a pipeline schedule "
           "(dist-pipeline-stages); ops of different microbatches then stay "
           "apart (no common subexpressions between them)">,
    Option<"firstMicrobatchOnly", "first-microbatch-only", "bool",
           /*default=*/"false",
           "Keep only the first microbatch's iteration, its ops marked "
           "(tag-microbatches): a template that tpc-lower-to-rt "
           "actions=true runs once per microbatch (each value the "
           "microbatch hands to the rest of the step stands for its sum over "
           "the microbatches)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TpcFoldAttentionTransposes
    : Pass<"tpc-fold-attention-transposes", "ModuleOp"> {
  let summary = "Lets attention read and write the projections' [b, s, heads, d] layout";
  let description = [{
    A `tpc.attention` whose query, key and value are each a `tpc.transpose`
    swapping dimensions 1 and 2 (`[b, s, heads, d]` to `[b, heads, s, d]`, as
    GPT-2 writes it), or a `tpc.rotary` of one that only the attention reads
    (Llama's q and k), becomes a `seq_major` attention of the transposes'
    inputs, rotated by `seq_major` rotaries where they were; readers of its
    result that swap it back read the new result directly, any other reader
    a transpose of it. Ops left without readers are erased. The values are
    unchanged (the dropout draws the same probabilities); the copies go:
    four per layer in the forward, and, since `tpc-autodiff` then
    differentiates the sequence-major ops, four more in the backward.
    `tpc-compile` runs it first, on every function.

    ```
    $ tpc-opt model.mlir --tpc-fold-attention-transposes
    ```
  }];
}

def TpcStripDropout : Pass<"tpc-strip-dropout", "ModuleOp"> {
  let summary = "Removes dropout from a forward pass (evaluation)";
  let description = [{
    Evaluation as Hugging Face's `model.eval()` runs it: every `tpc.dropout`
    of `function` becomes its input and every fused `tpc.attention` loses
    its dropout (rate 0, no stream). `tpc-compile` runs it on a forward-only
    compile (without `--train`) unless `--keep-dropout`; a training step
    keeps its dropout.

    ```
    $ tpc-opt model.mlir --tpc-strip-dropout
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to evaluate">
  ];
}

def TpcRemat : Pass<"tpc-remat", "ModuleOp"> {
  let summary = "Recomputes the layers' stash in the backward (activation rematerialization)";
  let description = [{
    On the unrolled training step (`tpc-unroll-train-step`; before or after
    the pipeline split, before `dist-partition`), with `policy=full`: for
    each transformer layer and microbatch, the values the layer's forward
    computes that a backward (B or W) op reads and no forward op outside the
    layer reads (the next layer's input stays kept) are no longer kept from
    the forward: B recomputes them from the layer's inputs, the parameters
    and the microbatch index (the dropout masks draw the same stream and
    block, so they are the forward's bit for bit), right before the first
    backward op that reads one of them, so that a layer is recomputed when
    its backward comes. The copies are marked `tpc.recompute = <layer>` and
    take the phase of the layer's B (`train_B`, `train_B_chunk1`), so a
    schedule that defers W hands W what it reads like a dY; the forward's
    `tpc.stash_layer` no longer names what it does not keep.
    `policy=uniform:N` does the same for groups of N consecutive layers
    (layers 0..N-1, N..2N-1, ...: a group keeps its input and is recomputed
    whole when its backward begins; Megatron's `--recompute-method
    uniform`), `policy=block:N` for the first N layers of each pipeline
    chunk (of the model without a pipeline) and none of the others
    (Megatron's `block`). `policy=selective` recomputes each layer's
    attention core alone (Korthikanti et al. 2022): the scores'
    `batch_matmul`, the softmax, the dropout and its mask, up to the
    `batch_matmul` with v, whose output and inputs stay kept; a layer with
    the fused `tpc.attention` has none (its backward recomputes the scores
    already). `policy=layers:E,E,...` chooses per layer, one entry per
    layer of the model: `n` (none), `s` (selective), `f` (full) or `gK`
    (recomputed with the other layers of group K as one, as under
    `uniform`); `tpc-compile --remat auto` writes its choice this way.
    `policy=none` (the default) changes nothing.
    docs/design/remat.md.

    ```
    $ tpc-opt model.mlir --tpc-autodiff --tpc-optimizer \
        --tpc-unroll-train-step=keep-forward=false --tpc-remat=policy=full
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, selective, full, uniform:N, block:N or layers:E,... (E "
           "one of n, s, f, gK per layer)">,
    Option<"function", "function", "std::string", /*default=*/"\"train_step\"",
           "The unrolled training step">
  ];
}

#endif // DIALECTS_TPC_TRANSFORMS_PASSES_TD
