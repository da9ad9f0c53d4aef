//===- Mesh.cpp - dist-mesh -----------------------------------------------===//
//
// Adds the module's device mesh; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTMESH
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

struct DistMeshPass : public dist::impl::DistMeshBase<DistMeshPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("mesh")) {
      module.emitError("dist-mesh: the module already has a @mesh");
      return signalPassFailure();
    }
    SmallVector<StringRef> names;
    SmallVector<int64_t> sizes;
    llvm::StringSet<> seen;
    for (const std::string &axis : axes) {
      auto [name, value] = StringRef(axis).split('=');
      name = name.trim();
      int64_t size;
      if (name.empty() || value.trim().getAsInteger(10, size) || size < 1) {
        module.emitError() << "dist-mesh: axis '" << axis
                           << "' is not name=size with a positive size";
        return signalPassFailure();
      }
      if (!seen.insert(name).second) {
        module.emitError() << "dist-mesh: axis '" << name
                           << "' is given twice";
        return signalPassFailure();
      }
      names.push_back(name);
      sizes.push_back(size);
    }
    OpBuilder builder(module.getBodyRegion());
    dist::MeshOp::create(builder, module.getLoc(), "mesh",
                         builder.getStrArrayAttr(names),
                         builder.getDenseI64ArrayAttr(sizes));
  }
};

} // namespace
