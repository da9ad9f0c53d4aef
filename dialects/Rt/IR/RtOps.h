//===- RtOps.h - rt dialect operations --------------------------*- C++ -*-===//

#ifndef DIALECTS_RT_IR_RTOPS_H
#define DIALECTS_RT_IR_RTOPS_H

#include "dialects/Rt/IR/RtDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/Rt/IR/RtEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Rt/IR/RtAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Rt/IR/RtOps.h.inc"

namespace mlir::rt {
/// The byte size of a buffer (elements × element bytes). Buffer types are
/// verified to be static, so this cannot fail on a verified op; it saturates
/// at INT64_MAX rather than overflow.
int64_t getBufferBytes(MemRefType type);

/// For the optimizer kernels that update buffers in place: the operand whose
/// buffer result `result` of `opcode` is (adamw_update: param, exp_avg,
/// exp_avg_sq are operands 0, 2, 3; sgd_update: param, momentum are 0, 2),
/// or nullopt when the result is a buffer of its own.
std::optional<unsigned> getInPlaceOperand(OpCode opcode, unsigned result);

/// Whether `opcode` is a collective (all_reduce, all_gather,
/// reduce_scatter, all_to_all): what the CUDA device runs on a
/// communicator's stream, apart from the compute stream.
bool isCollective(OpCode opcode);

/// Whether `op` is an rt.kernel all_reduce.
bool isAllReduce(Operation *op);

/// The mesh of the rt.program that holds `op`; null outside a program and
/// for a single-rank program.
MeshAttr getProgramMesh(Operation *op);

/// Per dimension, the indices into `mesh` of the axes that split it, major
/// first. `splits` must name axes of `mesh` (the verifiers check it).
SmallVector<SmallVector<unsigned>> getSplitAxes(MeshAttr mesh,
                                                SplitsAttr splits);

/// The global shape of a tensor whose blocks have shape `local`: each
/// dimension times the product of its split axes' sizes (`splits` names axes
/// of `mesh`, one list per dimension of `local`, or is null); nullopt when a
/// dimension overflows int64.
std::optional<SmallVector<int64_t>>
getGlobalShape(MeshAttr mesh, SplitsAttr splits, ArrayRef<int64_t> local);

} // namespace mlir::rt

#endif // DIALECTS_RT_IR_RTOPS_H
