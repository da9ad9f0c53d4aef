//===- ShardMlpPlugin.cpp - an example sharding pass as a plugin ----------===//
//
// `example-shard-mlp` is tensor parallelism for the MLP blocks alone: the
// up-projections (GPT-2's c_fc, Llama's gate and up) are column-parallel and
// the down-projection (c_proj, down) row-parallel over one mesh axis;
// attention, norms and embeddings stay replicated. It only annotates
// parameters with `dist.sharding`; `dist-propagate` and `dist-partition` do
// the rest. docs/tutorials/sharding-pass.md walks through it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace {

/// One MLP: the linears whose results meet in the activation, and the linear
/// that reads the activation.
struct MlpBlock {
  SmallVector<tpc::LinearOp, 2> up;
  tpc::LinearOp down;
};

/// The ops an MLP's activation is made of (SwiGLU is `silu(gate) * up`).
bool isActivationStep(Operation *op) {
  return isa<tpc::GeluOp, tpc::SiluOp, tpc::MulOp, tpc::CastOp>(op);
}

/// The MLP whose down-projection is `down`: its input must come from the
/// activation, and the activation from at least one linear.
std::optional<MlpBlock> matchMlp(tpc::LinearOp down) {
  Operation *activation = down.getInput().getDefiningOp();
  if (!activation || isa<tpc::CastOp>(activation) ||
      !isActivationStep(activation))
    return std::nullopt;
  MlpBlock block{{}, down};
  SmallVector<Operation *> work{activation};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (auto linear = dyn_cast_or_null<tpc::LinearOp>(producer)) {
        if (!llvm::is_contained(block.up, linear))
          block.up.push_back(linear);
      } else if (producer && isActivationStep(producer)) {
        work.push_back(producer);
      }
    }
  }
  if (block.up.empty())
    return std::nullopt;
  // Program order, so that diagnostics name gate before up.
  llvm::sort(block.up, [](tpc::LinearOp a, tpc::LinearOp b) {
    return a->isBeforeInBlock(b);
  });
  return block;
}

class ShardMlpPass : public PassWrapper<ShardMlpPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ShardMlpPass)

  ShardMlpPass() = default;
  ShardMlpPass(const ShardMlpPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "example-shard-mlp"; }
  StringRef getDescription() const final {
    return "Tensor parallelism for the MLP blocks only (example plugin)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<dist::DistDialect>();
  }

  void runOnOperation() override;

private:
  Option<std::string> axis{*this, "axis",
                           llvm::cl::desc("The mesh axis to split over"),
                           llvm::cl::init("tp")};

  LogicalResult shardFunction(func::FuncOp func, const dist::MeshInfo &mesh);
  LogicalResult splitParameter(func::FuncOp func, tpc::LinearOp user,
                               Value value, int64_t dim,
                               const dist::MeshInfo &mesh,
                               DenseMap<unsigned, dist::Layout> &chosen);
  void moveBiasAfter(tpc::LinearOp down);
};

void ShardMlpPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<dist::MeshInfo> mesh = dist::MeshInfo::get(module);
  if (failed(mesh))
    return signalPassFailure();
  if (!mesh->sizes.count(axis)) {
    mesh->op.emitError() << "example-shard-mlp: the mesh has no axis '" << axis
                         << "'";
    return signalPassFailure();
  }
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(shardFunction(func, *mesh)))
      return signalPassFailure();
}

LogicalResult ShardMlpPass::shardFunction(func::FuncOp func,
                                          const dist::MeshInfo &mesh) {
  SmallVector<MlpBlock> blocks;
  func.walk([&](tpc::LinearOp linear) {
    if (std::optional<MlpBlock> block = matchMlp(linear))
      blocks.push_back(std::move(*block));
  });
  // Layouts by argument number: a parameter shared by two linears must get
  // the same one from both.
  DenseMap<unsigned, dist::Layout> chosen;
  for (MlpBlock &block : blocks) {
    // Column-parallel: the major output dimension of weight and bias.
    for (tpc::LinearOp up : block.up) {
      bool outIn = up.getLayout() == tpc::WeightLayout::OutIn;
      if (failed(splitParameter(func, up, up.getWeight(), outIn ? 0 : 1, mesh,
                                chosen)) ||
          (up.getBias() &&
           failed(splitParameter(func, up, up.getBias(), 0, mesh, chosen))))
        return failure();
    }
    // Row-parallel: the input dimension of the weight.
    tpc::LinearOp down = block.down;
    int64_t inDim = down.getLayout() == tpc::WeightLayout::OutIn
                        ? down.getWeight().getType().getRank() - 1
                        : 0;
    if (failed(
            splitParameter(func, down, down.getWeight(), inDim, mesh, chosen)))
      return failure();
  }
  // Rewrite only once every block is matched: the blocks hold the linears.
  for (MlpBlock &block : blocks)
    if (block.down.getBias())
      moveBiasAfter(block.down);
  for (auto &[argNumber, layout] : chosen)
    func.setArgAttr(argNumber, dist::kShardingAttr,
                    layout.toAttr(func.getContext(), mesh.symbol()));
  return success();
}

/// Records that the parameter behind `value` (read by `user`) is split along
/// `dim` over the pass's axis.
LogicalResult
ShardMlpPass::splitParameter(func::FuncOp func, tpc::LinearOp user, Value value,
                             int64_t dim, const dist::MeshInfo &mesh,
                             DenseMap<unsigned, dist::Layout> &chosen) {
  // A bf16 model reads its f32 parameters through a cast; the cast has the
  // same shape, so the split carries over.
  while (auto cast = value.getDefiningOp<tpc::CastOp>())
    value = cast.getInput();
  auto arg = dyn_cast<BlockArgument>(value);
  auto name =
      arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tpc.param")
          : StringAttr();
  if (!name)
    return user.emitError()
           << "example-shard-mlp: an MLP weight is not a parameter";
  auto type = cast<RankedTensorType>(arg.getType());
  int64_t parts = mesh.groupSize({axis});
  if (type.getDimSize(dim) % parts != 0)
    return user.emitError()
           << "example-shard-mlp: cannot split dimension " << dim << " ("
           << type.getDimSize(dim) << ") of " << name << " over '" << axis
           << "' (" << parts << " devices)";
  dist::Layout layout = dist::Layout::replicated(type.getRank());
  layout.dims[dim].push_back(axis);
  auto [it, inserted] = chosen.try_emplace(arg.getArgNumber(), layout);
  if (!inserted && it->second != layout)
    return user.emitError() << "example-shard-mlp: " << name
                            << " would be split two ways: " << it->second.str()
                            << " and " << layout.str();
  return success();
}

/// A row-parallel matmul yields partial sums; a bias added inside the linear
/// would be counted once per device, so the sharding rule keeps the
/// contracted dimension of a linear with bias whole. Adding the bias in a
/// separate `tpc.add` lets dist-partition reduce the sum before the add.
void ShardMlpPass::moveBiasAfter(tpc::LinearOp down) {
  OpBuilder builder(down);
  auto matmul = tpc::LinearOp::create(builder, down.getLoc(), down.getInput(),
                                      down.getWeight(), /*bias=*/Value(),
                                      down.getLayout());
  // Named, so that the all_reduce dist-partition inserts before the add
  // (located at the add) says why the add is there.
  Location biasLoc = NameLoc::get(
      builder.getStringAttr("example-shard-mlp: bias after the reduction"),
      down.getLoc());
  auto sum =
      tpc::AddOp::create(builder, biasLoc, matmul.getResult(), down.getBias());
  // Keep `tpc.layer` and the like on both halves.
  for (Operation *op : {matmul.getOperation(), sum.getOperation()})
    op->setDiscardableAttrs(down->getDiscardableAttrDictionary());
  down.replaceAllUsesWith(sum.getResult());
  down.erase();
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TpcShardMlpPlugin", LLVM_VERSION_STRING,
          []() { PassRegistration<ShardMlpPass>(); }};
}
