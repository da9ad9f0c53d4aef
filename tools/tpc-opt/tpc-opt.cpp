//===- tpc-opt.cpp - the tpc optimizer driver -----------------------------===//
//
// mlir-opt for tpc: only the dialects and passes tpc needs; out-of-tree
// passes load with --load-pass-plugin.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistDialect.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Rt/IR/RtDialect.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/Transforms/Passes.h"
#include "tpc/Conversion/TpcToRt.h"
#include "tpc/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  mlir::tpc::registerTpcPasses();
  mlir::rt::registerRtPasses();
  mlir::tpc::registerTpcToRtPasses();
  mlir::dist::registerDistPasses();
  mlir::tpc::registerTpcPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::tpc::TpcDialect, mlir::rt::RtDialect,
                  mlir::dist::DistDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  // func.call inlining (the training driver's calls to F, B and W).
  mlir::func::registerInlinerExtension(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tpc optimizer driver\n", registry));
}
