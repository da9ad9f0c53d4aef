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
// buffers. See docs/runtime/executable-format.md.
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
///
/// Attribute values are in intAttrs / floatAttrs / flags, as in the file.
struct KernelCall {
  uint32_t index = 0;
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
};

/// When a buffer holds a value, in kernel indices: from its first write to
/// its last read. Params, state and inputs are live for the whole run, from
/// load (kLoad) to the end (the kernel count): they persist across steps.
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
  /// (KernelCall::group indexes it): one communicator each.
  std::vector<std::vector<uint32_t>> groups;

  uint64_t arenaBytes = 0;
  uint64_t seed = 0;
  uint64_t plannedPeakBytes = 0;
  std::vector<ParamRef> params;
  std::vector<BindingRef> inputs;
  std::vector<BindingRef> outputs;
  std::vector<StateRef> state;
  /// The gradient of each param that has one, named by its hf_name.
  std::vector<BindingRef> grads;
  std::vector<TensorRef> buffers;
  std::vector<Lifetime> lifetimes;
  std::vector<KernelCall> calls;
  /// High-water mark of the bytes of the buffers live at once (see Lifetime),
  /// measured from the kernel order alone, not from the plan's offsets.
  uint64_t peakBytes = 0;

  /// The input or output called `name`, or null.
  const BindingRef *findInput(const std::string &name) const;
  const BindingRef *findOutput(const std::string &name) const;

  /// The global shape of input `input` (its buffer shape times the sizes of
  /// the axes splitting each dimension).
  std::vector<int64_t> globalShapeOf(const BindingRef &input) const;

  /// The kernels (indices, in order) that compute `buffer` as of the end of
  /// the kernel list: the last kernel writing it and, transitively, the
  /// writers of what those read, each read seeing the latest earlier write.
  /// Params, state and inputs are taken as loaded. For a training
  /// executable and its loss, this is the forward pass alone.
  std::vector<uint32_t> kernelsComputing(uint32_t buffer) const;
};

/// Inputs the runtime fills itself rather than reading from a batch:
/// "step" (the 1-based optimizer step, an i64 scalar).
bool isRuntimeInput(const std::string &name);

/// The executable's mesh (checked by the loader: named, distinct, sizes >= 1).
Mesh meshOf(const fb::Executable &exe);

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
/// params, bindings and kernel operand ids checkExecutable has already
/// checked (checkExecutable calls this last). Errors name the kernel, e.g.
/// "kernel 1 (linear): weight [8, 16] contracts 8, input [2, 4, 7] has 7".
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
/// it: coordinates, the dropout kernels' block offsets and the collectives'
/// group positions.
Status placeProgram(Program &program, int64_t rank);

} // namespace tpcrt

#endif // TPCRT_PROGRAM_H
