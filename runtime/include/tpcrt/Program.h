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
//===----------------------------------------------------------------------===//

#ifndef TPCRT_PROGRAM_H
#define TPCRT_PROGRAM_H

#include "tpcrt/ExecutableDType.h"
#include "tpcrt/Layout.h"
#include "tpcrt/Status.h"
#include "tpcx_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// A buffer of the executable: where it lies in the arena and what it holds.
struct TensorRef {
  uint32_t buffer = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  fb::DType dtype = fb::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 0;
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
///   attention      batch, heads, kvHeads, seqQ, seqK, headDim, valueDim
///   rotary         outer, seqQ (positions), headDim
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
///   cross_entropy_grad  as cross_entropy
///   sum_squares    each operand's elements
///   all_reduce     count, groupSize
///   all_gather, reduce_scatter, shard_slice, all_to_all
///                  groupSize (the rest from the shapes and intAttrs)
///   send, recv     count (the elements moved), groupSize; the peer is
///                  intAttrs[0]
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

  /// Dropout kernels (dropout, dropout_mask, attention, attention_grad):
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

  /// On a pipeline, the kernels of other stages this one meets (file
  /// indices): a send's recv, a recv's send, the counterparts of a
  /// collective over the "pp" axis. Empty otherwise.
  std::vector<uint32_t> meets;
};

/// The mesh axis whose coordinate is a rank's pipeline stage.
constexpr char kStageAxisName[] = "pp";

/// When a buffer holds a value, in positions of Program::calls (the kernel
/// indices without stages; on a pipeline the positions in its stage's list):
/// from its first write to its last read. Params, state and inputs are live
/// for the whole run, from load (kLoad) to the end (the kernel count): they
/// persist across steps; on a pipeline only those the stage owns.
/// Outputs and grads live from their first write to the end. A buffer no
/// kernel touches has first > last. An in-place update (adamw_update,
/// sgd_update) neither starts nor ends a lifetime: the buffer it rewrites is
/// live already. These are the lifetimes rt-plan-memory plans with, so the
/// measured peak and planned_peak_bytes count the same thing.
struct Lifetime {
  static constexpr int64_t kLoad = -1;
  int64_t first = 0;
  int64_t last = -1;
  bool live() const { return first <= last; }
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
  /// Of the buffers over `calls` (see Lifetime).
  std::vector<Lifetime> lifetimes;
  /// The kernels this rank runs, in file order: every kernel of the file,
  /// or on a pipeline its stage's (placeProgram; stage 0's until then).
  std::vector<KernelCall> calls;
  /// The number of kernels in the file (all stages).
  uint32_t numKernels = 0;
  /// On a pipeline (numStages > 1): every kernel of the file, by index,
  /// decoded; `calls` holds copies of its stage's. Empty without stages.
  std::vector<KernelCall> allCalls;
  /// High-water mark of the bytes of the buffers live at once (see Lifetime),
  /// measured from the kernel order alone, not from the plan's offsets; on a
  /// pipeline, over this rank's stage's kernels.
  uint64_t peakBytes = 0;

  /// The input or output called `name`, or null.
  const BindingRef *findInput(const std::string &name) const;
  const BindingRef *findOutput(const std::string &name) const;

  /// Every kernel of the file, by index (allCalls, or calls without stages).
  const std::vector<KernelCall> &fileCalls() const {
    return allCalls.empty() ? calls : allCalls;
  }
  /// Whether this rank's stage owns `buffer` (always, without stages).
  bool ownsBuffer(uint32_t buffer) const;

  /// The global shape of input `input` (its buffer shape times the sizes of
  /// the axes splitting each dimension).
  std::vector<int64_t> globalShapeOf(const BindingRef &input) const;

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

/// `shape` times the group size of each dimension's axes (splits checked).
std::vector<int64_t> globalShape(const Mesh &mesh,
                                 const std::vector<int64_t> &shape,
                                 const Splits &splits);

/// Decodes and checks the kernels of `exe`, whose framing, tables, buffers,
/// params, bindings and kernel operand ids and stages checkExecutable has
/// already checked (checkExecutable calls this last). Errors name the
/// kernel, e.g. "kernel 1 (linear): weight [8, 16] contracts 8, input [2, 4,
/// 7] has 7". On a pipeline every kernel is decoded, the transfers between
/// stages must pair up and complete (checkTransfers), and each stage's
/// kernels are checked as a program of their own (errors then start with
/// "stage 1: "); `calls` holds stage 0's.
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
/// it: coordinates, the stage and its kernels (calls, their lifetimes, the
/// peaks), the dropout kernels' block offsets and the collectives' group
/// positions. May be called again with another rank.
Status placeProgram(Program &program, int64_t rank);

} // namespace tpcrt

#endif // TPCRT_PROGRAM_H
