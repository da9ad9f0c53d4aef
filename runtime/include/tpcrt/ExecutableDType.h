//===- ExecutableDType.h - the element types of buffers ---------*- C++ -*-===//
//
// The dtypes of an executable's buffers (schema/tpcx.fbs, fb::DType): their
// sizes and names, for the loader's checks, the decoder and the devices.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_EXECUTABLEDTYPE_H
#define TPCRT_EXECUTABLEDTYPE_H

#include "tpcx_generated.h"

#include <cstdint>

namespace tpcrt {

/// Bytes per element of an executable dtype (0 for an unknown value).
uint64_t executableDTypeSize(fb::DType dtype);

/// The dtype's name in messages ("f32", "bf16", ...; "?" for an unknown
/// value).
const char *executableDTypeName(fb::DType dtype);

/// True for the floating-point dtypes kernels compute on (F32, BF16, F16).
bool isFloatDType(fb::DType dtype);

} // namespace tpcrt

#endif // TPCRT_EXECUTABLEDTYPE_H
