//===- Tpcx.h - rt module -> .tpcx executable -------------------*- C++ -*-===//
//
// Serializes a planned rt module (one rt.program with an offset on every
// buffer, rt.arena_bytes and rt.planned_peak_bytes on the module) into the
// executable format of runtime/schema/tpcx.fbs, 1:1: buffers in program
// order, then params, inputs, state, outputs, gradients and kernels in
// program order.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_TARGET_TPCX_H
#define TPC_TARGET_TPCX_H

#include "mlir/IR/BuiltinOps.h"
#include "tpc/Analysis/Hardware.h"
#include "tpc/Analysis/Report.h"

#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <vector>

namespace mlir::rt {

/// Builds the executable's FlatBuffer payload (no framing header) into
/// `payload`. The payload is verified (FlatBuffers verifier and
/// tpcrt::checkExecutable) before it is returned: a compiler bug yields an
/// error, never a file the runtime refuses. Errors are emitted at the
/// offending op.
LogicalResult serializeTpcx(ModuleOp module, std::vector<uint8_t> &payload);

/// serializeTpcx, then writes the framed file to `path` atomically (a
/// temporary file renamed over `path`).
LogicalResult writeTpcxFile(ModuleOp module, StringRef path);

/// How the CUDA device runs this module's program, by its own rules over the
/// serialized executable, decoded and placed as the loader does (one rank
/// of each pipeline stage): the groups of kernels it runs as one (its
/// load-time plan, runtime/cuda/FusionPlan.h) and the attention backward
/// kernels cuDNN refuses (runtime/cuda/CudnnEligibility.h), which run its
/// own kernels. For tpc::predictStep on a description whose runtime device
/// is cuda.
FailureOr<tpc::DevicePlan> planCudaDevice(ModuleOp module);

/// tpc::predictStep with how the description's runtime device runs the
/// program: planCudaDevice's where it is cuda, kernel by kernel on a cpu.
LogicalResult predictStepOnDevice(ModuleOp module, const tpc::Hardware &hw,
                                  tpc::CompileReport &report);

} // namespace mlir::rt

#endif // TPC_TARGET_TPCX_H
