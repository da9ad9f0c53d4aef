//===- Program.h - an executable decoded into kernel calls ------*- C++ -*-===//
//
// decodeProgram turns the kernels of an executable into KernelCalls: the
// buffers each kernel touches and the sizes its implementation needs (m, k, n,
// heads, ...), derived from the buffer shapes once, before anything runs. The
// same pass is the loader's per-kernel meaning check (checkExecutable calls
// it), so what the interpreter runs is exactly what was checked: attribute
// counts, dtypes, shapes consistent with each other, no result overlapping an
// operand, no two live buffers sharing arena bytes, no read of a buffer that
// nothing wrote. Whatever a file says, a decoded kernel stays inside its
// buffers.
//
// A pipeline-parallel executable (a mesh axis named "pp") gives each kernel
// a stage; a rank runs its stage's kernels alone, in file order, on an arena
// of its own. decodeProgram checks every stage's kernel list as a program of
// its own (lifetimes, plan, peak) and that the stages' transfers pair up;
// placeProgram keeps the rank's stage's kernels. See
// docs/runtime/executable-format.md.
//
// With stage_actions a stage's step is its action list: each action runs a
// function (a range of its stage's kernels, decoded once) with a microbatch
// and a pool slot; a pooled buffer has one instance per slot. The checks
// then hold over the step's kernel runs (Program::actions), with instances.
// See "Functions, pools and actions" there.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_PROGRAM_H
#define TPCRT_PROGRAM_H

#include "tpcrt/AttentionRows.h"
#include "tpcrt/ExecutableDType.h"
#include "tpcrt/Layout.h"
#include "tpcrt/Status.h"
#include "tpcx_generated.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tpcrt {

/// A buffer of the executable: where it lies in the arena and what it holds.
struct TensorRef {
  uint32_t buffer = 0;
  /// Where it lies; for a pooled buffer, slot 0.
  uint64_t offset = 0;
  uint64_t bytes = 0;
  fb::DType dtype = fb::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  /// A pooled buffer (Buffer.pool): its pool (an index into
  /// Program::pools), the pool's stride and slot count, and whether a run's
  /// microbatch selects the slot (else the action's slot mod poolSlots).
  /// -1: one region.
  int32_t pool = -1;
  uint64_t poolStride = 0;
  uint32_t poolSlots = 1;
  bool byMicrobatch = false;

  /// The slot a kernel run with `microbatch` and `slot` addresses (0 for a
  /// buffer that is not pooled): the microbatch in a by_microbatch pool
  /// (the loader checked it below the slots), else the action's slot mod
  /// the pool's slots; and where that slot lies.
  uint32_t slotOf(uint32_t microbatch, uint32_t slot) const {
    return pool < 0 ? 0 : byMicrobatch ? microbatch : slot % poolSlots;
  }
  uint64_t offsetAt(uint32_t microbatch, uint32_t slot) const {
    return offset + slotOf(microbatch, slot) * poolStride;
  }
};

/// One kernel, decoded. The size fields a kernel uses, per opcode:
///
///   embedding      m ids, k vocab (the table's rows: with a group, block
///                  groupPosition of the vocabulary), n hidden
///   linear         m rows, k, n (flags bit 0: weight out_in); bias optional
///   batch_matmul   batch, m, k, n
///   layer_norm,    rows, cols
///   rms_norm
///   gelu, silu,    count
///   dropout, copy,
///   cast
///   add, mul       count (lhs), rhsCount
///   softmax        outer, seqQ (rows of a [q, k] block), seqK
///   attention,     batch, heads, kvHeads, seqQ, seqK, headDim, valueDim
///   attention_lse  (flags bit 1: sequence-major, attentionSeqMajor())
///   rotary         outer, seqQ (positions), heads (1; sequence-major, flags
///                  bit 1: the heads of a position), headDim
///   cross_entropy  rows (positions), cols (the logits' columns: with a
///                  group, block groupPosition of the vocabulary), k (the
///                  classes: int_attrs[1], else cols)
///   transpose,     the operand's shape (operands[0].shape) and intAttrs
///   slice, repeat,
///   pad, sum_groups
///   embedding_grad m ids, k vocab (the result's rows, as embedding's),
///                  n hidden
///   linear_input_grad, linear_weight_grad   m rows, k, n (flags bit 0)
///   sum_to         count (input), rhsCount (result)
///   *_norm_*_grad  rows, cols
///   gelu_grad,     count
///   silu_grad,
///   dropout_mask,
///   apply_mask,
///   count_targets,
///   adamw_update,
///   sgd_update
///   softmax_grad   outer, seqQ, seqK
///   attention_grad as attention
///   attention_qkv, as attention (kvHeads = heads, valueDim = headDim,
///   attention_qkv_lse,  seqK = seqQ; attentionLayout() PackedQkv)
///   attention_qkv_grad
///   cross_entropy_grad  as cross_entropy
///   sum_squares    each operand's elements
///   all_reduce     count, groupSize
///   all_gather, reduce_scatter, shard_slice, all_to_all
///                  groupSize (the rest from the shapes and intAttrs)
///   send, recv,    count (the elements moved), groupSize; the peer is
///   send_start,    intAttrs[0]
///   recv_start
///   wait           count (the elements of its transfer)
///
/// Attribute values are in intAttrs / floatAttrs / flags, as in the file.
struct KernelCall {
  /// The kernel's index in the file (messages, timings). On a pipeline a
  /// program holds only its stage's kernels: not their position in calls.
  uint32_t index = 0;
  /// The pipeline stage that runs it (Kernel.stage; 0 without stages).
  uint32_t stage = 0;
  fb::OpCode op = fb::OpCode::Copy;
  std::vector<TensorRef> operands;
  std::vector<TensorRef> results;
  std::vector<int64_t> intAttrs;
  std::vector<double> floatAttrs;
  uint32_t flags = 0;

  int64_t count = 0, rhsCount = 0;
  int64_t batch = 0, m = 0, k = 0, n = 0;
  int64_t rows = 0, cols = 0;
  int64_t outer = 0, heads = 0, kvHeads = 0, seqQ = 0, seqK = 0;
  int64_t headDim = 0, valueDim = 0;

  /// attention_qkv(_lse), attention_qkv_grad: q, k and v are the parts of
  /// one [b, s, 3, heads, d] tensor.
  bool attentionPackedQkv() const {
    return op == fb::OpCode::AttentionQkv ||
           op == fb::OpCode::AttentionQkvLse ||
           op == fb::OpCode::AttentionQkvGrad;
  }
  /// Any attention forward (attention, attention_qkv, their _lse forms) or
  /// backward.
  bool attentionForward() const {
    return op == fb::OpCode::Attention || op == fb::OpCode::AttentionQkv ||
           attentionWritesLse();
  }
  bool attentionBackward() const {
    return op == fb::OpCode::AttentionGrad ||
           op == fb::OpCode::AttentionQkvGrad;
  }
  /// cross_entropy(_grad) over one block of a vocabulary split over ranks:
  /// int_attrs [ignore, vocab, axes...]. ([ignore, vocab] is a padded
  /// vocabulary whole on this rank.)
  bool crossEntropyOverBlock() const {
    return (op == fb::OpCode::CrossEntropy ||
            op == fb::OpCode::CrossEntropyGrad) &&
           intAttrs.size() > 2;
  }
  /// attention_lse, attention_qkv_lse: result 1 is each query row's
  /// log-sum-exp, f32 [b, heads, s_q].
  bool attentionWritesLse() const {
    return op == fb::OpCode::AttentionLse || op == fb::OpCode::AttentionQkvLse;
  }
  /// A backward given the forward's result and log-sum-exp (its last two
  /// operands) instead of recomputing them.
  bool attentionReadsLse() const {
    return attentionBackward() &&
           operands.size() == (op == fb::OpCode::AttentionGrad ? 6u : 4u);
  }
  /// attention, attention_grad: flags bit 1, every tensor [b, s, heads, d]
  /// instead of [b, heads, s, d]; the packed forms' result and dO too.
  bool attentionSeqMajor() const { return attentionPackedQkv() || (flags & 2); }
  AttentionLayout attentionLayout() const {
    return attentionPackedQkv()  ? AttentionLayout::PackedQkv
           : attentionSeqMajor() ? AttentionLayout::SeqMajor
                                 : AttentionLayout::HeadMajor;
  }
  /// The attention kernels: the dimensions of the heads and of the query
  /// positions in the (first) result (attention_qkv_grad's [b, s, 3, heads,
  /// d]).
  int attentionHeadsDim() const {
    return op == fb::OpCode::AttentionQkvGrad ? 3 : attentionSeqMajor() ? 2 : 1;
  }
  int attentionQueryDim() const { return attentionSeqMajor() ? 1 : 2; }

  /// Dropout kernels (dropout, dropout_mask, the attention kernels):
  /// how the first result's global tensor is split (empty: not split), that
  /// global shape (the local shape times the split sizes), and where this
  /// rank's block starts in it (placeProgram; zeros when not split).
  Splits splits;
  std::vector<int64_t> globalShape;
  std::vector<int64_t> globalOffset;

  /// Collectives, and embedding(_grad) and cross_entropy(_grad) on a
  /// vocabulary split over mesh axes: the group's mesh axes as an index into
  /// Program::groups (-1 for other kernels), its size, and this rank's
  /// position in it (placeProgram).
  int32_t group = -1;
  int64_t groupSize = 1;
  int64_t groupPosition = 0;

  /// On a pipeline without stage_actions, the kernels of other stages this
  /// one meets (file indices): a send's recv, a recv's send, the
  /// counterparts of a collective over the "pp" axis. Empty otherwise (with
  /// actions a kernel runs many times: Program::runMeets).
  std::vector<uint32_t> meets;

  /// Kernels that draw a dropout stream: N, the elements one microbatch
  /// draws (the first result's global elements; attention's and
  /// attention_grad's, its global probabilities [b, heads, s_q, s_k]). A
  /// run with microbatch i draws from first_index + i * N (INT64_MAX if N
  /// does not fit). 0 for other kernels.
  int64_t streamElements = 0;
  /// Its dropout rate (the float_attr the decoder checked), 0 for a kernel
  /// that drops nothing.
  double dropoutRate = 0.0;
  /// Whether an operand or result is a pooled buffer (its address depends
  /// on the run's action).
  bool pooled = false;
};

/// The mesh axis whose coordinate is a rank's pipeline stage.
constexpr char kStageAxisName[] = "pp";

/// The most buffer instances (a buffer, or a pooled buffer's slot) an
/// executable may have: each has a lifetime the loader computes.
constexpr uint64_t kMaxBufferInstances = uint64_t(1) << 26;

/// When a buffer holds a value, in runs of the step (the kernel indices
/// without stages or actions; on a pipeline the positions in its stage's
/// list; with actions the kernel runs of the stage's action list, one after
/// the other): from its first write to its last read. Params, state and
/// inputs are live for the whole run, from load (kLoad) to the end (the run
/// count): they persist across steps; on a pipeline only those the stage
/// owns. Outputs and grads live from their first write to the end. A buffer
/// no kernel touches has first > last. An in-place update (adamw_update,
/// sgd_update) neither starts nor ends a lifetime: the buffer it rewrites is
/// live already. A pooled buffer has one lifetime per slot (an instance);
/// with actions an instance's lifetime spans its live intervals
/// (LiveInterval), which the plan and the peak are checked with. These are
/// the lifetimes rt-plan-memory plans with, so the measured peak and
/// planned_peak_bytes count the same thing.
struct Lifetime {
  static constexpr int64_t kLoad = -1;
  int64_t first = 0;
  int64_t last = -1;
  bool live() const { return first <= last; }
};

/// One interval during which a buffer instance holds a value (see
/// Lifetime): with actions an instance may be live several times in a step.
/// A function run once per microbatch reuses its temporaries: a buffer that
/// one run writes and reads is dead between runs, and the plan may give its
/// bytes to another of the function's buffers once it is dead within the
/// run. A write by an action that has not yet touched the instance starts a
/// new interval (unless the instance persists: a param, state or input);
/// any other write or read continues the current one, so within one action
/// (and without actions, the whole step being one) an instance has one
/// interval from its first use to its last, as rt-plan-memory plans it. A
/// read in a later action with no write between continues the interval:
/// the value is still needed.
///
/// A temporary of a function (a buffer that it alone touches, not pooled,
/// not a param, state, input, output or grad) is live at the same positions
/// of each of its runs: it has one LiveInterval, with `function` set and
/// `life` in positions of a run (Program::intervalsOf lists them all).
struct LiveInterval {
  static constexpr uint32_t kWholeStep = UINT32_MAX;
  uint32_t instance = 0;
  Lifetime life;
  /// kWholeStep: `life` is in runs of the step; else the function whose
  /// every run has the instance live over `life`, counted from the run's
  /// first kernel.
  uint32_t function = kWholeStep;
};

/// A kernel list that actions run (Executable.functions): the file's
/// kernels [firstKernel, firstKernel + kernelCount), all on `stage`.
struct FunctionRef {
  std::string name;
  uint32_t firstKernel = 0;
  uint32_t kernelCount = 0;
  uint32_t stage = 0;
};

/// Executable.pools: slot s of a pooled buffer lies at its offset + s *
/// stride. An action addresses slot `microbatch` of a by_microbatch pool,
/// slot `slot % slots` of any other (TensorRef::slotOf).
struct PoolRef {
  uint32_t slots = 1;
  uint64_t stride = 0;
  bool byMicrobatch = false;
};

/// One step of a rank: run `function` with `microbatch` and pool slot
/// `slot` (Executable.stage_actions; a pool that is not by_microbatch is
/// addressed at slot mod its slots).
struct ActionRef {
  /// The function of the implicit action of a program without
  /// stage_actions: every kernel of Program::calls, microbatch 0, slot 0.
  static constexpr uint32_t kAllCalls = UINT32_MAX;
  uint32_t function = kAllCalls;
  uint32_t microbatch = 0;
  uint32_t slot = 0;
  /// In Program::actions: the positions in Program::calls it runs, [begin,
  /// end) (placeProgram).
  uint32_t begin = 0, end = 0;
};

/// One run of a kernel in a step: its position in Program::calls and the
/// action running it (an index into Program::actions).
struct KernelRun {
  uint32_t call = 0;
  uint32_t action = 0;
};

/// A parameter: where its Hugging Face tensor goes and how to make one up.
struct ParamRef {
  std::string hfName;
  std::vector<int64_t> hfShape;
  std::vector<int64_t> viewShape;
  uint32_t buffer = 0;
  fb::ParamInit init = fb::ParamInit::Normal;
  double initStd = 0.0;
  /// The global view zero-padded at the end of each dimension: the file's
  /// padded_shape, or viewShape when it has none (same rank, >= per dim).
  std::vector<int64_t> paddedShape;
  /// Per dimension of paddedShape, the mesh axes splitting it; empty: every
  /// rank holds the whole padded view. The buffer holds
  /// blockOf(mesh, coordinates, paddedShape, splits): checked at load.
  Splits splits;
};

/// Optimizer state of a param (zero at start, persistent).
struct StateRef {
  std::string name;
  uint32_t param = 0;
  uint32_t buffer = 0;
};

/// A named input, output or gradient.
struct BindingRef {
  std::string name;
  uint32_t buffer = 0;
  /// Integer inputs lie in [0, valueBound); 0 means no bound.
  int64_t valueBound = 0;
  /// Inputs only: per dimension, the mesh axes splitting the global tensor
  /// (the buffer shape times the split sizes, Program::globalShapeOf);
  /// empty: whole.
  /// Outputs and grads are never split (a grad has its param's layout).
  Splits splits;
};

/// Everything the interpreter and a device need to run an executable.
struct Program {
  /// The executable's mesh (no axes: one rank).
  Mesh mesh;
  /// This rank and its coordinates on the mesh (placeProgram; rank 0 until
  /// then).
  int64_t rank = 0;
  std::vector<int64_t> coordinates;
  /// The distinct axes lists of the collective kernels, in first-use order
  /// (KernelCall::group indexes it): one communicator each. Those of every
  /// stage, so that every rank makes the same communicators.
  std::vector<std::vector<uint32_t>> groups;

  /// Pipeline stages: the index of the mesh axis named "pp" (-1 without one)
  /// and its size (1 without one), and this rank's stage, its coordinate on
  /// that axis (placeProgram; 0 until then).
  int32_t stageAxis = -1;
  int64_t numStages = 1;
  uint32_t stage = 0;
  /// Per buffer, the stages whose kernels read or write it, ascending ({0}
  /// for a buffer no kernel touches): the stages owning it. A param, state,
  /// input, output or grad belongs to the stages owning its buffer; a rank
  /// loads, resets, writes and reads only what its stage owns (another
  /// stage's buffer may share its bytes). Without stages: {0} for every one.
  std::vector<std::vector<uint32_t>> bufferStages;

  uint64_t arenaBytes = 0;
  uint64_t seed = 0;
  /// Executable.hf_config: the Hugging Face config.json of the model as
  /// compiled (compact JSON), what a checkpoint directory's config.json
  /// holds. Empty in executables compiled before it existed.
  std::string hfConfig;
  /// This rank's planned peak: its stage's entry of
  /// stage_planned_peak_bytes where the file has them, else
  /// planned_peak_bytes.
  uint64_t plannedPeakBytes = 0;
  /// Executable.stage_planned_peak_bytes (empty: none).
  std::vector<uint64_t> stagePlannedPeakBytes;
  std::vector<ParamRef> params;
  std::vector<BindingRef> inputs;
  std::vector<BindingRef> outputs;
  std::vector<StateRef> state;
  /// The gradient of each param that has one, named by its hf_name.
  std::vector<BindingRef> grads;
  std::vector<TensorRef> buffers;
  /// Of the buffers over this rank's step (see Lifetime); of a pooled
  /// buffer, from the first write of any of its slots to the last read of
  /// any.
  std::vector<Lifetime> lifetimes;
  /// The buffers' instances: buffer b's first is instanceBase[b] (a pooled
  /// buffer has one per slot, slot s being instanceBase[b] + s, any other
  /// buffer one), numInstances in all; each one's lifetime over the step
  /// (from its first write to its last read; with actions the span of its
  /// live intervals).
  std::vector<uint32_t> instanceBase;
  uint32_t numInstances = 0;
  std::vector<Lifetime> instanceLifetimes;
  /// The instances' live intervals (see LiveInterval), by instance, then in
  /// time order; an instance's lifetime above spans its intervals. Without
  /// actions one per live instance, its lifetime. A function's temporary has
  /// one for all the runs of its function (so that their number does not
  /// grow with the microbatches): intervalsOf lists them.
  std::vector<LiveInterval> instanceIntervals;
  /// The kernels this rank runs, in file order: every kernel of the file,
  /// or on a pipeline its stage's (placeProgram; stage 0's until then).
  std::vector<KernelCall> calls;
  /// Executable.functions, pools and stage_actions (per stage; empty
  /// without actions).
  std::vector<FunctionRef> functions;
  std::vector<PoolRef> pools;
  std::vector<std::vector<ActionRef>> stageActions;
  /// What this rank runs each step, in order: its stage's actions, each
  /// with its positions in `calls`; without stage_actions one action
  /// (function kAllCalls, microbatch 0, slot 0) running every call.
  std::vector<ActionRef> actions;
  /// The kernel runs of a step on this rank (the sum over `actions`).
  uint64_t numRuns = 0;
  /// On a pipeline, the runs of other stages each run meets: a send's
  /// recv, a collective's counterparts over "pp"; and on its own stage a
  /// started transfer's wait, a wait's start. A run is (stage, run index in
  /// that stage's step); sorted by run (stage, then index), a run's
  /// meetings in the order found (meetsOf).
  struct RunMeet {
    uint32_t stage = 0;
    uint64_t run = 0;
    uint32_t otherStage = 0;
    uint64_t otherRun = 0;
  };
  std::vector<RunMeet> runMeets;
  /// The number of kernels in the file (all stages).
  uint32_t numKernels = 0;
  /// On a pipeline (numStages > 1): every kernel of the file, by index,
  /// decoded; `calls` holds copies of its stage's. Empty without stages.
  std::vector<KernelCall> allCalls;
  /// High-water mark of the bytes of the buffers live at once (see Lifetime),
  /// measured from the kernel order alone, not from the plan's offsets; on a
  /// pipeline, over this rank's stage's kernels; with actions over the
  /// step's kernel runs, each instance (a buffer, a pooled buffer's slot)
  /// counted while one of its intervals is live.
  uint64_t peakBytes = 0;

  /// Whether the stages run action lists (Executable.stage_actions).
  bool hasActions() const { return !stageActions.empty(); }

  /// The live intervals of `instance` in runs of the step, in time order: a
  /// temporary's once per run of its function (Lifetimes.cpp).
  std::vector<Lifetime> intervalsOf(uint32_t instance) const;

  /// The input or output called `name`, or null.
  const BindingRef *findInput(const std::string &name) const;
  const BindingRef *findOutput(const std::string &name) const;

  /// Every kernel of the file, by index (allCalls, or calls without stages).
  const std::vector<KernelCall> &fileCalls() const {
    return allCalls.empty() ? calls : allCalls;
  }
  /// Whether this rank's stage owns `buffer` (always, without stages).
  bool ownsBuffer(uint32_t buffer) const;

  /// The global shape of input `input`: its buffer shape times the sizes of
  /// the axes splitting each dimension, and, for an input in a
  /// by_microbatch pool, dimension 0 times its slots (the batch is the
  /// microbatches one after another).
  std::vector<int64_t> globalShapeOf(const BindingRef &input) const;
  /// The global shape of one microbatch of `input` (globalShapeOf without
  /// the slots) and the number of microbatches its buffer holds (a
  /// by_microbatch pool's slots, else 1): slot i holds this rank's block of
  /// rows [i * rows, (i + 1) * rows) of the global tensor's dimension 0,
  /// rows being the microbatch's.
  std::vector<int64_t> microbatchShapeOf(const BindingRef &input) const;
  uint32_t microbatchesOf(const BindingRef &input) const;

  /// The kernels (positions in `calls`, in order) that compute `buffer` as
  /// of the end of the kernel list: the last kernel writing it and,
  /// transitively, the writers of what those read, each read seeing the
  /// latest earlier write. Params, state and inputs are taken as loaded. For
  /// a training executable and its loss, this is the forward pass alone. On
  /// a pipeline this rank's stage's share of them, across the stages: `buffer`
  /// on whichever stages write it, and a needed recv needs its send (and what
  /// that reads) on the sending stage, a needed collective over the "pp" axis
  /// its counterparts, so that every stage runs what the others wait for.
  std::vector<uint32_t> kernelsComputing(uint32_t buffer) const;
  /// The same as kernel runs of this rank's step, in order: with actions a
  /// kernel may run for several microbatches (kernelsComputing then lists
  /// its position once per run).
  std::vector<KernelRun> runsComputing(uint32_t buffer) const;
  /// The runs of `stage`'s step, in order: the kernels' indices in the file
  /// and the index of the action (of that stage's list; 0 without actions).
  std::vector<std::pair<uint32_t, uint32_t>> stageRuns(uint32_t stage) const;
  /// The action of stage `stage` numbered `action` (stageRuns' second).
  ActionRef stageAction(uint32_t stage, uint32_t action) const;
  /// The entries of runMeets for run `run` of stage `stage`: [first, last).
  std::pair<const RunMeet *, const RunMeet *> meetsOf(uint32_t stage,
                                                      uint64_t run) const;
};

/// Inputs the runtime fills itself rather than reading from a batch:
/// "step" (the 1-based optimizer step, an i64 scalar).
bool isRuntimeInput(const std::string &name);

/// The executable's mesh (checked by the loader: named, distinct, sizes >= 1).
Mesh meshOf(const fb::Executable &exe);

/// The index of the mesh axis named "pp" (kStageAxisName), or -1.
int32_t stageAxisOf(const Mesh &mesh);

/// A DimSplit list as axes per dimension (empty list: not split).
Splits
splitsOf(const flatbuffers::Vector<flatbuffers::Offset<fb::DimSplit>> *list);

/// An error unless `splits` is empty or names `rank` dimensions whose axes
/// are mesh axes, none used twice within the tensor.
Status checkSplits(const Mesh &mesh, const Splits &splits, size_t rank);

/// `shape` times the group size of each dimension's axes (splits checked,
/// and the result checked by checkGlobalShape).
std::vector<int64_t> globalShape(const Mesh &mesh,
                                 const std::vector<int64_t> &shape,
                                 const Splits &splits);

/// An error unless the global shape of a tensor whose rank holds `shape`
/// (non-negative; `splits` checked) fits int64, dimension by dimension and
/// in elements: globalShape(mesh, shape, splits) with dimension 0 further
/// multiplied by `microbatches` (a by_microbatch input's slots). The loader
/// refuses what does not fit, so that globalShape and Program::globalShapeOf
/// never overflow on a loaded program.
Status checkGlobalShape(const Mesh &mesh, const std::vector<int64_t> &shape,
                        const Splits &splits, uint32_t microbatches = 1);

/// Pool `index` of an executable: at least one slot, a stride that is a
/// multiple of 64 (the loader's check and the decoder's, one rule).
Status checkPool(const fb::Pool &pool, uint32_t index);

/// Decodes and checks the kernels of `exe`, whose framing, tables, buffers,
/// pools, params, bindings and kernel operand ids and stages checkExecutable
/// has already checked (checkExecutable calls this last). Errors name the
/// kernel, e.g. "kernel 1 (linear): weight [8, 16] contracts 8, input [2, 4,
/// 7] has 7". On a pipeline every kernel is decoded, the transfers between
/// stages must pair up and complete (checkTransfers), and each stage's
/// kernels are checked as a program of their own (errors then start with
/// "stage 1: "); `calls` holds stage 0's. Functions and actions are read and
/// checked first; with them each stage's checks run over its action list.
Status decodeProgram(const fb::Executable &exe, Program &out);

/// The per-kernel part of decodeProgram, for one kernel alone: checks the
/// attributes, dtypes and shapes of `call` (op, operands' and results' dtype
/// and shape, attributes, splits) as its Kernels.def row's decoder does, on
/// `mesh` (a collective's axes index it), and fills in its sizes. Offsets,
/// buffers and aliasing are not looked at. With `axes`, a collective's (or
/// a vocabulary-split kernel's) group axes go there. The compiler's
/// rt.kernel verifier runs it, so that it accepts exactly the kernels the
/// loader does.
Status decodeKernel(KernelCall &call, const Mesh &mesh,
                    std::vector<uint32_t> *axes = nullptr);

/// Sets the program's rank (in [0, mesh.worldSize())) and what depends on
/// it: coordinates, the stage and its kernels (calls, its actions, their
/// lifetimes, the peaks), the dropout kernels' block offsets and the
/// collectives' group positions. May be called again with another rank.
Status placeProgram(Program &program, int64_t rank);

} // namespace tpcrt

#endif // TPCRT_PROGRAM_H
