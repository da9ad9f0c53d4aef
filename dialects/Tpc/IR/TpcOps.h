//===- TpcOps.h - tpc dialect operations ------------------------*- C++ -*-===//

#ifndef DIALECTS_TPC_IR_TPCOPS_H
#define DIALECTS_TPC_IR_TPCOPS_H

#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Tpc/IR/TpcEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tpc/IR/TpcAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Tpc/IR/TpcOps.h.inc"

#endif // DIALECTS_TPC_IR_TPCOPS_H
