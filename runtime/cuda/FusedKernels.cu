//===- FusedKernels.cu - kernel groups the CUDA device runs as one --------===//
//
// The forward's residual add groups (FusionPlan.h): apply_mask + add, z =
// y + r (or r + y) with y = x * mask * scale, in one pass over x, the mask
// and r, y never stored; a bias add before them (add + apply_mask + add,
// or add + add without the mask): x + b[i mod |b|], rounded to the bias
// add's storage, takes x's place. The values are the unfused kernels' bit
// for bit (MaskAdd.cuh). A norm right after the group's add joins it: then
// ReductionKernels.cu's norm kernel computes z as it goes (runNormOfMaskAdd).
//
// Grid-stride, 8 elements a thread at a time (16-byte loads of 16-bit
// storage) when every pointer is 16-byte aligned (and the bias a multiple
// of 8 elements). z may be the very bytes of x or r (the plan refuses any
// other overlap): each thread reads its elements before it writes them.
//
// SwiGLU's pairs (Llama's MLP): silu + mul, up * silu(gate), and mul +
// silu_grad, the silu's output gradient and then the gate's, each in one
// pass (the silu's output stored where the backward reads it, the product
// never), the unfused kernels' values bit for bit (SiluOps.cuh).
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "CudaKernels.h"
#include "FusionPlan.h"
#include "MaskAdd.cuh"
#include "SiluOps.cuh"

#include <cstring>
#include <string>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

constexpr unsigned kThreads = 256;

template <bool kBias, bool kMask>
__global__ void __launch_bounds__(kThreads)
    maskAddKernel(MaskAdd p, bool vectorized) {
  forEachElement(
      p.count, vectorized,
      [&](int64_t base) {
        float x[kVec], r[kVec], b[kVec] = {};
        uint8_t m[kVec] = {};
        loadVec(p.x, p.xType, base, x);
        loadVec(p.r, p.rType, base, r);
        // biasCount is a multiple of kVec here: b's kVec elements are one
        // run.
        if (kBias)
          loadVec(p.bias, p.biasType, modFast(base, p.biasCount), b);
        if (kMask) {
          uint2 raw = *vectorAt<uint2>(p.mask + base);
          memcpy(m, &raw, sizeof(raw));
        }
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          x[k] = p.apply<kBias, kMask>(x[k], b[k], m[k], r[k]);
        storeVec(p.z, p.zType, base, x);
      },
      [&](int64_t i) { storeFloat(p.z, p.zType, i, p.at<kBias, kMask>(i)); });
}

bool isFloatStorage(Storage type) {
  return type == Storage::F32 || type == Storage::BF16 || type == Storage::F16;
}

/// Checks `add` (one result, two operands, one of them `in`, the value the
/// group hands it) and fills p's r, z, count and the side of `in`.
Status addOperands(const char *name, const KernelCall &add, uint32_t in,
                   const KernelArgs &addArgs, MaskAdd &p) {
  if (add.op != fb::OpCode::Add || add.operands.size() != 2 ||
      add.results.size() != 1)
    return Status::error(std::string(name) + ": the last kernel is not an add");
  p.maskedLhs = add.operands[0].buffer == in;
  if (!p.maskedLhs && add.operands[1].buffer != in)
    return Status::error(std::string(name) +
                         ": the add does not read the group's value");
  if (add.rhsCount != add.count)
    return Status::error(std::string(name) + ": the add broadcasts (" +
                         std::to_string(add.rhsCount) + " of " +
                         std::to_string(add.count) + " elements)");
  p.r = addArgs.operands[p.maskedLhs ? 1 : 0];
  p.rType = storageOf(add.operands[p.maskedLhs ? 1 : 0].dtype);
  p.z = addArgs.results[0];
  p.zType = storageOf(add.results[0].dtype);
  p.count = add.count;
  return Status::ok();
}

/// Checks `applyMask` against the add's count and fills p's mask, scale
/// and y's storage.
Status maskOperands(const char *name, const KernelCall &applyMask,
                    const KernelArgs &maskArgs, MaskAdd &p) {
  if (applyMask.op != fb::OpCode::ApplyMask || applyMask.operands.size() != 2 ||
      applyMask.results.size() != 1 || applyMask.floatAttrs.empty() ||
      applyMask.operands[1].dtype != fb::DType::U8)
    return Status::error(std::string(name) + ": not an apply_mask");
  if (applyMask.count != p.count)
    return Status::error(std::string(name) + ": element counts differ (" +
                         "apply_mask " + std::to_string(applyMask.count) +
                         ", add " + std::to_string(p.count) + ")");
  p.mask = static_cast<const uint8_t *>(maskArgs.operands[1]);
  p.yType = storageOf(applyMask.results[0].dtype);
  return applyMaskScale(applyMask, maskArgs, name, p.scale);
}

template <bool kBias, bool kMask>
Status launchMaskAdd(const char *name, const MaskAdd &p, cudaStream_t stream) {
  if (p.count <= 0)
    return Status::ok();
  bool vectorized = aligned16(p.x) && aligned16(p.r) && aligned16(p.z) &&
                    p.count >= kVec && (!kMask || aligned16(p.mask)) &&
                    (!kBias || (aligned16(p.bias) && p.biasCount % kVec == 0));
  int64_t work = vectorized ? (p.count + kVec - 1) / kVec : p.count;
  auto *kernel = &maskAddKernel<kBias, kMask>;
  TPCRT_LAUNCH(kernel, gridFor(work, kThreads), kThreads, 0, stream, p,
               vectorized);
  return launchStatus(name);
}

/// The group's members' opcodes joined by " + " (its errors' and launch
/// status's name): a literal, so that a run allocates nothing.
const char *groupName(const AddGroup &g) {
  static const char *const kNames[2][2][3] = {
      {{"add", "add + layer_norm", "add + rms_norm"},
       {"apply_mask + add", "apply_mask + add + layer_norm",
        "apply_mask + add + rms_norm"}},
      {{"add + add", "add + add + layer_norm", "add + add + rms_norm"},
       {"add + apply_mask + add", "add + apply_mask + add + layer_norm",
        "add + apply_mask + add + rms_norm"}}};
  int norm = !g.norm ? 0 : g.norm->op == fb::OpCode::LayerNorm ? 1 : 2;
  return kNames[g.biasAdd != nullptr][g.applyMask != nullptr][norm];
}

/// A SwiGLU pair's tensors (runSwigluPair): the forward's silu(a) (rounded
/// to h's storage) times b, or the backward's a * b (rounded to h's
/// storage) through silu_grad with the gate g.
struct SwigluPair {
  bool backward = false;
  /// The forward's mul reads h as its lhs (else as its rhs).
  bool headIsLhs = true;
  const void *a = nullptr, *b = nullptr, *g = nullptr;
  Storage aType = Storage::F32, bType = Storage::F32, gType = Storage::F32;
  /// Null where only the mul or silu_grad's result is written.
  void *h = nullptr;
  Storage hType = Storage::F32;
  void *out = nullptr;
  Storage outType = Storage::F32;
  int64_t count = 0;

  /// The two results at one element, from the operands' values there.
  __device__ __forceinline__ void apply(float av, float bv, float gv,
                                        float &hv, float &ov) const {
    if (!backward) {
      hv = roundTo(siluOf(av), hType);
      ov = headIsLhs ? mulOf(hv, bv) : mulOf(bv, hv);
    } else {
      hv = roundTo(mulOf(av, bv), hType);
      ov = siluGradOf(hv, gv);
    }
  }
};

__global__ void __launch_bounds__(kThreads)
    swigluKernel(SwigluPair p, bool vectorized) {
  forEachElement(
      p.count, vectorized,
      [&](int64_t base) {
        float a[kVec], b[kVec], g[kVec] = {}, h[kVec], o[kVec];
        loadVec(p.a, p.aType, base, a);
        loadVec(p.b, p.bType, base, b);
        if (p.backward)
          loadVec(p.g, p.gType, base, g);
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          p.apply(a[k], b[k], g[k], h[k], o[k]);
        if (p.h)
          storeVec(p.h, p.hType, base, h);
        storeVec(p.out, p.outType, base, o);
      },
      [&](int64_t i) {
        float hv, ov;
        p.apply(loadFloat(p.a, p.aType, i), loadFloat(p.b, p.bType, i),
                p.backward ? loadFloat(p.g, p.gType, i) : 0.0f, hv, ov);
        if (p.h)
          storeFloat(p.h, p.hType, i, hv);
        storeFloat(p.out, p.outType, i, ov);
      });
}

} // namespace

Status cuda::runSwigluPair(const KernelCall &head, const KernelCall &tail,
                           const KernelArgs &headArgs,
                           const KernelArgs &tailArgs, bool writesHead) {
  bool backward = head.op == fb::OpCode::Mul;
  const char *name = backward ? "mul + silu_grad" : "silu + mul";
  if ((backward ? tail.op != fb::OpCode::SiluGrad
                : head.op != fb::OpCode::Silu || tail.op != fb::OpCode::Mul) ||
      head.results.size() != 1 || tail.results.size() != 1 ||
      tail.operands.size() != 2 ||
      head.operands.size() != (backward ? 2u : 1u))
    return Status::error(std::string(name) + ": not a SwiGLU pair");
  SwigluPair p;
  p.backward = backward;
  uint32_t h = head.results[0].buffer;
  if (backward) {
    if (tail.operands[0].buffer != h)
      return Status::error(std::string(name) +
                           ": silu_grad does not read the product");
    p.b = headArgs.operands[1];
    p.bType = storageOf(head.operands[1].dtype);
    p.g = tailArgs.operands[1];
    p.gType = storageOf(tail.operands[1].dtype);
  } else {
    p.headIsLhs = tail.operands[0].buffer == h;
    if (!p.headIsLhs && tail.operands[1].buffer != h)
      return Status::error(std::string(name) +
                           ": the mul does not read the silu's result");
    p.b = tailArgs.operands[p.headIsLhs ? 1 : 0];
    p.bType = storageOf(tail.operands[p.headIsLhs ? 1 : 0].dtype);
  }
  p.a = headArgs.operands[0];
  p.aType = storageOf(head.operands[0].dtype);
  p.hType = storageOf(head.results[0].dtype);
  if (writesHead)
    p.h = headArgs.results[0];
  p.out = tailArgs.results[0];
  p.outType = storageOf(tail.results[0].dtype);
  p.count = tail.count;
  if (head.count != p.count || head.results[0].elements != p.count)
    return Status::error(std::string(name) + ": element counts differ (" +
                         std::to_string(head.count) + " and " +
                         std::to_string(p.count) + ")");
  if (!isFloatStorage(p.aType) || !isFloatStorage(p.bType) ||
      !isFloatStorage(p.hType) || !isFloatStorage(p.outType) ||
      (backward && !isFloatStorage(p.gType)))
    return Status::error(std::string(name) + ": unexpected dtypes");
  if (p.count <= 0)
    return Status::ok();
  bool vectorized = aligned16(p.a) && aligned16(p.b) && aligned16(p.out) &&
                    (!p.h || aligned16(p.h)) &&
                    (!backward || aligned16(p.g)) && p.count >= kVec;
  int64_t work = vectorized ? (p.count + kVec - 1) / kVec : p.count;
  TPCRT_LAUNCH(swigluKernel, gridFor(work, kThreads), kThreads, 0,
               tailArgs.stream, p, vectorized);
  return launchStatus(name);
}

Status cuda::runAddGroup(const AddGroup &g) {
  const char *name = groupName(g);
  if (!g.add || !g.addArgs || (g.biasAdd && !g.biasArgs) ||
      (g.applyMask && !g.maskArgs) || (g.norm && !g.normArgs))
    return Status::error(std::string(name) +
                         ": a member without its addresses");
  // The value the add takes from the members before it: the apply_mask's
  // result, else the bias add's, else (an add alone) its lhs.
  const KernelCall *before = g.applyMask ? g.applyMask : g.biasAdd;
  if (before && (before->results.size() != 1 || before->operands.size() != 2))
    return Status::error(std::string(name) + ": unexpected operands");
  uint32_t in = before
                    ? before->results[0].buffer
                    : (g.add->operands.empty() ? 0 : g.add->operands[0].buffer);
  MaskAdd p;
  if (Status s = addOperands(name, *g.add, in, *g.addArgs, p); !s)
    return s;
  if (g.biasAdd) {
    const KernelCall &biasAdd = *g.biasAdd;
    if (biasAdd.op != fb::OpCode::Add)
      return Status::error(std::string(name) + ": not a bias add");
    if (g.applyMask &&
        g.applyMask->operands[0].buffer != biasAdd.results[0].buffer)
      return Status::error(
          std::string(name) +
          ": the apply_mask does not read the bias add's result");
    if (biasAdd.count != p.count || biasAdd.rhsCount <= 0 ||
        biasAdd.count % biasAdd.rhsCount != 0)
      return Status::error(std::string(name) + ": the bias of " +
                           std::to_string(biasAdd.rhsCount) +
                           " elements does not tile " +
                           std::to_string(biasAdd.count) + " (the add has " +
                           std::to_string(p.count) + ")");
    p.x = g.biasArgs->operands[0];
    p.xType = storageOf(biasAdd.operands[0].dtype);
    p.bias = g.biasArgs->operands[1];
    p.biasType = storageOf(biasAdd.operands[1].dtype);
    p.biasCount = biasAdd.rhsCount;
    p.biasedType = p.yType = storageOf(biasAdd.results[0].dtype);
  }
  if (g.applyMask) {
    if (Status s = maskOperands(name, *g.applyMask, *g.maskArgs, p); !s)
      return s;
    if (!g.biasAdd) {
      p.x = g.maskArgs->operands[0];
      p.xType = storageOf(g.applyMask->operands[0].dtype);
    }
  }
  if (!before) {
    p.x = g.addArgs->operands[0];
    p.xType = p.yType = storageOf(g.add->operands[0].dtype);
  }
  if (!isFloatStorage(p.xType) || !isFloatStorage(p.rType) ||
      !isFloatStorage(p.zType) || !isFloatStorage(p.yType) ||
      (g.biasAdd &&
       (!isFloatStorage(p.biasType) || !isFloatStorage(p.biasedType))))
    return Status::error(std::string(name) + ": unexpected dtypes");
  bool bias = g.biasAdd, mask = g.applyMask;
  if (g.norm)
    return runNormOfMaskAdd(name, p, bias, mask, *g.norm, *g.normArgs,
                            g.addArgs->stream);
  if (bias)
    return mask ? launchMaskAdd<true, true>(name, p, g.addArgs->stream)
                : launchMaskAdd<true, false>(name, p, g.addArgs->stream);
  return mask ? launchMaskAdd<false, true>(name, p, g.addArgs->stream)
              : launchMaskAdd<false, false>(name, p, g.addArgs->stream);
}
