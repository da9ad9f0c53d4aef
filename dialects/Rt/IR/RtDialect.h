//===- RtDialect.h - rt dialect declaration ---------------------*- C++ -*-===//

#ifndef DIALECTS_RT_IR_RTDIALECT_H
#define DIALECTS_RT_IR_RTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Rt/IR/RtDialect.h.inc"

#endif // DIALECTS_RT_IR_RTDIALECT_H
