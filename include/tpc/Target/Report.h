//===- Report.h - tpc-compile --report as JSON ------------------*- C++ -*-===//
//
// The JSON report of a compiled model (INTERFACE.md, "Report"). The figures
// come from the read-only analyses of tpc/Analysis/Report.h, run by the
// compile flow (tpc/Pipelines) at its phase boundaries.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_TARGET_REPORT_H
#define TPC_TARGET_REPORT_H

#include "tpc/Analysis/Report.h"

namespace mlir::tpc {

/// Writes the report as JSON to `path` ('-' is stdout).
LogicalResult writeReport(const CompileReport &report, StringRef path,
                          Location loc);

} // namespace mlir::tpc

#endif // TPC_TARGET_REPORT_H
