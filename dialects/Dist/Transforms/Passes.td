//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//

#ifndef DIALECTS_DIST_TRANSFORMS_PASSES_TD
#define DIALECTS_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistMesh : Pass<"dist-mesh", "ModuleOp"> {
  let summary = "Adds the device mesh the dist passes distribute over";
  let description = [{
    Adds `dist.mesh @mesh axes [...]` to the module, with the axes and sizes
    of `axes` in their order (`tpc-compile --mesh dp=2,tp=2` gives
    `axes=dp=2,tp=2`). An axis is a name and a positive size; a name may not
    repeat. A module that already has a `@mesh` is refused, not given a
    second one.

    ```
    $ tpc-opt step.mlir --dist-mesh=axes=dp=2,tp=2 --dist-annotate-megatron \
        --dist-propagate --dist-partition
    ```
  }];
  let options = [
    ListOption<"axes", "axes", "std::string",
               "The mesh axes in order, each name=size (e.g. dp=2,tp=2)">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistAnnotateMegatron : Pass<"dist-annotate-megatron", "ModuleOp"> {
  let summary = "Megatron's tensor, sequence and data parallelism as annotations";
  let description = [{
    Recognizes the transformer's matmuls by what they feed and read (not by
    parameter names) and annotates their weights over the module's only
    `dist.mesh`, for `dist-propagate` and `dist-partition` to carry out:

    * **column-parallel**: a `tpc.linear` whose result reaches (through
      views: reshape, transpose, slice, rotary, cast, repeat) an attention
      operand has the heads dimension of its weight (and bias) split over
      the tensor-parallel axis; GPT-2's fused `c_attn` ([h, 3, heads, d])
      splits heads, never the Q/K/V blocks, and grouped-query K/V weights
      split their kv-heads, in fused and unfused attention. The heads are
      found from the structure, never by matching a size: they are the
      output dimension before the head size (`tpc-import` lays a
      projection's outputs out as [..., heads, head_dim]); the query
      (operand 0 of attention or of the scores' matmul) has the model's
      heads, a key or value its kv-heads, the `tpc.repeat` on the way of
      unfused grouped-query attention giving the group; the module's
      `tpc.model` (heads, kv_heads, head_dim, recorded by `tpc-import`)
      must agree, or the matmul is refused. The head size is never split.
      A K or V weight whose kv-heads `dist-replicate-kv-heads` repeated up
      to the tensor-parallel size (a `tpc.repeat` of a parameter) stays
      whole: its repeat is split (`dist.shard`), so each device slices its
      kv-head's copy.
      The forward's reader decides. One reaching `gelu`, `silu` or `mul` (the first
      MLP matmul, both halves of SwiGLU) splits its output features;
    * **row-parallel**: a `tpc.linear` whose input comes from attention or
      from the MLP activation splits its weight's input features. Its bias
      is split off into a `tpc.add` after the matmul, so that it is added
      once, after the reduction;
    * **vocab-parallel** (`vocab-parallel`, on by default): the embedding
      tables and the weight of the matmul computing a cross-entropy's
      logits split the vocabulary over tp; the embedding's output is then a
      partial sum and the cross-entropy combines the logits' vocabulary
      blocks itself, never gathering them (`dist-pad-vocab` first makes the
      vocabulary divisible);
    * **data parallelism**: each microbatch (a `tensor.extract_slice` of an
      input of the unrolled training step) is split along the batch over
      the data-parallel axis, so each rank computes its rows of every
      microbatch and draws their single-device dropout masks; the whole
      input stays replicated. An input without slices is split itself;
    * **sequence parallelism** (`sequence-parallel`): the embedding's
      output and each row-parallel matmul's output are annotated
      (`dist.shard`) as split along the sequence over the tensor-parallel
      axis: the partial sums become reduce-scatters, layer norms, dropout
      and residual adds run on sequence shards, and the inputs of
      column-parallel matmuls are gathered where they are read.

    Impossible configurations are refused at the op with the reason: heads,
    kv-heads, hidden size or FFN size not divisible by the tensor-parallel
    size, a sequence length not divisible by it with sequence parallelism, a
    batch not divisible by the data-parallel size.

    ```
    $ tpc-opt step.mlir --dist-annotate-megatron=sequence-parallel=true \
        --dist-propagate --dist-partition
    ```
  }];
  let options = [
    Option<"tpAxis", "tp-axis", "std::string", /*default=*/"\"tp\"",
           "The mesh axis of tensor parallelism (ignored if the mesh lacks it)">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "The mesh axis of data parallelism (ignored if the mesh lacks it)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Split layer norms, dropout and residual adds along the sequence">,
    Option<"vocabParallel", "vocab-parallel", "bool", /*default=*/"true",
           "Split the embedding tables and the LM head along the vocabulary">
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistPadVocab : Pass<"dist-pad-vocab", "ModuleOp"> {
  let summary = "Pads the vocabulary to a multiple (tp, or a GEMM tile)";
  let description = [{
    Megatron's vocab-parallel embedding and LM head split the vocabulary over
    the tensor-parallel ranks, which needs it divisible by their number
    (GPT-2's 50257 is prime); a tensor-core GEMM runs fastest on whole tiles
    (`tpc-compile --target cuda` pads to 64 x tp: `--pad-vocab`). For every `tpc.cross_entropy` whose logits'
    vocabulary is not a multiple of `multiple`, the parameters holding that
    vocabulary (the LM head's weight and the embedding tables of that size)
    grow zero rows up to the next multiple, recorded in their
    `dist.unpadded_shape` argument attribute; the types that follow are
    inferred again, the cross-entropy gets `vocab` = the real size (the padded
    logits take no probability mass, so the loss and every real gradient are
    unchanged), and a returned value that grew (the logits) is sliced back.
    The runtime loads the real rows and zero padding, and writes gradients and
    checkpoints without the padding. Runs before `tpc-autodiff`, on the
    forward pass.

    ```
    $ tpc-opt model.mlir --dist-pad-vocab=multiple=4
    ```
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"1",
           "Pad the vocabulary to a multiple of this (the tensor-parallel "
           "size, times a GEMM tile's rows for speed)">
  ];
}

def DistPipelineSplit : Pass<"dist-pipeline-split", "ModuleOp"> {
  let summary = "Assigns the layers of @forward to pipeline stages";
  let description = [{
    The first step of pipeline parallelism (issue 13): decides which
    (virtual) stage computes each op of `@forward`, balancing the
    matrix-product FLOPs of the stages, and records it; nothing else
    changes yet (outlining each stage's functions, the schedule and the
    transfers come next, docs/design/pipeline-schedules.md).

    The `p · v` stages (chunks) each take a contiguous run of the transformer
    layers (`tpc.layer`): `p` pipeline ranks (`stages`) with `v` chunks each
    (`virtual-stages`). With `stage-layers` the counts are given, in chunk
    order; otherwise the split minimizes the largest chunk's FLOPs, the
    first chunk also carrying what precedes layer 0 (the embedding) and the
    last what follows the last layer (final norm, LM head, loss): a large
    vocabulary's LM head weighs several layers, and the last chunk then gets
    fewer of them. Every chunk gets at least one layer; a split that cannot
    (fewer layers than chunks, counts that do not add up) is refused with the
    reason. An op outside every layer belongs to the chunk of its first
    reader (the embedding to layer 0's; a parameter's cast to the first
    chunk that reads it), or to the last chunk if only the return reads it.

    Chunks go to ranks by `placement`: `round-robin` (chunk c on rank
    c mod p: Megatron's interleaved schedule) or `v` (ZB-V, v = 2: rank r
    holds chunks r and 2p − 1 − r, so the embedding, the LM head and the
    loss share rank 0).

    Every op of `@forward` gets `dist.stage` (its chunk, i64); the module
    gets `dist.pipeline = {stages, virtual_stages, placement, ranks (of each
    chunk), layers ([first, last] per chunk), flops (per chunk)}`. Data flows
    only from a chunk to itself or a later one (checked).

    ```
    $ tpc-opt model.mlir --dist-pipeline-split="stages=4 virtual-stages=2 placement=v"
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "Pipeline ranks (p)">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Chunks (virtual stages) per rank (v)">,
    Option<"placement", "placement", "std::string", /*default=*/"\"round-robin\"",
           "round-robin (chunk c on rank c mod p) or v (ZB-V: rank r holds chunks r and 2p-1-r; needs v = 2)">,
    ListOption<"stageLayers", "stage-layers", "int64_t",
               "Layers per chunk, in chunk order (p x v counts adding up to the layers); default: balanced by FLOPs">
  ];
}

def DistPipelineOutline : Pass<"dist-pipeline-outline", "ModuleOp"> {
  let summary = "Makes each chunk of a split @forward a function of its own";
  let description = [{
    After `dist-pipeline-split`: the ops of each chunk (`dist.stage`) move,
    in order, into `@forward_chunk<c>`, whose arguments are what the chunk
    reads from outside — parameters and inputs (with `@forward`'s argument
    attributes) and the activations of earlier chunks (`dist.boundary` = the
    chunk that computes them) — and whose results are what later chunks or
    the return read. `@forward` becomes the calls of the chunks in order, so
    the module computes what it computed. Ops of parameters alone (a weight's
    cast or view) are recomputed in every chunk that reads them: a
    parameter two chunks share (GPT-2's tied embedding and LM head) is an
    argument of both, never an activation handed down the pipeline.

    The chunk functions are what the per-stage autodiff will differentiate,
    each with the gradients of its boundary results as arguments of its B
    (docs/design/pipeline-schedules.md, "The way there");
    `tpc-unroll-train-step=function=forward` inlines them back.

    ```
    $ tpc-opt model.mlir --dist-pipeline-split=stages=2 --dist-pipeline-outline
    ```
  }];
}

def DistPrintSchedule : Pass<"dist-print-schedule", "ModuleOp"> {
  let summary = "Prints and checks the pipeline schedule of a split model";
  let description = [{
    For a module split by `dist-pipeline-split` (its `dist.pipeline`: p
    ranks, v chunks per rank, the placement), builds each rank's action list
    for `schedule` (`gpipe`, `1f1b`, `interleaved-1f1b`, `zb-h1`, `zb-v`)
    and `microbatches`, checks it statically with every send synchronous
    (every transfer meets its peer, no rank waits forever, each
    microbatch's F before its B before its W; the first action that can
    never proceed is named otherwise), and prints a timeline, one row per
    rank, with the makespan, the bubble and the peak stash per rank (and,
    for zb-h1 and zb-v, `peak-in-flight`: the most microbatches whose F
    is done and whose W is not, which the W stash holds) under
    the timing model of `forward-cost`, `backward-cost` and `weight-cost`
    (docs/design/pipeline-schedules.md). The IR is not changed. A
    combination the schedule does not take (interleaved-1f1b with
    microbatches not a multiple of p, zb-v without v placement, ...) is
    refused with the reason. With `actions` it also prints each rank's
    action list (`rank 0: F mb 0 chunk 0; SendAct mb 0 chunk 0->1; ...`);
    with `input` it reads such a list from a file instead of building one
    and checks it: a broken schedule is refused with the first action that
    can never proceed, or the missing, repeated or misordered one.

    ```
    $ tpc-opt model.mlir --dist-pipeline-split=stages=4 \
        --dist-print-schedule="schedule=1f1b microbatches=8" -o /dev/null
    1f1b p=4 m=8 v=1 makespan=33 bubble=0.273 peak-stash=4,3,2,1
    rank 0 | F0 F1 F2 F3 .  .  ...
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b, zb-h1 or zb-v">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Microbatches per step (m)">,
    Option<"forwardCost", "forward-cost", "int64_t", /*default=*/"1",
           "Time slots of an F">,
    Option<"backwardCost", "backward-cost", "int64_t", /*default=*/"1",
           "Time slots of a B">,
    Option<"weightCost", "weight-cost", "int64_t", /*default=*/"1",
           "Time slots of a W">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to print the timeline ('-' is stdout)">,
    Option<"actions", "actions", "bool", /*default=*/"false",
           "Also print every rank's action list, as text that `input` reads "
           "back">,
    Option<"input", "input", "std::string", /*default=*/"\"\"",
           "Check and print the schedule in this file (the `actions` text, "
           "written or edited by hand) instead of building one; the module "
           "needs no split">
  ];
}

def DistPipelineStages : Pass<"dist-pipeline-stages", "ModuleOp"> {
  let summary = "Cuts the training step into one program per pipeline rank";
  let description = [{
    For the unrolled training step of a split model (`dist-pipeline-split`,
    `dist-pipeline-outline`, `tpc-autodiff`,
    `tpc-unroll-train-step=tag-microbatches`; partitioned by
    `dist-partition` or not), builds the `schedule` for the module's
    `dist.pipeline` and the step's microbatches, checks it statically, and
    rewrites the step as the concatenation of one straight-line program per
    pipeline rank, each op marked `dist.pipeline_rank = r`:

    - the ops of chunk `c`'s F, B and W of microbatch `i` (`tpc.phase`,
      `tpc.microbatch_index`; what `dist-partition` inserted among them
      belongs to the phase of its first reader) run on the chunk's rank, in
      the order of the rank's action list;
    - a forward output another rank's next chunk reads, and an input
      gradient another rank's previous chunk reads, become a `dist.send` on
      `pp` where the schedule sends it and a `dist.recv` where it receives
      it (`pairs [from -> to]`, one channel per transfer);
    - what the step computes from its arguments alone (casts of the master
      weights, the inputs' microbatch slices, the target count) runs on
      every rank that reads it, first; every other op (gradient
      accumulation and reduction, the optimizer) on the ranks that hold its
      operands, as soon as they do;
    - a sum of two gradients held by different ranks (a tied embedding's,
      summed over the embedding group) runs on both after they exchange
      them (the lower rank sends first); `tpc.sum_squares` of gradients on
      several ranks becomes each rank's sum of those it holds (a gradient
      two ranks hold is counted by the lower one) and a `dist.all_reduce`
      over `pp`. These run after the rank's last action.

    Under a schedule that runs W apart from B (zb-h1, zb-v), an all_gather
    that a microbatch's B and W share (sequence parallelism: a row-parallel
    matmul's output gradient) is done again for W, so that the gathered
    tensor does not live from B to the deferred W; back to back (gpipe,
    1f1b, interleaved-1f1b) they share it, as Megatron does.

    With `functions=true` the step is a one-microbatch template (every op
    of microbatch 0, `tpc-unroll-train-step=first-microbatch-only`) and the
    executable does not grow with the microbatches: each rank's program is
    its prologue (what the arguments alone give; no `dist.function`), then
    each chunk's F, B and W and each transfer once, in the order of their
    first action, every op marked with its function (`dist.function` =
    `F chunk 2`, `B chunk 2`, `W chunk 2`, `recv act chunk 2`, `send act
    chunk 2`, `recv grad chunk 2`, `send grad chunk 2`; a schedule that runs
    W right after B has `BW chunk 2`, their ops in the step's order, each
    weight gradient right after what it reads), then the epilogue
    (`epilogue`: what reads the microbatches' sums). The step gets each
    rank's action list, `dist.stage_actions`: per rank `{functions = [...],
    actions = array<i64: function, microbatch, ...>}`, the schedule's
    actions on the rank's functions. `tpc-lower-to-rt actions=true` turns
    the values one function hands to another into pooled buffers (a pool
    per kind of value, a slot per microbatch in flight) and the values the
    epilogue reads into sums over the microbatches.

    With `async-transfers=true` (templates only; `tpc-compile` sets it
    unless `--blocking-transfers`) each transfer is started and waited for
    apart, so that it overlaps computation: a send starts where the schedule
    sends (`dist.send async`, function `send act chunk 2`) and is waited for
    after the rank's next compute (`dist.wait`, function `wait send act
    chunk 2`); a receive is posted before the rank's compute that precedes
    the schedule's receive (`dist.recv async`, `recv act chunk 2`) and
    waited for where the schedule receives (`wait recv act chunk 2`); a
    move that would make more microbatches be in flight on the rank at
    once (from their first action there to their last) than the
    schedule's list does is not made. Starts
    move only earlier and waits only later than in the checked synchronous
    list, and each direction between two ranks keeps its order, so the
    list cannot deadlock; the waits keep the buffers in flight live (the
    wait reads them), and their microbatch's pool slots held.

    The step returns each value from the lowest rank that holds it. A value
    that crosses ranks in any other way (a chunk reading a chunk that is not
    its neighbour, or another microbatch's) is refused, naming the op.
    docs/design/pipeline-schedules.md, "Stage programs".

    ```
    $ tpc-opt model.mlir --dist-pipeline-split=stages=2 --dist-pipeline-outline \
        --tpc-autodiff=microbatches=4 --tpc-optimizer \
        --tpc-unroll-train-step="keep-forward=false tag-microbatches=true" \
        --dist-mesh="axes=pp=2" --dist-pipeline-stages=schedule=1f1b
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b, zb-h1 or zb-v">,
    Option<"function", "function", "std::string",
           /*default=*/"\"train_step\"", "The unrolled training step">,
    Option<"functions", "functions", "bool", /*default=*/"false",
           "The step is a one-microbatch template (tpc-unroll-train-step="
           "first-microbatch-only): emit each chunk's F, B and W and each "
           "transfer once, as a function, and each rank's action list">,
    Option<"asyncTransfers", "async-transfers", "bool", /*default=*/"false",
           "With functions=true: start each transfer (dist.send/dist.recv "
           "async) and wait for it (dist.wait) apart, as functions of their "
           "own: a send waited for after the rank's next compute, a receive "
           "posted before the compute preceding it">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def DistReplicateKvHeads : Pass<"dist-replicate-kv-heads", "ModuleOp"> {
  let summary = "Replicates grouped-query kv-heads up to the tensor-parallel size";
  let description = [{
    Megatron splits the kv-heads of grouped-query attention over the
    tensor-parallel devices, which needs their number divisible by `tp`.
    With fewer kv-heads than devices (`tp` a multiple of them, the heads
    divisible by `tp`), each device's query heads still read a single
    kv-head: the one of their group. This pass makes that kv-head a
    device's own: the weight (and bias) of each K and V projection — the
    `tpc.linear` behind the key and value of a `tpc.attention` with fewer
    heads than its query, or behind the `tpc.repeat` to the query heads of
    unfused attention — is repeated along its kv-heads `tp / kv_heads` times
    (`tpc.repeat`, each kv-head's copies consecutive), the unfused repeat
    to the query heads shrinks by as much (and goes when it becomes 1), and
    the types that follow are inferred again. The model computes the same
    (each query head reads its group's kv-head), with `tp` kv-heads that
    `dist-annotate-megatron` splits like any other: every device slices its
    kv-head's rows of the replicated weight, computes only that kv-head's
    keys and values, and its contribution to the hidden state's gradient
    is a partial sum reduced with the query's; the weight's gradient is the
    sum over the copies (`tpc.sum_groups`, from `tpc-autodiff`). The
    parameters keep their shape and stay replicated.

    Refused at the projection, naming the numbers: kv-heads that neither
    divide by `tp` nor divide it, or heads not divisible by `tp`. Runs
    before `tpc-autodiff`, on the forward pass (as `dist-pad-vocab`);
    `tpc-compile --mesh` runs it when tp > 1.

    ```
    $ tpc-opt model.mlir --dist-replicate-kv-heads=tp=4
    ```
  }];
  let options = [
    Option<"tp", "tp", "int64_t", /*default=*/"1",
           "The tensor-parallel size (the number of kv-heads wanted at least)">
  ];
}

def DistPropagate : Pass<"dist-propagate", "ModuleOp"> {
  let summary = "Gives every value a sharding, from the annotated ones";
  let description = [{
    Walks every function of the module in op order and decides, for each op,
    how each factor of its sharding rule (`TpcShardingOpInterface`,
    docs/design/sharding.md) is split over the module's only `dist.mesh`,
    from the shardings of its operands:

    * starting points are the function arguments' `dist.sharding`
      attributes and `dist.shard` annotations (both *pinned*: kept as
      given), an optimizer state argument (`tpc.state`) takes its
      parameter's; everything else starts replicated. An annotated
      parameter (`tpc.param`), its cast to the model's precision and its
      reshapes and transposes are held firmest: over an annotated
      activation, itself over a derived value;
    * a factor takes the split of the first operand dimension that has it,
      the firmest held operands first, then splits that keep a result split before
      contracted ones (a weight gradient keeps the split of its weight and
      gathers an input that was split along the contracted sequence), then
      operand order; a factor that must stay whole, or whose axes are
      already taken, is not split (its operand is gathered);
    * a split reduction factor makes the results partial sums; a partial
      operand passes through an op that is linear in it (`add` of partial
      sums over the same axes, one partial operand of a multilinear op),
      otherwise it must be reduced first;
    * a `tpc.sum_to` (a bias's or the positions' gradient) of a partial sum
      that another reader of the same phase needs reduced, or of a value
      split along a summed dimension that it needs gathered (a row-parallel
      linear's output gradient, which its weight gradient reads whole; with
      sequence parallelism split along the sequence) reads it as that
      reader does: one collective serves both, the sum is whole (no
      reduction of its own), and a device can compute it with the weight
      gradient (the CUDA device's bias-gradient epilogue reads one dY);
    * a `tpc.sum_groups` whose grouped dimension is split finer than its
      groups (the weight gradient of kv-heads `dist-replicate-kv-heads`
      replicated: 2 kv-heads' 4 copies over 4 devices) sums partial sums
      instead of gathering its input: the operand is wanted as a partial sum
      over the splitting axes (each device pads its piece with zeros) and so
      is the result, reduced where it is needed whole;
    * ops without operands (`tpc.dropout_mask`) take the layout their first
      reader needs, so that a sharded reader does not slice a whole mask;
    * an op whose block factor is in its result alone (`tpc.embedding_grad`:
      the table's rows) computes the block its readers need (the
      optimizer's shard of a vocabulary-parallel table, the tied LM head's
      gradient block; found through adds and casts) instead of the whole
      result, gathering or reducing an operand split or partial over those
      axes first where a device's operand has at most the whole result's
      elements (tokens <= vocabulary rows; else the whole result is
      reduce-scattered or sliced). The partitioner tells the kernel its
      block (`dist.vocab_axes`).

    Two operands held alike (two parameters, or two annotated values) that
    cannot both hold are an error at the op that names both shardings. A parameter's split is never undone as a side
    effect of the activations' layouts or sizes: where it meets an
    activation split another way, the activation is resharded, and an op
    that would need the parameter gathered is an error naming it, unless
    `gather-parameters` says a gather is wanted (an FSDP-style policy). The result: every op carries
    `dist.operand_shardings` (what it needs of each operand) and
    `dist.result_shardings` (what its results are), every split argument
    `dist.sharding`; `dist-partition` turns these into per-device shapes and
    collectives.

    ```
    $ tpc-opt model.mlir --dist-annotate-megatron --dist-propagate
    ```
  }];
  let options = [
    Option<"gatherParameters", "gather-parameters", "bool",
           /*default=*/"false",
           "Let an op that needs an annotated parameter whole gather it "
           "(otherwise an error naming the parameter)">
  ];
}

def DistPartition : Pass<"dist-partition", "ModuleOp"> {
  let summary = "Per-device shapes and the collectives the shardings imply";
  let description = [{
    Reads what `dist-propagate` decided and rewrites every function for one
    device of the mesh (SPMD: every device runs the same program on its
    shard):

    * every tensor gets its local type (each split dimension divided by
      the product of its axes' sizes); arguments keep their global layout
      in `dist.sharding`;
    * where an operand's layout differs from what its op needs, the
      transition is inserted before the op: a partial sum is reduced by
      `dist.reduce_scatter` when the op needs it split along a dimension
      (the sequence-parallel transition) and otherwise by
      `dist.all_reduce`; a split the op does not want is undone by
      `dist.all_gather`; a split it wants that the value lacks is taken by
      `dist.shard_slice`, and a split it wants as a partial sum is padded
      with zeros by `dist.shard_pad` (neither communicates); where the
      repeats of a `tpc.repeat` or `tpc.sum_groups` are split, each device
      repeats or sums its share of them. A reduction of a value is shared by all its
      readers; a gather by the readers of one phase of the unrolled step
      (`tpc.phase`: F, B or W), so a sequence-parallel input is stashed as
      a shard and gathered again in the backward;
    * every inserted collective's location names the op it serves, the
      operand and the transition, e.g.
      `"tpc.add operand 1: [[dp], [], []] partial [tp] -> [[dp], [], []]"`;
    * `tpc.sum_squares` sums each group of operands with the same split
      separately and reduces each group's partial sum, so a replicated
      gradient counts once in the global norm;
    * the dropout ops (`tpc.dropout`, `tpc.dropout_mask`,
      `tpc.attention`, `tpc.attention_grad`) get `dist.sharding`: their
      first result's global layout, so the runtime draws each element at
      its global index.
  }];
}

def DistReportCollectives : Pass<"dist-report-collectives", "ModuleOp"> {
  let summary = "Prints the collectives dist-partition inserted, per layer";
  let description = [{
    Run after `dist-partition`: for every function, prints to stdout one
    line per phase, layer, kind and mesh axes of the collectives, with
    their number and the bytes one device moves (counted as the compile
    report counts them: an all-reduce its tensor, an all-gather its
    gathered result, a reduce-scatter its unscattered input; a
    `dist.shard_slice` moves nothing and is left out):

    ```
    // collectives of @train_step: phase layer: kind [axes] x count, bytes per device
    forward 0: all_gather [tp] x2, 25165824 bytes
    forward 0: reduce_scatter [tp] x2, 25165824 bytes
    parameters all-gathered: 0
    ```

    The last line counts the all-gathers of parameters (`tpc.param`
    arguments, through their casts and views) and names them: Megatron's
    layouts gather none (`dist-propagate` keeps every parameter's split).

    A collective is counted at the op it serves, the next op that is not a
    collective (`dist-partition` inserts an op's collectives right before
    it): its phase is `forward` for the forward (`tpc.phase` F) of an
    unrolled training step, `backward` for its input and weight gradients
    (B, W), `step` for what runs once per step (the loss mean, the global
    norm, the optimizer, the return: no phase); a function that is not an
    unrolled training step is all `forward`. The layer (`tpc.layer`, `-`
    outside the layers) is the served op's, except for a reduction in the
    forward: the layer of the op whose partial sum it completes (the
    vocab-parallel embedding's reduction is outside the layers, though
    layer 0 reads it). In the backward, partial sums flow through the
    norms' gradients and the residual adds, and a reduction counts where an
    op needs the sum whole. Megatron's pattern per layer reads
    directly off it (docs/design/sharding.md). The IR is unchanged.

    ```
    $ tpc-opt step.mlir --dist-annotate-megatron --dist-propagate \
        --dist-partition --dist-report-collectives -o /dev/null
    ```
  }];
}

#endif // DIALECTS_DIST_TRANSFORMS_PASSES_TD
