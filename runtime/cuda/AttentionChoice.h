//===- AttentionChoice.h - TPCRT_CUDA_ATTENTION, read once ------*- C++ -*-===//
//
// Which attention kernels the CUDA device runs, from the environment:
//   (unset)  the default: tensor cores where the case allows (wgmma on a
//            device of compute capability 9.0, mma.sync elsewhere), the
//            fp32 FMA kernels for the rest;
//   cudnn    cuDNN's fused attention where it can take the call
//            (CudnnAttention.h), the default for the rest;
//   mma      the mma.sync kernels on Hopper too (an sm_80 device's path);
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

enum class AttentionChoice { Default, Cudnn, Mma, Generic };

/// TPCRT_CUDA_ATTENTION as read at the first call (the process's choice).
/// An unknown value means the default and is reported on stderr, once.
inline AttentionChoice attentionChoice() {
  static const AttentionChoice choice = [] {
    const char *v = std::getenv("TPCRT_CUDA_ATTENTION");
    if (!v)
      return AttentionChoice::Default;
    constexpr struct {
      const char *name;
      AttentionChoice choice;
    } kKnown[] = {{"cudnn", AttentionChoice::Cudnn},
                  {"mma", AttentionChoice::Mma},
                  {"generic", AttentionChoice::Generic}};
    for (const auto &known : kKnown)
      if (std::strcmp(v, known.name) == 0)
        return known.choice;
    std::fprintf(stderr,
                 "tpcrt: TPCRT_CUDA_ATTENTION=%s is not cudnn, mma or "
                 "generic: ignored\n",
                 v);
    return AttentionChoice::Default;
  }();
  return choice;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_ATTENTIONCHOICE_H
