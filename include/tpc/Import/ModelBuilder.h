//===- ModelBuilder.h - config -> tpc IR ------------------------*- C++ -*-===//

#ifndef TPC_IMPORT_MODELBUILDER_H
#define TPC_IMPORT_MODELBUILDER_H

#include "tpc/Import/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::tpc {

/// Builds `func.func @forward(params..., %input_ids, %labels)` for a
/// validated config. The module carries the config as `tpc.model`; each
/// result carries its output name in `tpc.output` ("loss", "logits").
OwningOpRef<ModuleOp> buildModel(MLIRContext &context,
                                 const ModelConfig &config,
                                 const ImportOptions &options);

} // namespace mlir::tpc

#endif // TPC_IMPORT_MODELBUILDER_H
