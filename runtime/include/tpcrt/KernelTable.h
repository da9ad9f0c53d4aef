//===- KernelTable.h - what each opcode takes, from Kernels.def -*- C++ -*-===//
//
// The runtime's view of the kernel table (tpcrt/Kernels.def): per opcode its
// name, operand and result counts, attribute lengths, flag bits, aliasing
// and role names. The loader checks counts with it, the decoder names
// operands with it and dispatches on it; nothing here needs a device.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_KERNELTABLE_H
#define TPCRT_KERNELTABLE_H

#include "tpcx_generated.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tpcrt {

/// How a kernel's results may share bytes with its operands (Kernels.def).
enum class Aliasing {
  /// Never.
  None,
  /// A result may be the very bytes of an operand (elementwise).
  SameBytes,
  /// Each result is the operand with its role's name, updated in place.
  Update,
};

/// What a kernel is besides its computation (Kernels.def's Kind column).
enum class KernelKind {
  Compute,
  /// Draws a dropout stream: may carry splits, takes a first index.
  Draws,
  /// A collective that moves data between the ranks of its group.
  Communicates,
  /// Group-shaped, but moves nothing: its rank's block.
  Local,
};

struct KernelInfo {
  fb::OpCode op;
  const char *name;
  uint32_t minOperands, maxOperands, numResults;
  /// The length of int_attrs: from minInts to maxInts; kRankInts: the rank
  /// of operand 0.
  int32_t minInts, maxInts;
  uint32_t numFloats;
  uint32_t flagMask;
  Aliasing aliasing;
  KernelKind kind;
  /// Comma-separated role names, for messages.
  const char *operandRoles, *resultRoles;
};

/// maxOperands of a kernel with any number of operands.
constexpr uint32_t kAnyCount = 0xFFFFFFFFu;
/// minInts / maxInts of a kernel whose int_attrs are one per dimension of
/// operand 0 (a permutation).
constexpr int32_t kRankInts = -1;

/// The row of `op`; null for a value no row has (a newer or corrupt file).
const KernelInfo *kernelInfo(fb::OpCode op);

/// The name of operand `j` of `op` ("operand <j>" past the named ones).
std::string operandRole(fb::OpCode op, size_t j);
/// The name of result `r` of `op` ("result <r>" past the named ones).
std::string resultRole(fb::OpCode op, size_t r);

/// For an in-place update (Aliasing::Update), the operand that result
/// `result` is; -1 for every other kernel and result.
int inPlaceOperand(fb::OpCode op, size_t result);

} // namespace tpcrt

#endif // TPCRT_KERNELTABLE_H
