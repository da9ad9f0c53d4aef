//===- AttentionChoice.h - TPCRT_CUDA_ATTENTION, read once ------*- C++ -*-===//
//
// Which attention kernels the CUDA device runs, from the environment:
//   (unset), auto  cuDNN's fused attention where it takes the call and
//            measured faster at prepare (AttentionRace.h), else the own
//            kernels as with `own`;
//   own      the own kernels: tensor cores where the case allows (wgmma on
//            a device of compute capability 9.0, mma.sync elsewhere), the
//            fp32 FMA kernels for the rest;
//   cudnn    cuDNN's fused attention wherever it can take the call
//            (CudnnAttention.h), the own kernels for the rest;
//   mma      the own kernels, on mma.sync on Hopper too (an sm_80 device's
//            path);
//   generic  the fp32 FMA kernels for every case.
// The one place that knows the values: the kernels' choice
// (AttentionKernels.cu), cuDNN's planning and the device's report use it.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_ATTENTIONCHOICE_H
#define TPCRT_CUDA_ATTENTIONCHOICE_H

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tpcrt::cuda {

enum class AttentionChoice { Auto, Own, Cudnn, Mma, Generic };

/// The choice that `value` (TPCRT_CUDA_ATTENTION; null when unset) names;
/// `known` is false for a value that names none (then Auto).
inline AttentionChoice parseAttentionChoice(const char *value, bool &known) {
  known = true;
  if (!value)
    return AttentionChoice::Auto;
  constexpr struct {
    const char *name;
    AttentionChoice choice;
  } kKnown[] = {{"auto", AttentionChoice::Auto},
                {"own", AttentionChoice::Own},
                {"cudnn", AttentionChoice::Cudnn},
                {"mma", AttentionChoice::Mma},
                {"generic", AttentionChoice::Generic}};
  for (const auto &entry : kKnown)
    if (std::strcmp(value, entry.name) == 0)
      return entry.choice;
  known = false;
  return AttentionChoice::Auto;
}

/// TPCRT_CUDA_ATTENTION as read at the first call (the process's choice).
/// An unknown value means auto and is reported on stderr, once.
inline AttentionChoice attentionChoice() {
  static const AttentionChoice choice = [] {
    const char *value = std::getenv("TPCRT_CUDA_ATTENTION");
    bool known = true;
    AttentionChoice parsed = parseAttentionChoice(value, known);
    if (!known)
      std::fprintf(stderr,
                   "tpcrt: TPCRT_CUDA_ATTENTION=%s is not auto, own, cudnn, "
                   "mma or generic: ignored (auto)\n",
                   value);
    return parsed;
  }();
  return choice;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_ATTENTIONCHOICE_H
