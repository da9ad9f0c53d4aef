//===- Communicates.h - kernels that move data between ranks ----*- C++ -*-===//
//
// Passes that move kernels keep the order of those that communicate: every
// rank runs the same program and issues them alike.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_COMMUNICATES_H
#define DIALECTS_RT_TRANSFORMS_COMMUNICATES_H

#include "dialects/Rt/IR/RtOps.h"

#include "tpcrt/KernelTable.h"

namespace mlir::rt {

/// Whether `kernel` moves data between ranks: a collective, a transfer or
/// its wait, or the vocabulary-split loss (its all-reduces are inside it).
inline bool communicates(KernelOp kernel) {
  OpCode opcode = kernel.getOpcode();
  if (opcode == OpCode::CrossEntropy || opcode == OpCode::CrossEntropyGrad)
    return true;
  const tpcrt::KernelInfo *info =
      tpcrt::kernelInfo(static_cast<tpcrt::fb::OpCode>(opcode));
  return info && info->kind == tpcrt::KernelKind::Communicates;
}

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_COMMUNICATES_H
