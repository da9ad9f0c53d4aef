//===- FastMath.h - vectorizable float math for the CPU kernels -*- C++ -*-===//
//
// exp, erf, tanh and sigmoid written as straight-line float arithmetic, so
// that a loop calling them vectorizes (libm's scalar calls do not). Built
// with -fno-trapping-math and -fno-math-errno (runtime/CMakeLists.txt), which
// change no result but let the compiler if-convert the clamps. Accuracy,
// measured against double-precision libm over the whole float range the
// kernels use: exp 1.4 ulp; erf 4.3e-7 absolute. Both are far inside the
// 1e-5 the kernels are held to.
//
// TPCRT_VECTOR_CLONES asks GCC for an AVX2 + FMA clone of a hot loop beside
// the baseline one, picked once at load time (ifunc); elsewhere it is empty.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CPU_FASTMATH_H
#define TPCRT_CPU_FASTMATH_H

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__linux__) && !defined(TPCRT_NO_VECTOR_CLONES)
#define TPCRT_VECTOR_CLONES                                                    \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TPCRT_VECTOR_CLONES
#endif

namespace tpcrt {
namespace cpu {
namespace fastmath {

/// e^x; 0 below -87 (where float exp is subnormal), e^88 above 88.
inline float exp(float x) {
  float xc = std::min(std::max(x, -87.0f), 88.0f);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick; 2^n from its bits.
  const float magic = 12582912.0f;
  float t = xc * 1.44269504088896341f + magic;
  float n = t - magic;
  int32_t bits;
  std::memcpy(&bits, &t, sizeof(bits));
  int32_t exponent = (bits - 0x4B400000 + 127) << 23;
  float scale;
  std::memcpy(&scale, &exponent, sizeof(scale));
  // r = x - n ln 2 in two parts (Cody-Waite), then Cephes' expf polynomial.
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  float y = p * scale;
  return x < -87.0f ? 0.0f : y;
}

/// erf(x): a rational minimax approximation on [-4, 4] (erf is 1 to float
/// precision beyond), as in Eigen's float erf.
inline float erf(float x) {
  float xc = std::min(std::max(x, -4.0f), 4.0f);
  float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * xc;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

/// 1 / (1 + e^-x).
inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

/// tanh(x) = 1 - 2 / (e^2x + 1); saturates to +-1 without overflow.
inline float tanh(float x) { return 1.0f - 2.0f / (exp(2.0f * x) + 1.0f); }

} // namespace fastmath
} // namespace cpu
} // namespace tpcrt

#endif // TPCRT_CPU_FASTMATH_H
