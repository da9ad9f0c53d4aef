//===- ModelSummary.cpp - tpc-model-summary -------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCMODELSUMMARY
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

int64_t modelField(DictionaryAttr model, StringRef name) {
  if (auto value = model ? model.getAs<IntegerAttr>(name) : IntegerAttr())
    return value.getInt();
  return -1;
}

struct ModelSummaryPass
    : public tpc::impl::TpcModelSummaryBase<ModelSummaryPass> {
  using TpcModelSummaryBase::TpcModelSummaryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("tpc-model-summary: no func.func @forward");
      return signalPassFailure();
    }
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "tpc-model-summary: " << error;
      return signalPassFailure();
    }
    print(module, forward, file->os());
    file->keep();
  }

  void print(ModuleOp module, func::FuncOp forward, llvm::raw_ostream &os) {
    auto model = module->getAttrOfType<DictionaryAttr>("tpc.model");
    StringRef type = "unknown";
    if (auto name = model ? model.getAs<StringAttr>("model_type") : nullptr)
      type = name.getValue();
    os << llvm::formatv("model {0}: {1} layers, hidden {2}, heads {3} (kv "
                        "{4}), ffn {5}, vocab {6}\n",
                        type, modelField(model, "layers"),
                        modelField(model, "hidden"), modelField(model, "heads"),
                        modelField(model, "kv_heads"), modelField(model, "ffn"),
                        modelField(model, "vocab"));
    os << llvm::formatv("batch {0}, seq {1}\n", modelField(model, "batch"),
                        modelField(model, "seq"));

    int64_t tensors = 0, elements = 0, bytes = 0;
    for (BlockArgument arg : forward.getArguments()) {
      if (!forward.getArgAttr(arg.getArgNumber(), kParamAttrName))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      ++tensors;
      elements += type.getNumElements();
      bytes += type.getNumElements() *
               (type.getElementType().getIntOrFloatBitWidth() / 8);
    }
    os << llvm::formatv("parameters: {0} tensors, {1} elements, {2} bytes\n",
                        tensors, elements, bytes);

    llvm::MapVector<StringRef, int64_t> byKind;
    llvm::MapVector<int64_t, int64_t> byLayer;
    int64_t total = 0;
    forward.walk([&](Operation *op) {
      if (op == forward.getOperation())
        return;
      ++total;
      ++byKind[op->getName().getStringRef()];
      if (auto layer = op->getAttrOfType<IntegerAttr>(kLayerAttrName))
        ++byLayer[layer.getInt()];
    });
    os << llvm::formatv("ops: {0} in total, {1} in layers\n", total,
                        [&] {
                          int64_t n = 0;
                          for (auto &entry : byLayer)
                            n += entry.second;
                          return n;
                        }());
    for (auto [kind, count] : byKind)
      os << llvm::formatv("  {0,-20} {1}\n", kind, count);
    for (auto [layer, count] : byLayer)
      os << llvm::formatv("  layer {0,-14} {1} ops\n", layer, count);
  }
};

} // namespace
