//===- Passes.td - rt dialect passes -----------------------*- tablegen -*-===//

#ifndef DIALECTS_RT_TRANSFORMS_PASSES_TD
#define DIALECTS_RT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RtIssueReductionsEarly : Pass<"rt-issue-reductions-early", "ModuleOp"> {
  let summary = "Moves each all_reduce to just after its operand's last writer";
  let description = [{
    Moves every `all_reduce` kernel whose result is not its operand up to
    just after the last op before it that writes its operand (or defines
    it), taking the result's `rt.alloc` along when that comes later. The
    data-parallel reduction of a gradient, which the sharding passes place
    after the whole backward, is then issued right after the gradient's last
    kernel (its layer's last weight-gradient kernel), and a device that runs
    collectives on a stream of their own (the CUDA device) overlaps it with
    the rest of the backward. Where the writer is a kernel the CUDA device
    may fuse with the ones right after it (FusionCandidates.h, after
    runtime/cuda/FusionPlan.h: a weight gradient and the sum_to of its dY,
    a loss and its gradient, a norm's parameter and input gradients and the
    add of that, ...), the
    reduction goes after those, so that it does not keep them apart. Every
    rank runs the same program, so the collectives keep one order on all
    ranks; the values are unchanged.
    Then each `all_reduce` that is its operand's last use (an `rt.alloc`)
    reduces the operand in place, the result's buffer going: the memory plan
    would otherwise hand the operand's bytes to a later kernel of the
    backward, which a device reducing on a stream of its own must hold back
    until the reduction is done (the buffer stays live until the sum is
    read, as for an asynchronous collective's wait).

    In a program run by actions (`functions` with `actions` or
    `stage_actions`), the gradients are sums over the microbatches and the
    epilogue (a function run once) reduces them. Each such `all_reduce`
    moves into the run of the action that last touches its sum, just after
    that touch (past the rest of a fused run there, as above: a weight
    gradient added into its sum and the sum_to of its dY), and reduces the
    sum in place (its result is its operand;
    the result buffer goes). When other actions run that function too, the
    moving action runs a copy of it, `<name> + reductions`, placed after
    it, whose temporaries (buffers only that function uses) are copies too;
    the function ranges and action lists are renumbered. A reduction stays
    where the epilogue touches its sum before it or after it, where an
    output or a gradient binds the sum, where the sum or result is pooled,
    where its group includes the `pp` axis (other stages run other action
    lists: issued elsewhere in one, the collective would wait for the
    other's transfers), or where the result is written again.

    A program without functions whose kernels carry a pipeline `stage` is
    left as it is. Runs before `rt-plan-memory`, whose lifetimes then
    follow the new order.
  }];
}

def RtBucketReductions : Pass<"rt-bucket-reductions", "ModuleOp"> {
  let summary = "Gathers small all_reduces into runs the CUDA device issues as one";
  let description = [{
    Moves each `all_reduce` down to just before the next `all_reduce` of
    the same group (the same mesh axes, the same pipeline `stage`, the same
    function of a program run by actions) where no op between them reads or
    writes its operand or result and the run it joins stays within
    `bucket-bytes` (its members' operand bytes). The CUDA device issues a
    run of consecutive `all_reduce`s of one communicator as one NCCL group
    (`ncclGroupStart`/`ncclGroupEnd`, which NCCL aggregates into one
    launch), so a layer's gradients are reduced together, as PyTorch DDP's
    buckets (25 MiB by default) do: a norm's or a bias's few kilobytes no
    longer pay a collective's latency of their own. A reduction waits for
    its bucket's last member, at most until the next reduction of its
    group. Runs after `rt-issue-reductions-early`, which places each
    reduction just after its gradient's last writer, and
    `rt-prefetch-gathers`; before
    `rt-reduce-gradients-in-bf16` (which keeps each run together) and
    `rt-plan-memory`. Every rank runs the same program, so the collectives
    keep one order on all ranks; the values are unchanged. `bucket-bytes`
    0 leaves the program as it is.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"::mlir::rt::kReductionBucketBytes",
           "Most operand bytes of a run of all_reduces (default 25 MiB, "
           "26214400; 0: no moves)">,
  ];
}

def RtPrefetchGathers : Pass<"rt-prefetch-gathers", "ModuleOp"> {
  let summary = "Moves each all_gather up to just after the communication before it";
  let description = [{
    Moves every `all_gather` kernel whose result is not its operand up to
    just after the kernel that communicated before it (a collective, a
    transfer or its wait, or the vocabulary-split loss, whose all-reduces
    are inside it), in the program as it was before the pass; or less far:
    not past a kernel that writes its operand or reads or writes its
    result, its operand's definition, a binding of its result, or a kernel
    of another function (a program run by actions keeps its ranges), and
    never into a run of kernels that the CUDA device fuses
    (FusionCandidates.h). The result's `rt.alloc` comes along where it
    comes later.

    With sequence parallelism the weight gradients gather their sharded
    inputs again (with a deferred W, the row-parallel output gradients
    too), long after those were written. A device that runs collectives on
    streams of their own (the CUDA device) overlaps a collective only with
    the kernels after it in the program: moved, each gather runs while the
    kernels since the collective before it do (the previous gather's
    readers among them), as Megatron overlaps the input's all-gather with
    the input gradient's GEMM. One collective ahead only, so that where one
    gathered result was live at a time two are. Communicating kernels keep
    their order: every rank runs the same program and issues them alike. A
    device that runs kernels one at a time (the CPU) computes the same
    values. Runs before `rt-plan-memory`, whose lifetimes then follow the
    new order.
  }];
}

def RtOverlapCollectives : Pass<"rt-overlap-collectives", "ModuleOp"> {
  let summary = "Moves the kernels a collective does not wait for to just after it";
  let description = [{
    For each run of collective kernels (`all_reduce`, `reduce_scatter`,
    `all_gather`, `all_to_all`) issued one after another (as
    `rt-bucket-reductions` leaves them: the CUDA device issues such a run
    of reductions as one) of which one reads a buffer that a kernel
    before it writes, or that only reduces (`all_reduce`,
    `reduce_scatter`: say a deferred W's first, the all-reduce of the
    embedding's input gradient that B leaves partial, whose result then
    takes the place its input leaves), takes the kernels between the run
    and the kernel that communicated before it (a collective, a transfer
    or its wait, the vocabulary-split loss), of its function and pipeline
    stage, and moves
    those that the run does not wait for to just after it, in their order.
    A kernel moves where neither it nor any kernel of its fused run
    (FusionCandidates.h: runs move whole) writes a buffer that a kernel
    staying after it reads or writes, nor reads one that such a kernel
    writes, and no binding among them uses its buffers, nor where it is
    one of the `adamw_update` kernels right before a `sum_squares` that
    stays and reads one of their gradients (a split or pipelined model's
    gradient norm, reduced across ranks): the CUDA device sums those
    squares in the updates' pass, which saves a read of the gradients
    that the overlap of a scalar's reduction does not pay back. Each
    kernel moves past one run at most (the last run is taken first). Then the kernels
    that read nothing (a dropout mask drawn from the step's counter) among
    the first kernels after such a run that read its results move up to
    just after it, with their results' allocs, where no kernel they pass
    touches their results: the forward draws a branch's mask while the
    branch's reduction runs, not after its reader (not further: a mask
    drawn early lives longer). A run of gathers
    of buffers written long before (issued early by `rt-prefetch-gathers`,
    they already run behind the kernels after them) is left alone: moving
    kernels past it would keep more gathered results live at once.

    In a backward the sharding passes leave a tensor-parallel reduction of
    an input gradient (`all_reduce`, or `reduce_scatter` with sequence
    parallelism) right after the kernels that make it, and the layer's
    weight and bias gradients, which it does not need, before those. A
    device that runs collectives on streams of their own (the CUDA device)
    overlaps a collective only with the kernels after it, up to the first
    that reads its result: moved, the weight gradients' GEMMs run while the
    reduction does, as Megatron overlaps them. A device that runs kernels
    one at a time (the CPU) computes the same values: only kernels that
    share no buffer with what stays behind them move. Runs after
    `rt-issue-reductions-early`, `rt-prefetch-gathers` and
    `rt-bucket-reductions` (whose reductions and gathers then bound the
    windows and make the runs) and before `rt-plan-memory`, whose
    lifetimes follow the new order. In a program of functions each kernel
    stays in its function; the ranges are rewritten.

    The flow runs it twice. With `mark`, before `rt-issue-reductions-early`:
    the parameter gradients' reductions that pass moves up to their
    writers would otherwise bound the windows of the input gradients'
    reductions (a layer's weight gradients then stay before its
    reduce-scatter); each kernel it moves is marked (`rt.overlap_moved`).
    Without it, after the passes above: a marked kernel moves no further,
    and the marks are dropped; last, each `all_reduce` or `reduce_scatter`
    into a buffer of its own moves up to just after the last kernel that
    writes its operand or touches its result (in its function and stage,
    past no kernel that communicates and no binding). A recomputed
    forward's reduction (full recomputation), which the moves leave before
    its reader in one run with the next input gradient's, then runs behind
    the layer's backward: GPT-2 1.7B, tp = 8, pp = 2, full recomputation,
    1F1B on h200, 1.586 -> 1.453 s in the replay.
  }];
  let options = [
    Option<"mark", "mark", "bool", /*default=*/"false",
           "Mark the kernels moved, for a later run that moves them no "
           "further and drops the marks">,
  ];
}

def RtFoldPadSums : Pass<"rt-fold-pad-sums", "ModuleOp"> {
  let summary = "Pads that tile a dimension, added up, become one concat";
  let description = [{
    The backward of slices that cover a dimension (GPT-2's fused q, k and v
    projection cut in three; Llama's fused gate and up) pads each piece's
    gradient with zeros to the whole tensor and adds the pads up. Where a
    tree of `add` kernels has `pad` kernels for leaves that tile one
    dimension of the sum exactly (offsets 0, then each piece's end; the
    pads' and adds' results written and read for the sum alone, no binding;
    each piece written once before its pad; all of one function and stage),
    the tree and its pads are replaced by a `concat` of the pieces in
    offset order, writing the sum where the root add did: the tensor is
    written once instead of once per pad and per add. The values are the
    same (x + 0 = x), but for the sign of a zero: a -0 piece element stays
    -0 where the adds made it +0. In a program of functions the ranges and
    action lists are renumbered.
  }];
}

def RtPackAttentionQkv : Pass<"rt-pack-attention-qkv", "ModuleOp"> {
  let summary = "Attention reads q, k and v where the fused projection wrote them";
  let description = [{
    GPT-2's fused projection (`c_attn`) writes q, k and v as the parts of
    one `[b, s, 3, heads, d]` tensor; `tpc-lower-to-rt` cuts each out (a
    `slice` of dimension 2 and a reshaping `copy`) for the sequence-major
    `attention`, and the backward puts their gradients together again (a
    reshaping `copy` each and `rt-fold-pad-sums`' `concat`). Where q, k and
    v are cut out of one tensor that way and every kernel reading them is a
    sequence-major `attention` or `attention_grad` of exactly these q, k, v
    whose three gradients end in such a `concat` (each buffer written once
    and read by the next alone, in the gradient kernel's function and
    stage), the forwards become `attention_qkv` of the tensor and the
    gradients `attention_qkv_grad` writing the concat's result; the slices,
    copies and concats and their buffers go. Per layer, three slices and a
    concat that each read and write the whole tensor are gone, and the
    memory plan holds the tensor instead of q, k and v (the same bytes) from
    the forward to the backward. In a program of actions the tensor takes
    the pool of q, k and v (the stash) when the slices were its only
    readers and ran in its writer's function; a tensor already in another
    pool is left alone. The values are the same, bit for bit: the kernels
    compute `attention` and `attention_grad` on the parts. The dropout
    stream is unchanged (the probabilities are indexed as before); splits of
    a gradient kernel gain the whole parts' dimension. Runs after
    `rt-fold-pad-sums` and before `rt-plan-memory`.
  }];
}

def RtAccumulateWeightGrads : Pass<"rt-accumulate-weight-grads", "ModuleOp"> {
  let summary = "Each microbatch's weight gradient added into its sum by the GEMM (or the embedding's scatter)";
  let description = [{
    With microbatches, `tpc-lower-to-rt` adds each microbatch's share of a
    gradient into the gradient's sum right after the share is computed.
    Where the share is a `linear_weight_grad` result written into an
    `rt.alloc` of its own and read by that `add` alone (`sum = sum +
    share`, both f32 of one type; no binding, split or other reader; the
    two kernels in one block, stage and function, the sum untouched between
    them), the pair becomes one `linear_weight_grad_accumulate` where the
    GEMM was, whose result is the sum it adds to (cuBLASLt's and BLAS's
    beta = 1): the share is neither written nor read, its buffer goes, one
    kernel less per microbatch and weight. The values: where the GEMM sums
    a microbatch's tokens in one block it rounds the product and then adds
    the sum, as the add did (OpenBLAS up to a few hundred tokens: until
    2026-12-05 test/Compile/train-actions.test compared the actions against
    an unrolled step of plain GEMMs and adds, bit for bit); a longer sum
    adds its blocks' partial products into the sum one at a time, another
    order of the same float32 additions, within float32's bound for them.
    An `embedding_grad` share folds the same way into
    `embedding_grad_accumulate`, which reads and writes only the rows the
    ids hit (the pair wrote the whole table, then read two and wrote one):
    each hit row gets the pair's value bit for bit (its dY rows summed from
    0, then added); a row no id hits keeps its value, where the add turned
    a -0 into +0. The sum may be a buffer of its own too: in `out =
    add(t, share)` (either order; unrolled microbatches' running sum `t1 =
    add(t0, share1)`, a tied table's `add(head, share)`), where `out` is an
    `rt.alloc` the add alone writes and `t` an unbound `rt.alloc` that
    nothing uses after the share's first writer but the add, the share's
    writers add into `t`, which takes `out`'s place. A share may also have
    been written by its GEMM and then added into by accumulating kernels (a
    tied head's share once the embedding's scatter adds into it): all its
    writers add into the sum, in their order. The pass folds in rounds,
    since folds make folds; a running sum written by an add waits for that
    add's fold, so that unrolled microbatches associate their sums as the
    microbatch functions' in-place adds do and train bit for bit alike. A
    tied share's sum + (head + rows) becomes (sum + head) + rows, another
    association of the same float32 additions; with microbatches the head's
    V·h f32 share is no longer written, read nor planned. In a program of
    functions the ranges and action lists are renumbered. Runs before
    `rt-plan-memory`.
  }];
}

def RtReduceGradientsInBf16 : Pass<"rt-reduce-gradients-in-bf16", "ModuleOp"> {
  let summary = "Reduces f32 gradients over the ranks in bf16";
  let description = [{
    `tpc-compile --grad-reduce-dtype bf16`. Every `all_reduce` of an f32
    gradient (its result bound by an `rt.grad`, or the gradient operand of
    an optimizer update, directly or through `add`s) becomes a `cast` to
    bf16, the `all_reduce` in bf16 and a `cast` back to f32: half the bytes
    cross the wire, and each reduced gradient keeps 8 bits of mantissa. A
    run of consecutive `all_reduce`s (`rt-bucket-reductions`) stays one: its
    casts to bf16 go before its first member, the casts back after its last.
    The
    loss sum, the target count and the tensor-parallel activations' reductions
    stay f32. In a program of functions (actions) the casts join their
    reduction's function and the ranges are renumbered.
  }];
}

def RtPlanMemory : Pass<"rt-plan-memory", "ModuleOp"> {
  let summary = "Static, liveness-based memory plan in one arena";
  let description = [{
    Gives every buffer of the module's `rt.program` an `offset` in one
    per-rank arena and records `rt.arena_bytes` and
    `rt.planned_peak_bytes` on the module.

    Lifetimes are in kernel indices (kernel `k` is the `k`-th `rt.kernel`
    of the program, `K` kernels in all): params, inputs and state live for
    the whole program (from before kernel 0 to after kernel `K - 1`); an
    `rt.alloc` from the first kernel that reads or writes it to the last one,
    and to the end of the program when an `rt.output` or `rt.grad` binds it.
    An alloc no kernel uses is live nowhere (offset 0, not counted in the
    peak). In a training step the stash of a microbatch thus lives from its
    forward to its last reader in the backward.

    Params, inputs and state are placed first, in program order, one after
    the other. Allocs are then placed in order of their first kernel (program
    order among equals): before placing the allocs that start at kernel `k`,
    those whose last kernel was `k - 1` are freed. Freed ranges go to an
    address-ordered free list whose neighbours coalesce; a request takes the
    smallest free range that fits (the lowest offset among equals), else
    extends a free range that ends at the top of the arena, else grows the
    arena. Offsets and reserved sizes are multiples of 64 bytes; a buffer of
    zero bytes gets offset 0. Planning is `O(n log n)` in the number of
    buffers.

    One exception to "disjoint while live": the result of a `copy` (a
    reshape: same dtype and bytes), born at that copy, takes the very bytes
    of its operand when the operand (an unpooled `rt.alloc`) dies there,
    and keeps them to its own end (freed then). Both devices skip a copy
    onto its own bytes, so a reshape costs neither time nor a second
    buffer; the check below accepts exactly that sharing, and the runtime's
    lifetimes allow it (`copy` may run on the very bytes of its input).

    And one placement rule beyond them: a run of kernels that the CUDA
    device may run as one (FusionCandidates.h: `linear` + `gelu`,
    `linear_input_grad` + `gelu_grad`, a weight gradient + the `sum_to` of
    its dY, `apply_mask` + `add`, a norm's parameter and input gradients +
    the residual `add`, ...; in one stage and function) writes its later
    results while it still reads what its earlier kernels read, which the
    device requires to lie on none of them (runtime/cuda/FusionPlan.h). The
    buffers that die at a kernel of such a run, but for its last, are
    therefore freed after the run's last kernel, so that its later results
    are not placed on them. Their lifetimes, and the peak, are unchanged;
    the arena may grow by the difference. But a forward norm that ends
    such a run (the residual add with the next `layer_norm` or
    `rms_norm`) writes each row of its result after reading that row's
    operands, and the device allows its result on an operand's very
    bytes: the norm's result takes the bytes of an operand of the run's
    other kernels (an unpooled `rt.alloc` of its size, the branch) that
    dies in the run, as a copy takes its operand's. Likewise a collective
    (`all_gather`, `reduce_scatter`, `all_to_all`, an `all_reduce` that is
    not in place) runs on a stream of its own on the CUDA device until the
    first kernel reading its result waits for it, and a kernel before that
    one writing over its operand's bytes would wait for it too
    (runtime/cuda/HazardTracker.h): the buffers that die at a collective
    are freed just before that reader (in one stage and function), so that
    a gather issued early (`rt-prefetch-gathers`) overlaps the kernels
    before its reader.

    `rt.arena_bytes` is the top of the arena. `rt.planned_peak_bytes` is the
    maximum over kernels `k` of the summed sizes (elements × element bytes,
    without alignment padding) of the buffers live at `k`, i.e. whose
    lifetime contains `k` (a kernel's operands and results are all live at
    it). With no kernels it is the bytes of the params, inputs and state.
    The runtime measures the same quantity from the kernel order.

    **Programs run by actions.** With `stage_actions` (one action list per
    stage, each action `[function, microbatch, slot]` running one of the
    `functions`' kernel ranges) a stage runs its kernels in action order,
    some of them once per microbatch, and a pooled `rt.alloc` has one copy
    per slot of its pool, an action addressing slot `slot mod slots`. The
    pass reads and checks that schedule (ranges that cover every kernel,
    each on one stage; actions of their own stage whose microbatch the
    inputs pooled by microbatch they read hold, each taking a pool slot
    only after the microbatch holding it has run its last action on the
    pool; `pools` entries with `slots`; a pool's buffers on one stage, none
    bound by an output or a gradient) and plans with lifetimes that hold in
    any order:

    - a pool's slot holds its buffers one after another in program order,
      each 64-byte aligned; the pool's `stride` is their total, written into
      its `pools` entry, and its region (`slots` × `stride` bytes) is placed
      once, live over its stage's kernels; a pooled buffer's `offset` is its
      place in the region's first slot;
    - an `rt.alloc` used by kernels of several functions, or bound by an
      output or a gradient, is live over its stage's kernels (runs of other
      functions may come between its uses in any order);
    - every other buffer as above: what one function uses alone is written
      by each run before it is read, so its kernel-order lifetime holds for
      every run.

    The planned peak is then the runtime's (`Program::peakBytes`), over the
    step's kernel runs rather than the kernels: for each stage, its actions'
    kernels in order, each run a time. An instance is a buffer, or one slot
    of a pooled buffer (the action's slot). A run that writes an instance
    the action has not touched yet (and does not also read it) starts a new
    live interval of it; any other use extends the current one. Params,
    state and inputs (every microbatch of an input pooled by microbatch) of
    the stage are live throughout, and an output's or a gradient's last
    interval runs to the end. A stage's peak is the largest sum of the sizes
    of the instances live at one run; `rt.stage_planned_peak_bytes` holds
    each stage's (with stages) and `rt.planned_peak_bytes` the largest.
    Programs without `stage_actions` (including the one-stage `actions`
    form) are planned as described above; a pooled `rt.alloc` needs
    `stage_actions`.

    With `check`, the pass then verifies the plan independently: a sweep
    over the kernels with the live buffers ordered by offset reports any two
    buffers that are live at the same kernel and share an arena byte (but a
    copy's operand and result on the same bytes, as above), and any
    buffer that is misaligned or outside the arena; a pooled buffer is
    checked as one buffer per slot, at `offset + slot * stride`. With
    `check-only` it plans nothing and runs that check on the offsets,
    strides and `rt.arena_bytes` already in the IR (and, when present,
    compares `rt.planned_peak_bytes` and `rt.stage_planned_peak_bytes` with
    the peaks it computes).
  }];
  let options = [
    Option<"check", "check", "bool", /*default=*/"false",
           "Verify that no two buffers live at the same kernel overlap">,
    Option<"checkOnly", "check-only", "bool", /*default=*/"false",
           "Only verify the plan already in the IR; assign nothing">
  ];
}

#endif // DIALECTS_RT_TRANSFORMS_PASSES_TD
