//===- TpcToRt.h - tpc -> rt conversion -------------------------*- C++ -*-===//
//
// tpc-lower-to-rt (lib/Conversion/TpcToRt): a tpc function to the rt
// program of an executable.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_CONVERSION_TPCTORT_H
#define TPC_CONVERSION_TPCTORT_H

#include "mlir/Pass/Pass.h"

namespace mlir::tpc {

#define GEN_PASS_DECL
#include "lib/Conversion/TpcToRt/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Conversion/TpcToRt/Passes.h.inc"

} // namespace mlir::tpc

#endif // TPC_CONVERSION_TPCTORT_H
