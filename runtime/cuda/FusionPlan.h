//===- FusionPlan.h - kernel pairs the CUDA device runs as one -*- C++ -*-===//
//
// Two kinds of pairs. Dropout + residual add: the forward and the backward
// of a GPT-2 or Llama training step apply a
// dropout mask and add the residual at once: `apply_mask(x, m) -> (y)`
// followed by `add(y, r) -> (z)` (or `add(r, y)`). When nothing else reads
// y, the CUDA device runs the pair as one kernel (FusedKernels.cu) that
// reads x, m and r and writes z, never writing y nor reading it back. The
// executable is unchanged: this is the device's plan, made at prepare from
// the decoded program. The fused result equals the pair's bit for bit (y is
// rounded to its own storage before the add).
//
// A pair is fused when every run of the apply_mask is followed at once by
// its add, and y is the add's own business: the add is the next kernel of
// the rank's list (with actions, of the same function: both then run in
// every action that runs one, with the same microbatch and slot); y is
// written by the apply_mask alone and read by that add alone (once, over
// every kernel of the file); y is no binding (input, output, gradient),
// param or state, and not pooled; the add does not broadcast (rhsCount ==
// count == the apply_mask's count); and z shares no bytes with x or the
// mask, unless it is the very bytes of x (each element read before it is
// written, as the unfused add does in place).
//
// Bias + GeLU: GPT-2's MLP runs `linear(x, w[, b]) -> (h)` and at once
// `gelu(h) -> (g)` (tanh form). The CUDA device runs the pair as one
// cuBLASLt matmul whose epilogue adds the bias, writes h (the GeLU's input,
// which the backward reads: the "aux" output) and g = gelu(h) (Gemm.cpp).
// A pair is fused when the gelu is the next kernel (with actions, of the
// same function), reads the linear's result whole and is the tanh form,
// g has h's storage type, and g shares no bytes with x, w, the bias or h,
// unless g is the very bytes of h (h then dies at the gelu: the epilogue
// writes g alone). cuBLASLt computes g from the fp32 sum before h is
// rounded to its storage: with 16-bit storage g may differ from the pair's
// by an ulp of g's storage (and in fp32 by cuBLASLt's own tanh). The GEMM
// engine can still refuse the fused plan at prepare (no algorithm, a
// leading dimension not a multiple of 8, staging); the pair then runs
// unfused.
//
// Input gradient + GeLU gradient: GPT-2's MLP backward runs
// `linear_input_grad(dY, w) -> (dH)` and at once `gelu_grad(dH, x) -> (dA)`
// (tanh form; x the GeLU's input). The CUDA device runs the pair as one
// cuBLASLt matmul whose epilogue multiplies the product by the GeLU's
// derivative at x (DGELU, x the aux matrix) and writes dA: dH is never
// written nor read back. A pair is fused when the gelu_grad is the next
// kernel (with actions, of the same function), reads dH whole, dH is read
// by nothing else (no binding, not pooled), x, dA and dH have one storage
// type, and dA shares no bytes with dY, w or x (but for the very bytes of
// x: each element of x is read by the thread that writes it). The product
// is multiplied before it is rounded to dH's storage: with 16-bit storage
// dA may differ from the pair's by an ulp. The GEMM engine can refuse it
// (a staged output, D's leading dimension not a multiple of 8, no
// algorithm); the pair then runs unfused.
//
// Weight gradient + bias gradient: a linear's backward runs
// `linear_weight_grad(x, dY) -> (dW)` and at once `sum_to(dY) -> (db)` (the
// bias gradient, dY summed over its tokens). The CUDA device runs the pair
// as one cuBLASLt matmul whose epilogue also writes db (BGRADA or BGRADB,
// whichever side of the column-major product dY is on: Gemm.cpp), so that
// dY is read once. A pair is fused when the sum_to is the next kernel (with
// actions, of the same function), reads the weight gradient's dY whole and
// sums it over its tokens; where db shares bytes with x, dY or dW (the
// memory plan may give it the bytes of x, which dies at the weight
// gradient) the epilogue writes it to scratch and a copy follows. cuBLASLt sums
// in fp32 in its own order: db may differ from the sum_to's by fp32 rounding.
// The GEMM engine can refuse it at prepare (db not of dW's type, no algorithm);
// the pair then runs unfused.
//
// Product + add: Llama's backward adds the input gradients of the q, k
// and v projections (and of gate and up) with `linear_input_grad(dY, w) ->
// (dX)` and at once `add(s, dX) -> (z)`; its forward adds the attention's
// and the MLP's output projections to the residual stream with `linear(x,
// w) -> (y)` and `add(r, y) -> (z)`. The CUDA device runs such a pair as
// one cuBLASLt matmul that adds the other operand as C (beta = 1) and
// writes z as D: the product is never written nor read back. A pair is
// fused when the add is the next kernel (with actions, of the same
// function), adds the product whole to a tensor of its size (no
// broadcast), the product is read by nothing else (no binding, not
// pooled), the linear has no bias (cuBLASLt's epilogue would add it after
// C), the three tensors have one storage type, and z shares no bytes with
// the product's operands, nor with the addend but for its very bytes (C is
// D: each element read before it is written). In fp32 z is the pair's bit
// for bit (the product's fp32 sum plus C, rounded once); with 16-bit
// storage the product is not rounded before the add: z may differ by an
// ulp. The GEMM engine can refuse it (a staged output, no algorithm); the
// pair then runs unfused.
//
// Norm backward: a layer's backward runs `layer_norm_param_grad(dY, x) ->
// (dW, dB)` and at once `layer_norm_input_grad(dY, x, w) -> (dX)` (or the
// rms_norm pair), and often then `add(r, dX) -> (z)` (the residual
// stream's gradient). The CUDA device runs them as one kernel
// (NormLossKernels.cuh) that reads dY and x once: each block takes a chunk
// of rows, writes their dX (or z = r + dX, dX never written) and keeps
// the chunk's parameter sums in shared memory; a small kernel adds the
// chunks. The two gradients are fused when the input gradient is the next
// kernel (with actions, of the same function), reads the same dY and x,
// has the same rows, columns and epsilon, the rows have at most
// kNormBackwardMostColumns columns (the block's sums in shared memory),
// every tensor is float, the parameter gradients share no bytes with any
// other tensor of the two, and dX none with its operands. The add joins
// them when it is the next kernel after (same function), adds dX (read by
// it alone, once, written once, no binding, not pooled) to a tensor of its
// size, and z shares no bytes with the others but for the very bytes of
// dY, x or r (each element is read by the thread that writes it, after the
// row's statistics). dX is rounded to its storage before the add, and the
// rows are cut into the unfused parameter gradient's chunks
// (paramGradChunks): dX, z and the parameter gradients are the unfused
// kernels' bit for bit. Where no parameter gradient comes right before the
// input gradient (one refused: more than 8192 columns, another epsilon; or
// a program whose W computes it later), the input gradient and its add
// alone are fused the same way (the kernel without the parameter sums): z
// is the pair's bit for bit. The branch's dropout of the group's result
// right after it (`apply_mask(z, m) -> (d)`: a residual branch's gradient,
// or after a norm without add its input gradient's) joins the group where
// it masks the result whole, in the same function, and d shares no bytes
// with the tensors the kernel reads (but the very bytes of dY, x or r),
// the mask, the weight or the group's results: the kernel writes z (read
// again) and d = round_d(round_z(z) * mask * scale), the apply_mask's
// values bit for bit.
//
// Loss + its gradient: the end of a training step's forward is
// `cross_entropy(logits, labels) -> (loss sum, count)` and the backward's
// first kernel `cross_entropy_grad(logits, labels, scale) -> (dLogits)`.
// The CUDA device runs them as one pass over the logits' rows
// (NormLossKernels.cuh's crossEntropyGradKernel with the rows' losses),
// each row's max and sum of exponentials computed once: the logits are
// read three times instead of five. Fused when the gradient is the next
// kernel (with actions, of the same function), of the same logits, labels,
// rows, columns, ignore index and vocabulary, over whole rows (padded or not;
// a split vocabulary runs in the device's phases), and its scale is not the
// loss's result.
// The loss's results are written last (their total needs every row's
// loss): one that the memory plan put on the gradient's bytes (the loss's
// count often dies unread at once) is not written; one that is read and
// meets them refuses the pair. The values are the unfused kernels' bit for
// bit.
//
// Bias + dropout + residual add: with tp > 1 GPT-2 adds each row-parallel
// output's bias after the reduction (Megatron's order), then the branch's
// dropout and the residual: `add(x, b) -> (y)`, `apply_mask(y, m) -> (d)`,
// `add(d, r) -> (z)` (or `add(r, d)`); without dropout `add(x, b) -> (y)`
// and `add(y, r) -> (z)` (or `add(r, y)`). The CUDA device runs them as one
// kernel (FusedKernels.cu, Megatron's bias_dropout_add) that reads x, b, m
// and r and writes z: y and d are neither written nor read back. Fused when
// the next kernels are those (with actions, of the same function), y is
// read by the next alone (once, written once, no binding, not pooled), b
// tiles x (its size or a suffix of its shape), the tensors are float, the
// mask and its add obey the dropout + add pair's rules (or the last add
// does not broadcast and z meets r only in its very bytes), and z shares
// no bytes with x but for its very bytes, nor with b. y and d are rounded
// to their storage as the unfused kernels store them: z is theirs bit for
// bit. Where the group is refused, the mask and its add may still be a
// pair.
//
// Residual add + norm: the forward's residual stream goes from each
// branch's add straight into the next norm (`add(r, d) -> (z)`, then
// `layer_norm(z, w, b) -> (y)` or `rms_norm(z, w)`), which reads z back.
// A norm of the add's result right after any of the groups above that ends
// in the add (dropout + add, bias + dropout + add, bias + add), or after an
// add alone (no dropout, the product's bias in the way of the product +
// add pair), joins it: the CUDA device then runs one row kernel
// (NormLossKernels.cuh's normOfSourceKernel) that computes each element's
// z, stores it (the residual stream is read again), sums it into the row's
// statistics as the norm sums the stored z, and normalizes the row: z is
// never read back from memory but by the thread that stored it. Joined
// where the norm is the next kernel (same function), reads z whole, every
// tensor is float, y shares no bytes with z, the norm's weight or bias, nor
// with the group's operands but for their very bytes, and z none with the
// weight or bias; an add alone must add two tensors of its size and meet
// them only in their very bytes. z and y are the unfused kernels' bit for
// bit.
//
// Plain C++ (runtime/test/FusionPlanTest.cpp checks the plan without a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_FUSIONPLAN_H
#define TPCRT_CUDA_FUSIONPLAN_H

#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt::cuda {

/// A kernel's part in a fused pair.
enum class FusionRole : uint8_t {
  None,
  /// The apply_mask (or linear, or linear_weight_grad): runs nothing; its
  /// partner runs both.
  Head,
  /// The add (or gelu, or sum_to): runs the fused kernel with its head's
  /// addresses.
  Tail,
  /// A member between a head and its tail (a norm backward's input
  /// gradient, when the add joins it): deferred like the head.
  Link,
};

/// The most columns of a fused norm backward: its blocks keep two double
/// sums per column in shared memory (128 KiB at 8192).
constexpr int64_t kNormBackwardMostColumns = 8192;

struct FusionStep {
  FusionRole role = FusionRole::None;
  /// The other kernel of the pair (its index in the file); for a tail or
  /// link, the member before it.
  uint32_t partner = 0;
  /// A linear + gelu pair whose epilogue writes the linear's result too
  /// (false: g is the very bytes of h, and only g is written).
  bool writesHead = false;
  /// A weight gradient + sum_to pair whose sum shares bytes with x, dY or
  /// dW (the memory plan gave it the bytes of x, which dies at the weight
  /// gradient): the epilogue writes the sum to scratch, copied after.
  bool stagesSum = false;
  /// A loss + gradient pair: bit j set where the loss's result j is read by
  /// no kernel and bound to nothing, and the memory plan gave its bytes to
  /// the gradient's result (the loss's results are written last when
  /// fused): it is not written.
  uint8_t unwrittenHeadResults = 0;
};

namespace fusion {

/// Bytes [begin, end) of the arena a buffer's instances cover (a pooled
/// buffer's slots one after the other).
struct Span {
  uint64_t begin = 0, end = 0;
};

inline Span spanOf(const TensorRef &t) {
  uint64_t slots = t.pool >= 0 && t.poolSlots > 0 ? t.poolSlots - 1 : 0;
  return {t.offset, t.offset + slots * t.poolStride + t.bytes};
}

/// Whether `a` and `b` may share bytes in one run of a kernel or fused
/// group (one function of one action). Two buffers of one pool lie in the
/// same slot there (the slot is the pool's choice from the action), so
/// slot 0's bytes tell; buffers of two pools may lie in any of their slots.
inline bool spansMeet(const TensorRef &a, const TensorRef &b) {
  bool onePool = a.pool >= 0 && a.pool == b.pool;
  Span x = onePool ? Span{a.offset, a.offset + a.bytes} : spanOf(a);
  Span y = onePool ? Span{b.offset, b.offset + b.bytes} : spanOf(b);
  return x.begin < y.end && y.begin < x.end && x.begin < x.end &&
         y.begin < y.end;
}

/// Element i of `a` lies exactly where element i of `b` does, in every
/// run (same offset, bytes, element size and pool).
inline bool sameBytes(const TensorRef &a, const TensorRef &b) {
  return a.offset == b.offset && a.bytes == b.bytes && a.pool == b.pool &&
         executableDTypeSize(a.dtype) == executableDTypeSize(b.dtype);
}

inline bool isFloat(fb::DType dtype) {
  return dtype == fb::DType::F32 || dtype == fb::DType::BF16 ||
         dtype == fb::DType::F16;
}

/// Whether kernel b runs right after kernel a in every run: with actions,
/// both in one function.
inline bool inOneFunction(const Program &program, const KernelCall &a,
                          const KernelCall &b) {
  if (!program.hasActions())
    return true;
  for (const FunctionRef &f : program.functions)
    if (f.stage == a.stage && f.firstKernel <= a.index &&
        a.index - f.firstKernel < f.kernelCount)
      return b.index > a.index && b.index - f.firstKernel < f.kernelCount;
  return false;
}

/// Why calls[p] (an apply_mask) and calls[p + 1] are not fused, or null.
/// `reads` and `writes` count each buffer's uses over the file's kernels;
/// `hostBound` marks bindings, params and state.
inline const char *refusal(const Program &program, size_t p,
                           const std::vector<uint32_t> &reads,
                           const std::vector<uint32_t> &writes,
                           const std::vector<bool> &hostBound) {
  const KernelCall &a = program.calls[p];
  if (p + 1 >= program.calls.size())
    return "no kernel follows it";
  const KernelCall &b = program.calls[p + 1];
  if (b.op != fb::OpCode::Add)
    return "the next kernel is not an add";
  if (a.operands.size() != 2 || a.results.size() != 1 ||
      b.operands.size() != 2 || b.results.size() != 1 || a.floatAttrs.empty())
    return "unexpected operands";
  if (!inOneFunction(program, a, b))
    return "the add is in another function";
  const TensorRef &y = a.results[0];
  if (y.buffer >= reads.size())
    return "unexpected operands";
  if (y.pool >= 0)
    return "its result is pooled";
  if (hostBound[y.buffer])
    return "its result is a binding, param or state";
  if (writes[y.buffer] != 1)
    return "its result is written by another kernel";
  int masked = b.operands[0].buffer == y.buffer   ? 0
               : b.operands[1].buffer == y.buffer ? 1
                                                  : -1;
  if (masked < 0)
    return "the add does not read its result";
  if (reads[y.buffer] != 1)
    return "its result is read by another kernel, or twice";
  if (b.rhsCount != b.count)
    return "the add broadcasts";
  if (b.count != a.count || y.elements != a.count)
    return "the element counts differ";
  const TensorRef &z = b.results[0];
  if (!isFloat(y.dtype) || !isFloat(z.dtype) ||
      !isFloat(b.operands[1 - masked].dtype) || !isFloat(a.operands[0].dtype) ||
      a.operands[1].dtype != fb::DType::U8)
    return "unexpected dtypes";
  // The fused kernel writes z while other threads still read x and the
  // mask: only the very bytes of x may be written.
  const TensorRef &x = a.operands[0], &mask = a.operands[1];
  if (spansMeet(z, x) && !sameBytes(z, x))
    return "the add's result overlaps the masked input";
  if (spansMeet(z, mask))
    return "the add's result overlaps the mask";
  return nullptr;
}

/// Whether the kernel after calls[p] is a `tail` of `operands` operands and
/// one result whose first operand is buffer `buffer` (a tensor of calls[p]).
inline bool nextReads(const Program &program, size_t p, fb::OpCode tail,
                      size_t operands, uint32_t buffer) {
  if (p + 1 >= program.calls.size())
    return false;
  const KernelCall &b = program.calls[p + 1];
  return b.op == tail && b.operands.size() == operands &&
         b.results.size() == 1 && b.operands[0].buffer == buffer;
}

/// Whether `t` shares bytes with an operand of `call`.
inline bool meetsAnOperand(const TensorRef &t, const KernelCall &call) {
  for (const TensorRef &operand : call.operands)
    if (spansMeet(t, operand))
      return true;
  return false;
}

/// Whether `t` is handed from one kernel to the next alone: written once,
/// read once over the file's kernels, no binding, param or state, not
/// pooled (a fused group never writes it). `reads`, `writes` and
/// `hostBound` as for refusal().
inline bool handedOnOnly(const TensorRef &t, const std::vector<uint32_t> &reads,
                         const std::vector<uint32_t> &writes,
                         const std::vector<bool> &hostBound) {
  return t.buffer < reads.size() && reads[t.buffer] == 1 &&
         writes[t.buffer] == 1 && !hostBound[t.buffer] && t.pool < 0;
}

/// Whether calls[p] is a silu followed by a mul of its result and another
/// tensor (SwiGLU's forward, up * silu(gate)), or a mul followed by a
/// silu_grad whose output gradient is its result (SwiGLU's backward: the
/// silu's output gradient, then the gate's): the pairs swigluRefusal
/// decides on.
inline bool isSwigluCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  if (a.results.size() != 1 || p + 1 >= program.calls.size())
    return false;
  const KernelCall &b = program.calls[p + 1];
  uint32_t r = a.results[0].buffer;
  if (a.op == fb::OpCode::Silu)
    return a.operands.size() == 1 && b.op == fb::OpCode::Mul &&
           b.operands.size() == 2 && b.results.size() == 1 &&
           (b.operands[0].buffer == r) != (b.operands[1].buffer == r);
  return a.op == fb::OpCode::Mul && a.operands.size() == 2 &&
         nextReads(program, p, fb::OpCode::SiluGrad, 2, r);
}

/// Why the candidate calls[p] and calls[p + 1] (isSwigluCandidate) are not
/// fused, or null. The fused kernel computes each element of the first
/// kernel's result and of the second's from that element of the operands
/// alone, reading them all before it writes: a result may lie on an
/// operand's very bytes, not partly. `writesHead` says whether the first
/// kernel's result is written (another kernel reads it, or it is bound or
/// pooled: the forward's silu output, which the backward reads); else the
/// second kernel's alone is. `reads`, `writes` and `hostBound` as for
/// refusal().
inline const char *swigluRefusal(const Program &program, size_t p,
                                 const std::vector<uint32_t> &reads,
                                 const std::vector<uint32_t> &writes,
                                 const std::vector<bool> &hostBound,
                                 bool &writesHead) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the second kernel is in another function";
  const TensorRef &h = a.results[0], &out = b.results[0];
  size_t in = b.operands[0].buffer == h.buffer ? 0 : 1;
  if (!sameBytes(b.operands[in], h) || b.operands[in].dtype != h.dtype)
    return "the second kernel does not read the first one's result whole";
  std::vector<const TensorRef *> operands;
  for (const TensorRef &t : a.operands)
    operands.push_back(&t);
  operands.push_back(&b.operands[1 - in]);
  if (a.count != h.elements || b.count != h.elements ||
      out.elements != h.elements ||
      (a.op == fb::OpCode::Mul && a.rhsCount != a.count) ||
      (b.op == fb::OpCode::Mul && b.rhsCount != b.count))
    return "the element counts differ (a mul broadcasts)";
  for (const TensorRef *t : operands)
    if (t->elements != h.elements)
      return "the element counts differ (a mul broadcasts)";
  for (const TensorRef *t : operands)
    if (!isFloat(t->dtype))
      return "a tensor is not float";
  if (!isFloat(h.dtype) || !isFloat(out.dtype))
    return "a tensor is not float";
  writesHead = !handedOnOnly(h, reads, writes, hostBound);
  for (const TensorRef *t : operands) {
    if (spansMeet(out, *t) && !sameBytes(out, *t))
      return "the second kernel's result overlaps an operand";
    if (writesHead && spansMeet(h, *t) && !sameBytes(h, *t))
      return "the first kernel's result overlaps an operand";
  }
  if (writesHead && spansMeet(out, h))
    return "the two results overlap";
  return nullptr;
}

/// Whether calls[p] (a linear) is followed by a gelu of its whole result:
/// the pairs linearGeluRefusal decides on.
inline bool isLinearGeluCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  return a.op == fb::OpCode::Linear && a.results.size() == 1 &&
         nextReads(program, p, fb::OpCode::Gelu, 1, a.results[0].buffer);
}

/// Why the candidate calls[p] (a linear) and calls[p + 1] (its gelu) are
/// not fused, or null; `writesHead` says whether the epilogue must write h.
inline const char *linearGeluRefusal(const Program &program, size_t p,
                                     bool &writesHead) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the gelu is in another function";
  if (!(b.flags & 1))
    return "the gelu is the erf form (cuBLASLt's epilogue is the tanh form)";
  const TensorRef &h = a.results[0], &g = b.results[0], &in = b.operands[0];
  if (in.offset != h.offset || in.elements != h.elements ||
      in.dtype != h.dtype || b.count != h.elements)
    return "the gelu does not read the linear's whole result";
  if (g.dtype != h.dtype)
    return "the gelu's result has another storage type";
  if (meetsAnOperand(g, a))
    return "the gelu's result overlaps an operand of the linear";
  writesHead = !sameBytes(g, h);
  if (writesHead && spansMeet(g, h))
    return "the gelu's result overlaps its input";
  return nullptr;
}

/// Whether calls[p] (a linear_input_grad) is followed by a gelu_grad of
/// its result: the pairs inputGradGeluRefusal decides on.
inline bool isInputGradGeluCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  return a.op == fb::OpCode::LinearInputGrad && a.results.size() == 1 &&
         nextReads(program, p, fb::OpCode::GeluGrad, 2, a.results[0].buffer);
}

/// Why the candidate calls[p] (a linear_input_grad) and calls[p + 1] (the
/// gelu_grad of its result dH) are not fused, or null. The fused matmul
/// never writes dH, so nothing else may read it. `reads`, `writes` and
/// `hostBound` as for refusal().
inline const char *inputGradGeluRefusal(const Program &program, size_t p,
                                        const std::vector<uint32_t> &reads,
                                        const std::vector<uint32_t> &writes,
                                        const std::vector<bool> &hostBound) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the gelu_grad is in another function";
  if (!(b.flags & 1))
    return "the gelu_grad is the erf form (cuBLASLt's epilogue is the tanh "
           "form)";
  const TensorRef &dH = a.results[0], &in = b.operands[0], &x = b.operands[1],
                  &dA = b.results[0];
  if (!sameBytes(in, dH) || in.dtype != dH.dtype || b.count != dH.elements)
    return "the gelu_grad does not read the input gradient whole";
  if (!handedOnOnly(dH, reads, writes, hostBound))
    return "the input gradient is read by another kernel, bound or pooled";
  if (x.dtype != dA.dtype || dA.dtype != dH.dtype)
    return "the gelu_grad's tensors differ in storage type";
  if (spansMeet(x, dH))
    return "the gelu_grad's input overlaps the input gradient";
  if (meetsAnOperand(dA, a))
    return "the gelu_grad's result overlaps an operand of the input "
           "gradient";
  if (spansMeet(dA, x) && !sameBytes(dA, x))
    return "the gelu_grad's result overlaps its input";
  return nullptr;
}

/// Whether `b` is an add (two operands, one result) of `buffer` and
/// another tensor.
inline bool addsOnce(const KernelCall &b, uint32_t buffer) {
  return b.op == fb::OpCode::Add && b.operands.size() == 2 &&
         b.results.size() == 1 &&
         (b.operands[0].buffer == buffer) != (b.operands[1].buffer == buffer);
}

/// Whether calls[p] (a linear or linear_input_grad) is followed by an add
/// of its result and another tensor: the pairs productAddRefusal decides
/// on.
inline bool isProductAddCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  if ((a.op != fb::OpCode::Linear && a.op != fb::OpCode::LinearInputGrad) ||
      a.results.size() != 1 || p + 1 >= program.calls.size())
    return false;
  return addsOnce(program.calls[p + 1], a.results[0].buffer);
}

/// The operand of `add` that is not `product`'s result (the addend, C).
inline size_t addendOperand(const KernelCall &product, const KernelCall &add) {
  return add.operands[0].buffer == product.results[0].buffer ? 1 : 0;
}

/// Why the candidate calls[p] (a product y) and calls[p + 1] (the add of y
/// and r) are not fused, or null. The fused matmul never writes y, so
/// nothing else may read it. `reads`, `writes` and `hostBound` as for
/// refusal().
inline const char *productAddRefusal(const Program &program, size_t p,
                                     const std::vector<uint32_t> &reads,
                                     const std::vector<uint32_t> &writes,
                                     const std::vector<bool> &hostBound) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the add is in another function";
  if (a.op == fb::OpCode::Linear && a.operands.size() > 2)
    return "the linear has a bias (the epilogue adds it after C)";
  size_t addend = addendOperand(a, b);
  const TensorRef &y = a.results[0], &in = b.operands[1 - addend],
                  &r = b.operands[addend], &z = b.results[0];
  if (!sameBytes(in, y) || in.dtype != y.dtype || b.count != y.elements ||
      b.rhsCount != b.count || r.elements != y.elements)
    return "the add does not add the product whole to a tensor of its size";
  if (!handedOnOnly(y, reads, writes, hostBound))
    return "the product is read by another kernel, bound or pooled";
  if (r.dtype != y.dtype || z.dtype != y.dtype || !isFloat(y.dtype))
    return "the add's tensors differ in storage type";
  if (meetsAnOperand(z, a))
    return "the add's result overlaps an operand of the product";
  if (spansMeet(z, r) && !sameBytes(z, r))
    return "the add's result overlaps its addend";
  return nullptr;
}

/// Whether calls[p] (an add: with tp > 1 GPT-2's row-parallel bias, added
/// after the reduction) is followed by an apply_mask of its result, or by
/// an add of it: the groups biasAddRefusal decides on.
inline bool isBiasAddCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  if (a.op != fb::OpCode::Add || a.operands.size() != 2 ||
      a.results.size() != 1 || p + 1 >= program.calls.size())
    return false;
  const KernelCall &b = program.calls[p + 1];
  uint32_t y = a.results[0].buffer;
  if (b.op == fb::OpCode::ApplyMask)
    return b.operands.size() == 2 && b.operands[0].buffer == y;
  return addsOnce(b, y);
}

/// Why the candidate calls[p] (an add x + b -> y, b x's size or a suffix of
/// it) and what follows (an apply_mask of y and its add, or an add of y)
/// are not fused, or null. The fused kernel never writes y, so nothing else
/// may read it; it writes the last add's result z while other threads
/// still read x and b. `reads`, `writes` and `hostBound` as for refusal().
inline const char *biasAddRefusal(const Program &program, size_t p,
                                  const std::vector<uint32_t> &reads,
                                  const std::vector<uint32_t> &writes,
                                  const std::vector<bool> &hostBound) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the next kernel is in another function";
  const TensorRef &x = a.operands[0], &bias = a.operands[1], &y = a.results[0];
  if (!handedOnOnly(y, reads, writes, hostBound))
    return "its result is read by another kernel, bound or pooled";
  if (a.rhsCount <= 0 || a.count % a.rhsCount != 0 || y.elements != a.count)
    return "its rhs does not tile its lhs";
  if (!isFloat(x.dtype) || !isFloat(bias.dtype) || !isFloat(y.dtype))
    return "unexpected dtypes";
  const KernelCall *last = &b;
  if (b.op == fb::OpCode::ApplyMask) {
    // The mask and its add by the rules of their own pair.
    if (const char *why = refusal(program, p + 1, reads, writes, hostBound))
      return why;
    last = &program.calls[p + 2];
  } else {
    const TensorRef &r = b.operands[addendOperand(a, b)];
    if (b.rhsCount != b.count || b.count != a.count)
      return "the add broadcasts";
    if (!isFloat(r.dtype) || !isFloat(b.results[0].dtype))
      return "unexpected dtypes";
    if (spansMeet(b.results[0], r) && !sameBytes(b.results[0], r))
      return "the add's result overlaps its addend";
  }
  const TensorRef &z = last->results[0];
  if (spansMeet(z, x) && !sameBytes(z, x))
    return "the add's result overlaps the biased input";
  if (spansMeet(z, bias))
    return "the add's result overlaps the bias";
  return nullptr;
}

/// Whether `call` is a forward norm (layer_norm or rms_norm) reading
/// `buffer` as its input.
inline bool isNormOf(const KernelCall &call, uint32_t buffer) {
  bool layer = call.op == fb::OpCode::LayerNorm;
  return (layer || call.op == fb::OpCode::RmsNorm) &&
         call.operands.size() == (layer ? 3u : 2u) &&
         call.results.size() == 1 && call.operands[0].buffer == buffer;
}

/// Why the norm after calls[q] (the add that ends the forward residual add
/// group `members`, its result z) does not join the group, or null. The
/// fused kernel stores each row's z and normalizes it (each element's z
/// stored, read back and its y written by the thread that read the group's
/// operands at that element): the norm reads z whole, its tensors are
/// float, y shares no bytes with z, the norm's weight or bias, nor with the
/// group's operands but their very bytes, and z none with the weight or
/// bias.
inline const char *
normJoinRefusal(const Program &program, size_t q,
                const std::vector<const KernelCall *> &members) {
  const KernelCall &add = program.calls[q], &c = program.calls[q + 1];
  const TensorRef &z = add.results[0], &y = c.results[0];
  if (!inOneFunction(program, add, c))
    return "the norm is in another function";
  if (!sameBytes(c.operands[0], z) || c.operands[0].dtype != z.dtype ||
      c.rows * c.cols != z.elements || c.floatAttrs.empty())
    return "the norm does not read the add's result whole";
  for (const TensorRef &t : c.operands)
    if (!isFloat(t.dtype))
      return "a tensor is not float";
  if (!isFloat(y.dtype))
    return "a tensor is not float";
  for (size_t j = 1; j < c.operands.size(); ++j)
    if (spansMeet(y, c.operands[j]) || spansMeet(z, c.operands[j]))
      return "the norm's weight or bias overlaps the add's or norm's result";
  if (spansMeet(y, z))
    return "the norm's result overlaps the add's";
  for (const KernelCall *member : members)
    for (const TensorRef &t : member->operands)
      if (spansMeet(y, t) && !sameBytes(y, t))
        return "the norm's result overlaps a tensor the group reads";
  return nullptr;
}

/// Whether calls[p] (an add) is followed by a norm of its result: the
/// pairs addAloneRefusal and normJoinRefusal decide on.
inline bool isAddNormCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  return a.op == fb::OpCode::Add && a.operands.size() == 2 &&
         a.results.size() == 1 && p + 1 < program.calls.size() &&
         isNormOf(program.calls[p + 1], a.results[0].buffer);
}

/// Why the add calls[p] cannot head a group of its own with the norm of its
/// result, or null: it adds two float tensors of its size (no broadcast),
/// and its result shares no bytes with them but their very bytes.
inline const char *addAloneRefusal(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  if (a.rhsCount != a.count || a.results[0].elements != a.count)
    return "the add broadcasts";
  const TensorRef &z = a.results[0];
  if (!isFloat(z.dtype))
    return "unexpected dtypes";
  for (const TensorRef &t : a.operands) {
    if (!isFloat(t.dtype))
      return "unexpected dtypes";
    if (spansMeet(z, t) && !sameBytes(z, t))
      return "the add's result overlaps an operand";
  }
  return nullptr;
}

/// Whether calls[p] (a linear_weight_grad) is followed by a sum_to of its
/// dY: the pairs weightGradSumRefusal decides on.
inline bool isWeightGradSumCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  return (a.op == fb::OpCode::LinearWeightGrad ||
          a.op == fb::OpCode::LinearWeightGradAccumulate) &&
         a.operands.size() >= 2 && a.results.size() == 1 &&
         nextReads(program, p, fb::OpCode::SumTo, 1, a.operands[1].buffer);
}

/// Why the candidate calls[p] (a linear_weight_grad) and calls[p + 1] (the
/// sum_to of its dY) are not fused, or null; `stagesSum` says whether the
/// sum must go through scratch (it shares bytes with x, dY or dW).
inline const char *weightGradSumRefusal(const Program &program, size_t p,
                                        bool &stagesSum) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the sum_to is in another function";
  const TensorRef &dY = a.operands[1], &in = b.operands[0], &db = b.results[0];
  if (!sameBytes(in, dY) || in.dtype != dY.dtype)
    return "the sum_to does not read the whole dY";
  // dY is [m, n] flattened (decodeKernel's m tokens, n features) and the
  // sum_to's result a suffix of its shape: n elements sum over the tokens.
  if (db.elements != a.n)
    return "the sum_to does not sum dY over its tokens";
  stagesSum = spansMeet(db, a.results[0]) || meetsAnOperand(db, a);
  return nullptr;
}

/// Whether calls[p] (a norm's parameter gradient) is followed by that
/// norm's input gradient of the same dY and x: the groups
/// normBackwardRefusal decides on.
inline bool isNormBackwardCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  bool layer = a.op == fb::OpCode::LayerNormParamGrad;
  if ((!layer && a.op != fb::OpCode::RmsNormParamGrad) ||
      a.operands.size() != 2 || p + 1 >= program.calls.size())
    return false;
  fb::OpCode input =
      layer ? fb::OpCode::LayerNormInputGrad : fb::OpCode::RmsNormInputGrad;
  const KernelCall &b = program.calls[p + 1];
  return b.op == input && b.operands.size() == 3 && b.results.size() == 1 &&
         b.operands[0].buffer == a.operands[0].buffer &&
         b.operands[1].buffer == a.operands[1].buffer;
}

/// Why the candidate calls[p] (a norm's parameter gradient) and calls[p +
/// 1] (its input gradient) are not fused, or null.
inline const char *normBackwardRefusal(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the input gradient is in another function";
  if (a.rows != b.rows || a.cols != b.cols || a.floatAttrs.empty() ||
      a.floatAttrs != b.floatAttrs)
    return "the two gradients' rows, columns or epsilon differ";
  if (a.cols > kNormBackwardMostColumns)
    return "more columns than the fused kernel's shared memory holds";
  for (const KernelCall *call : {&a, &b}) {
    for (const TensorRef &t : call->operands)
      if (!isFloat(t.dtype))
        return "a tensor is not float";
    for (const TensorRef &t : call->results)
      if (!isFloat(t.dtype))
        return "a tensor is not float";
  }
  // The parameter gradients are written last (the chunks' sum). (The
  // loader's liveness check keeps them off the others' bytes already.)
  for (const TensorRef &t : a.results)
    if (meetsAnOperand(t, b) || spansMeet(t, b.results[0]) ||
        meetsAnOperand(t, a))
      return "a parameter gradient overlaps another tensor";
  // (The loader refuses an input gradient in place already.)
  if (meetsAnOperand(b.results[0], b))
    return "the input gradient overlaps an operand";
  return nullptr;
}

/// Why calls[q + 1] is not fused with calls[q] (a norm's input gradient dX)
/// as the residual add of dX, or null; `paramGrad`, where the parameter
/// gradient before it joins them, or null. `reads`, `writes` and
/// `hostBound` as for refusal().
inline const char *normInputGradAddRefusal(const Program &program, size_t q,
                                           const KernelCall *paramGrad,
                                           const std::vector<uint32_t> &reads,
                                           const std::vector<uint32_t> &writes,
                                           const std::vector<bool> &hostBound) {
  const KernelCall &b = program.calls[q];
  if (q + 1 >= program.calls.size())
    return "no kernel follows the input gradient";
  const KernelCall &c = program.calls[q + 1];
  const TensorRef &dX = b.results[0];
  if (c.op != fb::OpCode::Add || c.operands.size() != 2 ||
      c.results.size() != 1)
    return "the next kernel is not an add";
  int taken = c.operands[0].buffer == dX.buffer   ? 0
              : c.operands[1].buffer == dX.buffer ? 1
                                                  : -1;
  if (taken < 0 || c.operands[1 - taken].buffer == dX.buffer)
    return "the add does not add the input gradient to another tensor";
  if (!inOneFunction(program, b, c))
    return "the add is in another function";
  if (!handedOnOnly(dX, reads, writes, hostBound))
    return "the input gradient is read by another kernel, bound or pooled";
  if (c.count != c.rhsCount || c.count != dX.elements)
    return "the add broadcasts";
  const TensorRef &r = c.operands[1 - taken], &z = c.results[0];
  if (!isFloat(r.dtype) || !isFloat(z.dtype))
    return "a tensor is not float";
  for (const TensorRef *t : {&b.operands[0], &b.operands[1], &r})
    if (spansMeet(z, *t) && !sameBytes(z, *t))
      return "the add's result overlaps dY, x or the residual";
  if (spansMeet(z, b.operands[2]))
    return "the add's result overlaps the weight";
  if (paramGrad)
    for (const TensorRef &t : paramGrad->results)
      if (spansMeet(z, t) || spansMeet(r, t))
        return "the add's tensors overlap a parameter gradient";
  return nullptr;
}

/// Why calls[p + 2] does not join the fused norm backward calls[p], calls[p
/// + 1] as the residual add of its input gradient dX, or null.
inline const char *normBackwardAddRefusal(const Program &program, size_t p,
                                          const std::vector<uint32_t> &reads,
                                          const std::vector<uint32_t> &writes,
                                          const std::vector<bool> &hostBound) {
  return normInputGradAddRefusal(program, p + 1, &program.calls[p], reads,
                                 writes, hostBound);
}

/// Why calls[q + 1] does not join a fused norm backward whose last member
/// calls[q] (the residual add, or the input gradient itself) writes t, as
/// the dropout of t (`apply_mask(t, m) -> (d)`: a branch's gradient), or
/// null. `inputGrad` is the group's input gradient (its dY, x and weight),
/// `add` the residual add or null, `paramGrad` the parameter gradient or
/// null. t is still written (the residual stream's gradient is read again);
/// each element of d is written by the thread that read dY, x and the
/// residual at that element, after the row's statistics: d shares no bytes
/// with them but their very bytes, nor with t, the weight, the mask or a
/// parameter gradient.
inline const char *normMaskRefusal(const Program &program, size_t q,
                                   const KernelCall &inputGrad,
                                   const KernelCall *add,
                                   const KernelCall *paramGrad) {
  if (q + 1 >= program.calls.size())
    return "no kernel follows";
  const KernelCall &last = program.calls[q], &m = program.calls[q + 1];
  if (m.op != fb::OpCode::ApplyMask || m.operands.size() != 2 ||
      m.results.size() != 1 || m.floatAttrs.empty())
    return "the next kernel is not an apply_mask";
  const TensorRef &t = last.results[0], &mask = m.operands[1],
                  &d = m.results[0];
  if (!sameBytes(m.operands[0], t) || m.count != t.elements ||
      d.elements != t.elements)
    return "the apply_mask does not mask the group's result whole";
  if (!inOneFunction(program, last, m))
    return "the apply_mask is in another function";
  if (mask.dtype != fb::DType::U8 || !isFloat(d.dtype))
    return "unexpected dtypes";
  std::vector<const TensorRef *> read = {&inputGrad.operands[0],
                                         &inputGrad.operands[1]};
  if (add)
    read.push_back(&add->operands[addendOperand(inputGrad, *add)]);
  for (const TensorRef *u : read)
    if (spansMeet(d, *u) && !sameBytes(d, *u))
      return "the mask's result overlaps dY, x or the residual";
  if (spansMeet(d, inputGrad.operands[2]) || spansMeet(d, mask) ||
      spansMeet(d, t) || (add && spansMeet(d, inputGrad.results[0])))
    return "the mask's result overlaps the weight, the mask or a gradient";
  if (paramGrad)
    for (const TensorRef &g : paramGrad->results)
      if (spansMeet(d, g))
        return "the mask's result overlaps a parameter gradient";
  return nullptr;
}

/// Whether calls[q] is a norm's input gradient, alone (no parameter
/// gradient right before it, or one refused), followed by an add of its
/// result: the pairs normInputGradAloneRefusal
/// and normInputGradAddRefusal decide on.
inline bool isNormInputGradAddCandidate(const Program &program, size_t q) {
  const KernelCall &b = program.calls[q];
  return (b.op == fb::OpCode::LayerNormInputGrad ||
          b.op == fb::OpCode::RmsNormInputGrad) &&
         b.operands.size() == 3 && b.results.size() == 1 &&
         q + 1 < program.calls.size() &&
         program.calls[q + 1].op == fb::OpCode::Add &&
         (program.calls[q + 1].operands.size() == 2 &&
          (program.calls[q + 1].operands[0].buffer == b.results[0].buffer ||
           program.calls[q + 1].operands[1].buffer == b.results[0].buffer));
}

/// Why the input gradient calls[q] cannot be the fused kernel's own, or
/// null: float tensors, dX over none of its operands.
inline const char *normInputGradAloneRefusal(const Program &program, size_t q) {
  const KernelCall &b = program.calls[q];
  if (b.floatAttrs.empty())
    return "unexpected attributes";
  for (const TensorRef &t : b.operands)
    if (!isFloat(t.dtype))
      return "a tensor is not float";
  if (!isFloat(b.results[0].dtype))
    return "a tensor is not float";
  if (meetsAnOperand(b.results[0], b))
    return "the input gradient overlaps an operand";
  return nullptr;
}

/// Whether calls[p] (a cross_entropy) is followed by the gradient of the
/// same logits and labels: the pairs crossEntropyRefusal decides on.
inline bool isCrossEntropyCandidate(const Program &program, size_t p) {
  const KernelCall &a = program.calls[p];
  if (a.op != fb::OpCode::CrossEntropy || a.operands.size() != 2 ||
      a.results.size() != 2 || p + 1 >= program.calls.size())
    return false;
  const KernelCall &b = program.calls[p + 1];
  return b.op == fb::OpCode::CrossEntropyGrad && b.operands.size() == 3 &&
         b.results.size() == 1 &&
         b.operands[0].buffer == a.operands[0].buffer &&
         b.operands[1].buffer == a.operands[1].buffer;
}

/// Why the candidate calls[p] (a cross_entropy) and calls[p + 1] (its
/// gradient) are not fused, or null; `unwritten` gets the loss's results
/// that the fused kernels must not write (FusionStep). `reads` and
/// `hostBound` as for refusal().
inline const char *crossEntropyRefusal(const Program &program, size_t p,
                                       const std::vector<uint32_t> &reads,
                                       const std::vector<bool> &hostBound,
                                       uint8_t &unwritten) {
  const KernelCall &a = program.calls[p];
  const KernelCall &b = program.calls[p + 1];
  if (!inOneFunction(program, a, b))
    return "the gradient is in another function";
  if (a.intAttrs.empty() || a.crossEntropyOverBlock() ||
      b.crossEntropyOverBlock())
    return "a split vocabulary (the device's phases)";
  if (a.intAttrs != b.intAttrs || a.rows != b.rows || a.cols != b.cols)
    return "the two differ in ignore index, rows or columns";
  const TensorRef &scale = b.operands[2];
  unwritten = 0;
  for (size_t j = 0; j < a.results.size(); ++j) {
    const TensorRef &t = a.results[j];
    if (spansMeet(t, scale))
      return "the gradient's scale is the loss's result";
    // Fused, the loss's results are written after the gradient: one whose
    // bytes the gradient's result took (it died unread at the loss) is
    // left unwritten.
    if (!spansMeet(t, b.results[0]))
      continue;
    if (t.buffer >= reads.size() || reads[t.buffer] != 0 || hostBound[t.buffer])
      return "a result of the loss that is read shares bytes with the "
             "gradient";
    unwritten |= static_cast<uint8_t>(1u << j);
  }
  return nullptr;
}

} // namespace fusion

/// The device's fusions over `program` (decoded and placed: its calls are
/// the rank's), indexed by kernel index (KernelCall::index; sized to the
/// largest plus one, like the device's per-kernel tables). Each refused
/// apply_mask + next kernel, with the reason, is appended to `refusals`
/// when given (tests, traces); so is each refused linear + gelu and
/// weight gradient + sum_to candidate.
inline std::vector<FusionStep>
planFusions(const Program &program,
            std::vector<std::string> *refusals = nullptr) {
  size_t slots = 0;
  for (const KernelCall &call : program.calls)
    slots = std::max<size_t>(slots, call.index + size_t(1));
  std::vector<FusionStep> plan(slots);

  size_t numBuffers = program.buffers.size();
  std::vector<uint32_t> reads(numBuffers, 0), writes(numBuffers, 0);
  for (const KernelCall &call : program.fileCalls()) {
    for (const TensorRef &t : call.operands)
      if (t.buffer < numBuffers)
        ++reads[t.buffer];
    for (const TensorRef &t : call.results)
      if (t.buffer < numBuffers)
        ++writes[t.buffer];
  }
  std::vector<bool> hostBound(numBuffers, false);
  auto bind = [&](uint32_t buffer) {
    if (buffer < numBuffers)
      hostBound[buffer] = true;
  };
  for (const BindingRef &b : program.inputs)
    bind(b.buffer);
  for (const BindingRef &b : program.outputs)
    bind(b.buffer);
  for (const BindingRef &b : program.grads)
    bind(b.buffer);
  for (const ParamRef &param : program.params)
    bind(param.buffer);
  for (const StateRef &state : program.state)
    bind(state.buffer);

  // A refused candidate, said (tests, traces); a fused pair or group,
  // planned.
  auto refuse = [&](const KernelCall &call, const char *why,
                    const char *what = "") {
    if (refusals)
      refusals->push_back("kernel " + std::to_string(call.index) + " (" +
                          opCodeName(call.op) + ")" + what + ": " + why);
  };
  auto pair = [&](const KernelCall &head, const KernelCall &tail,
                  FusionStep step) {
    step.role = FusionRole::Head;
    step.partner = tail.index;
    plan[head.index] = step;
    step.role = FusionRole::Tail;
    step.partner = head.index;
    plan[tail.index] = step;
  };
  // The dropout after a norm backward group whose last member is
  // calls[last], joined where normMaskRefusal allows (said where it does
  // not: an apply_mask follows).
  auto joinMask = [&](std::vector<const KernelCall *> &members, size_t last,
                      const KernelCall &inputGrad, const KernelCall *add,
                      const KernelCall *paramGrad) {
    const char *why =
        fusion::normMaskRefusal(program, last, inputGrad, add, paramGrad);
    if (!why)
      members.push_back(&program.calls[last + 1]);
    else if (last + 1 < program.calls.size() &&
             program.calls[last + 1].op == fb::OpCode::ApplyMask)
      refuse(program.calls[last], why, " + apply_mask");
  };
  // A group of two or more: the head, links, the tail; each member's
  // partner the next (the head's) or the one before.
  // The norm after a forward residual add group whose add is calls[last],
  // joined where normJoinRefusal allows (said where it does not: a norm of
  // the add's result follows).
  auto joinNorm = [&](std::vector<const KernelCall *> &members, size_t last) {
    if (last + 1 >= program.calls.size() ||
        !fusion::isNormOf(program.calls[last + 1],
                          program.calls[last].results[0].buffer))
      return;
    const KernelCall &norm = program.calls[last + 1];
    if (const char *why = fusion::normJoinRefusal(program, last, members))
      refuse(program.calls[last], why,
             (" + " + std::string(opCodeName(norm.op))).c_str());
    else
      members.push_back(&norm);
  };
  auto chain = [&](const std::vector<const KernelCall *> &members) {
    size_t n = members.size();
    for (size_t i = 0; i < n; ++i) {
      FusionRole role = i == 0       ? FusionRole::Head
                        : i + 1 == n ? FusionRole::Tail
                                     : FusionRole::Link;
      plan[members[i]->index] = {role, members[i == 0 ? 1 : i - 1]->index};
    }
  };
  for (size_t p = 0; p < program.calls.size(); ++p) {
    const KernelCall &a = program.calls[p];
    // The tail of a pair planned at p - 1 (the loop steps past some).
    if (plan[a.index].role != FusionRole::None)
      continue;
    if (fusion::isBiasAddCandidate(program, p)) {
      if (const char *why =
              fusion::biasAddRefusal(program, p, reads, writes, hostBound)) {
        // The apply_mask and its add may still be a pair.
        refuse(a, why, " + next");
        continue;
      }
      // The bias add, the apply_mask (if any), the residual add.
      std::vector<const KernelCall *> members = {&a, &program.calls[p + 1]};
      if (members.back()->op == fb::OpCode::ApplyMask)
        members.push_back(&program.calls[p + 2]);
      joinNorm(members, p + members.size() - 1);
      chain(members);
      p += members.size() - 1;
      continue;
    }
    if (fusion::isAddNormCandidate(program, p)) {
      const KernelCall &norm = program.calls[p + 1];
      std::vector<const KernelCall *> members = {&a};
      if (const char *why = fusion::addAloneRefusal(program, p)) {
        refuse(a, why, (" + " + std::string(opCodeName(norm.op))).c_str());
        continue;
      }
      joinNorm(members, p);
      if (members.size() > 1) {
        chain(members);
        ++p;
      }
      continue;
    }
    if (fusion::isCrossEntropyCandidate(program, p)) {
      FusionStep step;
      if (const char *why = fusion::crossEntropyRefusal(
              program, p, reads, hostBound, step.unwrittenHeadResults)) {
        refuse(a, why);
        continue;
      }
      pair(a, program.calls[p + 1], step);
      ++p;
      continue;
    }
    if (fusion::isNormBackwardCandidate(program, p)) {
      if (const char *why = fusion::normBackwardRefusal(program, p)) {
        refuse(a, why);
        continue;
      }
      const KernelCall &b = program.calls[p + 1];
      const KernelCall *add = nullptr;
      if (const char *noAdd = fusion::normBackwardAddRefusal(program, p, reads,
                                                             writes, hostBound))
        refuse(b, noAdd, " + add");
      else
        add = &program.calls[p + 2];
      // The group's members, the dropout of its result last where it joins.
      size_t last = p + (add ? 2 : 1);
      std::vector<const KernelCall *> members = {&a, &b};
      if (add)
        members.push_back(add);
      joinMask(members, last, b, add, &a);
      chain(members);
      p += members.size() - 1;
      continue;
    }
    if (fusion::isNormInputGradAddCandidate(program, p)) {
      const char *why = fusion::normInputGradAloneRefusal(program, p);
      if (!why)
        why = fusion::normInputGradAddRefusal(program, p, nullptr, reads,
                                              writes, hostBound);
      if (why) {
        refuse(a, why, " + add");
        continue;
      }
      const KernelCall &add = program.calls[p + 1];
      std::vector<const KernelCall *> members = {&a, &add};
      joinMask(members, p + 1, a, &add, nullptr);
      chain(members);
      p += members.size() - 1;
      continue;
    }
    if (fusion::isInputGradGeluCandidate(program, p)) {
      if (const char *why = fusion::inputGradGeluRefusal(program, p, reads,
                                                         writes, hostBound))
        refuse(a, why);
      else
        pair(a, program.calls[p + 1], {});
      continue;
    }
    if (fusion::isProductAddCandidate(program, p)) {
      if (const char *why =
              fusion::productAddRefusal(program, p, reads, writes, hostBound))
        refuse(a, why, " + add");
      else
        pair(a, program.calls[p + 1], {});
      continue;
    }
    if (fusion::isWeightGradSumCandidate(program, p)) {
      FusionStep step;
      if (const char *why =
              fusion::weightGradSumRefusal(program, p, step.stagesSum))
        refuse(a, why);
      else
        pair(a, program.calls[p + 1], step);
      continue;
    }
    if (fusion::isSwigluCandidate(program, p)) {
      FusionStep step;
      if (const char *why = fusion::swigluRefusal(program, p, reads, writes,
                                                  hostBound, step.writesHead))
        refuse(a, why, (" + " + std::string(opCodeName(
                                    program.calls[p + 1].op)))
                           .c_str());
      else
        pair(a, program.calls[p + 1], step);
      continue;
    }
    if (fusion::isLinearGeluCandidate(program, p)) {
      FusionStep step;
      if (const char *why =
              fusion::linearGeluRefusal(program, p, step.writesHead))
        refuse(a, why);
      else
        pair(a, program.calls[p + 1], step);
      continue;
    }
    if (a.op != fb::OpCode::ApplyMask)
      continue;
    if (const char *why =
            fusion::refusal(program, p, reads, writes, hostBound)) {
      refuse(a, why);
      continue;
    }
    std::vector<const KernelCall *> members = {&a, &program.calls[p + 1]};
    joinNorm(members, p + 1);
    chain(members);
    p += members.size() - 1;
  }
  return plan;
}

struct KernelArgs;

/// Runs a SwiGLU pair (isSwigluCandidate) as one kernel (FusedKernels.cu):
/// silu + mul, h = silu(g) rounded to h's storage (stored where
/// `writesHead`), then the mul of h and the other operand; or mul +
/// silu_grad, the product rounded to its storage (stored where
/// `writesHead`), then silu_grad of it and the gate. The unfused kernels'
/// values bit for bit (SiluOps.cuh).
Status runSwigluPair(const KernelCall &head, const KernelCall &tail,
                     const KernelArgs &headArgs, const KernelArgs &tailArgs,
                     bool writesHead);

/// A forward residual add group with its members' run addresses: the bias
/// add (or null), the apply_mask (or null), the add, the norm of its result
/// (or null). The last member's args carry the stream.
struct AddGroup {
  const KernelCall *biasAdd = nullptr, *applyMask = nullptr, *add = nullptr,
                   *norm = nullptr;
  const KernelArgs *biasArgs = nullptr, *maskArgs = nullptr, *addArgs = nullptr,
                   *normArgs = nullptr;
};

/// Runs a forward residual add group as one kernel (FusedKernels.cu): y =
/// x + b (b repeated over x's leading dimensions) rounded to y's storage
/// where a bias add heads it, then through the apply_mask (round_y(y * mask
/// * scale), scale 1 in evaluation) where it has one, then added to the
/// add's other operand: z, the unfused kernels' bit for bit; without a bias
/// add and a mask, the add's own sum. The intermediates are neither written
/// nor read. With a norm, z is written and normalized in the same pass
/// (ReductionKernels.cu), y the norm's bit for bit too.
Status runAddGroup(const AddGroup &group);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_FUSIONPLAN_H
