//===- LowerToRt.cpp - tpc-lower-to-rt ------------------------------------===//
//
// One walk over the entry function: arguments become rt.param / rt.input /
// rt.state, every op an rt.alloc per result and an rt.kernel, the returned
// values rt.outputs and rt.grads. The kernel attributes are those of the
// executable's kernel table (tpcx.fbs), so this file is where the tpc op
// attributes meet the runtime's encoding. A few ops of the training step
// lower to something else than "one kernel, fresh results": the optimizer
// updates run in place on the parameter and state buffers, a constant
// dropout block becomes the kernel's first index, and the slices of the
// inputs are slice kernels.
//
// A partitioned module (dist-partition) lowers the same way, one rank's
// program: the mesh goes to the program, the arguments' global layouts to
// the splits of their buffers, the collectives to kernels 44-48 and the
// dropout ops' layouts to their kernels' splits.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Dist/Transforms/PipelineSchedule.h"
#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "tpc/Conversion/TpcToRt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCLOWERTORT
#include "lib/Conversion/TpcToRt/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::rt;

namespace {

constexpr llvm::StringLiteral kUnpaddedShapeAttrName =
    dist::DistDialect::kUnpaddedShapeAttrName;

/// The attributes of one kernel, as the executable stores them.
struct KernelSpec {
  OpCode opcode;
  SmallVector<int64_t> ints = {};
  SmallVector<double> floats = {};
  uint32_t flags = 0;
  /// For the kernels that draw dropout: the first result's global layout.
  SplitsAttr splits = {};
};

/// rotary, or rotary_scaled with the frequencies' scaling ([factor]:
/// linear, its other three attributes 0; [factor, low, high, original]:
/// llama3).
KernelSpec rotarySpec(double theta, int64_t offset,
                      std::optional<ArrayRef<double>> scaling, bool inverse,
                      bool seqMajor) {
  uint32_t flags = (inverse ? 1u : 0u) | (seqMajor ? 2u : 0u);
  if (!scaling)
    return KernelSpec{OpCode::Rotary, {offset}, {theta}, flags};
  SmallVector<double> floats = {theta, 0.0, 0.0, 0.0, 0.0};
  for (auto [i, value] : llvm::enumerate(*scaling))
    floats[1 + i] = value;
  return KernelSpec{OpCode::RotaryScaled, {offset}, floats, flags};
}

/// The kernel of a tpc op, or nullopt when it has none. Operands and results
/// keep the op's order: the tpc op definitions list them as the kernel table
/// does (a dropout block, the last operand, is folded into the ints by the
/// caller).
std::optional<KernelSpec> kernelFor(Operation *op) {
  using namespace mlir::tpc;
  auto flag = [](bool set, uint32_t bit) { return set ? bit : 0u; };
  return llvm::TypeSwitch<Operation *, std::optional<KernelSpec>>(op)
      .Case([](EmbeddingOp) { return KernelSpec{OpCode::Embedding}; })
      .Case([&](LinearOp op) {
        return KernelSpec{OpCode::Linear,
                          {},
                          {},
                          flag(op.getLayout() == WeightLayout::OutIn, 1)};
      })
      .Case([&](BatchMatmulOp op) {
        return KernelSpec{OpCode::BatchMatmul,
                          {},
                          {op.getScale().convertToDouble()},
                          flag(op.getTransposeLhs(), 1) |
                              flag(op.getTransposeRhs(), 2)};
      })
      .Case([](LayerNormOp op) {
        return KernelSpec{
            OpCode::LayerNorm, {}, {op.getEpsilon().convertToDouble()}};
      })
      .Case([](RmsNormOp op) {
        return KernelSpec{
            OpCode::RmsNorm, {}, {op.getEpsilon().convertToDouble()}};
      })
      .Case([&](GeluOp op) {
        return KernelSpec{
            OpCode::Gelu,
            {},
            {},
            flag(op.getApproximation() == GeluApproximation::Tanh, 1)};
      })
      .Case([](SiluOp) { return KernelSpec{OpCode::Silu}; })
      .Case([](AddOp) { return KernelSpec{OpCode::Add}; })
      .Case([](MulOp) { return KernelSpec{OpCode::Mul}; })
      .Case([](DropoutOp op) {
        return KernelSpec{OpCode::Dropout,
                          {op.getStreamAttr().getInt()},
                          {op.getRate().convertToDouble()}};
      })
      .Case([&](SoftmaxOp op) {
        return KernelSpec{OpCode::Softmax, {}, {}, flag(op.getCausal(), 1)};
      })
      .Case([&](AttentionOp op) {
        return KernelSpec{op.getLse() ? OpCode::AttentionLse
                                      : OpCode::Attention,
                          {op.getDropoutStreamAttr().getInt()},
                          {op.getScale().convertToDouble(),
                           op.getDropoutRate().convertToDouble()},
                          flag(op.getCausal(), 1) | flag(op.getSeqMajor(), 2)};
      })
      .Case([](RotaryOp op) {
        return rotarySpec(op.getTheta().convertToDouble(),
                          op.getOffsetAttr().getInt(), op.getScaling(),
                          /*inverse=*/false, op.getSeqMajor());
      })
      .Case([](CrossEntropyOp op) {
        return KernelSpec{OpCode::CrossEntropy,
                          {op.getIgnoreIndexAttr().getInt()}};
      })
      .Case([](LossMeanOp) { return KernelSpec{OpCode::LossMean}; })
      .Case([](ReshapeOp) { return KernelSpec{OpCode::Copy}; })
      .Case([](TransposeOp op) {
        return KernelSpec{OpCode::Transpose,
                          SmallVector<int64_t>(op.getPermutation())};
      })
      .Case([](SliceOp op) {
        return KernelSpec{OpCode::Slice,
                          {op.getDimAttr().getInt(),
                           op.getOffsetAttr().getInt(),
                           op.getSizeAttr().getInt()}};
      })
      .Case([](RepeatOp op) {
        return KernelSpec{
            OpCode::Repeat,
            {op.getDimAttr().getInt(), op.getRepeatsAttr().getInt()}};
      })
      .Case([](CastOp) { return KernelSpec{OpCode::Cast}; })
      // Backward.
      .Case([](EmbeddingGradOp) { return KernelSpec{OpCode::EmbeddingGrad}; })
      .Case([&](LinearInputGradOp op) {
        return KernelSpec{OpCode::LinearInputGrad,
                          {},
                          {},
                          flag(op.getLayout() == WeightLayout::OutIn, 1)};
      })
      .Case([&](LinearWeightGradOp op) {
        return KernelSpec{OpCode::LinearWeightGrad,
                          {},
                          {},
                          flag(op.getLayout() == WeightLayout::OutIn, 1)};
      })
      .Case([](SumToOp) { return KernelSpec{OpCode::SumTo}; })
      .Case([](LayerNormInputGradOp op) {
        return KernelSpec{OpCode::LayerNormInputGrad,
                          {},
                          {op.getEpsilon().convertToDouble()}};
      })
      .Case([](LayerNormParamGradOp op) {
        return KernelSpec{OpCode::LayerNormParamGrad,
                          {},
                          {op.getEpsilon().convertToDouble()}};
      })
      .Case([](RmsNormInputGradOp op) {
        return KernelSpec{
            OpCode::RmsNormInputGrad, {}, {op.getEpsilon().convertToDouble()}};
      })
      .Case([](RmsNormParamGradOp op) {
        return KernelSpec{
            OpCode::RmsNormParamGrad, {}, {op.getEpsilon().convertToDouble()}};
      })
      .Case([&](GeluGradOp op) {
        return KernelSpec{
            OpCode::GeluGrad,
            {},
            {},
            flag(op.getApproximation() == GeluApproximation::Tanh, 1)};
      })
      .Case([](SiluGradOp) { return KernelSpec{OpCode::SiluGrad}; })
      .Case([](DropoutMaskOp op) {
        return KernelSpec{OpCode::DropoutMask,
                          {op.getStreamAttr().getInt()},
                          {op.getRate().convertToDouble()}};
      })
      .Case([](ApplyMaskOp op) {
        return KernelSpec{
            OpCode::ApplyMask, {}, {op.getRate().convertToDouble()}};
      })
      // A causally masked probability is 0, so the gradient needs no flag.
      .Case([](SoftmaxGradOp) { return KernelSpec{OpCode::SoftmaxGrad}; })
      .Case([&](AttentionGradOp op) {
        return KernelSpec{OpCode::AttentionGrad,
                          {op.getDropoutStreamAttr().getInt()},
                          {op.getScale().convertToDouble(),
                           op.getDropoutRate().convertToDouble()},
                          flag(op.getCausal(), 1) | flag(op.getSeqMajor(), 2)};
      })
      .Case([](RotaryGradOp op) {
        return rotarySpec(op.getTheta().convertToDouble(),
                          op.getOffsetAttr().getInt(), op.getScaling(),
                          /*inverse=*/true, op.getSeqMajor());
      })
      .Case([](CrossEntropyGradOp op) {
        return KernelSpec{OpCode::CrossEntropyGrad,
                          {op.getIgnoreIndexAttr().getInt()}};
      })
      .Case([](PadOp op) {
        return KernelSpec{
            OpCode::Pad,
            {op.getDimAttr().getInt(), op.getOffsetAttr().getInt()}};
      })
      .Case([](SumGroupsOp op) {
        return KernelSpec{
            OpCode::SumGroups,
            {op.getDimAttr().getInt(), op.getRepeatsAttr().getInt()}};
      })
      // Driver and optimizer (the updates are lowered in place, see
      // Lowering::lowerUpdate).
      .Case([](CountTargetsOp op) {
        return KernelSpec{OpCode::CountTargets,
                          {op.getIgnoreIndexAttr().getInt()}};
      })
      .Case([](InverseCountOp) { return KernelSpec{OpCode::InverseCount}; })
      .Case([](SumSquaresOp) { return KernelSpec{OpCode::SumSquares}; })
      .Case([](ClipCoefficientOp op) {
        return KernelSpec{
            OpCode::ClipCoefficient, {}, {op.getMaxNorm().convertToDouble()}};
      })
      .Case([&](LrScheduleOp op) {
        return KernelSpec{
            OpCode::LrSchedule,
            {op.getWarmupAttr().getInt(), op.getTotalAttr().getInt()},
            {op.getLr().convertToDouble(), op.getMinLr().convertToDouble()},
            flag(op.getSchedule() == LrScheduleKind::Cosine, 1)};
      })
      .Case([](AdamWUpdateOp op) {
        return KernelSpec{OpCode::AdamWUpdate,
                          {},
                          {op.getBeta1().convertToDouble(),
                           op.getBeta2().convertToDouble(),
                           op.getEps().convertToDouble(),
                           op.getWeightDecay().convertToDouble()}};
      })
      .Case([](SgdUpdateOp op) {
        // Without momentum torch keeps no buffer: neither does the kernel.
        if (!op.getMomentumBuffer())
          return KernelSpec{OpCode::SgdUpdatePlain,
                            {},
                            {op.getWeightDecay().convertToDouble()}};
        return KernelSpec{OpCode::SgdUpdate,
                          {},
                          {op.getMomentum().convertToDouble(),
                           op.getWeightDecay().convertToDouble()}};
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// What a buffer type of `bufferTypeOf` must be, for its diagnostics.
constexpr llvm::StringLiteral kBufferTypeRule =
    "a static tensor of f32, bf16, f16, i32, i64 or i8 of fewer than 2^63 "
    "bytes";

/// The buffer type of a tensor value: same shape and element type, static,
/// of an element type the executable has, and a byte size that fits the
/// executable's int64 sizes.
FailureOr<MemRefType> bufferTypeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return failure();
  Type element = tensor.getElementType();
  if (!isa<Float32Type, BFloat16Type, Float16Type>(element) &&
      !element.isSignlessInteger(32) && !element.isSignlessInteger(64) &&
      !element.isSignlessInteger(8))
    return failure();
  auto buffer = MemRefType::get(tensor.getShape(), element);
  if (getBufferBytes(buffer) == std::numeric_limits<int64_t>::max())
    return failure();
  return buffer;
}

/// The uses of `value`, looking through the ops that only change its form:
/// casts (f32 master weights of a 16-bit model), slices of it (microbatches
/// of the inputs) and the collectives that move its blocks (a rank's part of
/// a microbatch).
void forEachUse(Value value, function_ref<void(OpOperand &)> fn) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tpc::CastOp, tensor::ExtractSliceOp, dist::ShardSliceOp,
            dist::AllGatherOp, dist::AllToAllOp>(user))
      forEachUse(user->getResult(0), fn);
    else
      fn(use);
  }
}

/// Whether `value` is the reduced output of a row-parallel linear:
/// dist-partition adds such a linear's bias after the all_reduce or
/// reduce_scatter, so that it counts once.
bool isReducedLinear(Value value) {
  Operation *def = value.getDefiningOp();
  return isa_and_nonnull<dist::AllReduceOp, dist::ReduceScatterOp>(def) &&
         def->getOperand(0).getDefiningOp<tpc::LinearOp>();
}

/// How tpc-run initializes a parameter without weights, from its uses: a
/// norm scale starts at one, a bias at zero, anything else is drawn.
ParamInit initOf(Value param) {
  bool isBias = false, isScale = false;
  forEachUse(param, [&](OpOperand &use) {
    Operation *user = use.getOwner();
    Value used = use.get();
    if (auto norm = dyn_cast<tpc::LayerNormOp>(user)) {
      isScale |= norm.getWeight() == used;
      isBias |= norm.getBias() == used;
    } else if (auto norm = dyn_cast<tpc::RmsNormOp>(user)) {
      isScale |= norm.getWeight() == used;
    } else if (auto linear = dyn_cast<tpc::LinearOp>(user)) {
      isBias |= linear.getBias() == used;
    } else if (auto add = dyn_cast<tpc::AddOp>(user)) {
      isBias |= add.getRhs() == used && isReducedLinear(add.getLhs());
    }
  });
  if (isScale)
    return ParamInit::Ones;
  return isBias ? ParamInit::Zeros : ParamInit::Normal;
}

/// The product of the sizes of `axes` on `mesh` (1 without a mesh).
int64_t axesProduct(dist::MeshOp mesh, ArrayRef<StringRef> axes) {
  int64_t product = 1;
  if (mesh)
    for (StringRef axis : axes)
      if (std::optional<int64_t> size = mesh.getAxisSize(axis))
        product *= *size;
  return product;
}

/// The global view size of dimension `dim` of `value`: for a function
/// argument split by dist-partition (looking through casts and the
/// shard_slices that took this rank's block), its size before the split and
/// any padding; else the value's own.
int64_t globalDimSize(Value value, unsigned dim) {
  while (
      isa_and_nonnull<tpc::CastOp, dist::ShardSliceOp>(value.getDefiningOp()))
    value = value.getDefiningOp()->getOperand(0);
  int64_t local = cast<RankedTensorType>(value.getType()).getDimSize(dim);
  auto arg = dyn_cast<BlockArgument>(value);
  auto function =
      arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!function)
    return local;
  unsigned i = arg.getArgNumber();
  if (auto unpadded = function.getArgAttrOfType<DenseI64ArrayAttr>(
          i, kUnpaddedShapeAttrName);
      unpadded && dim < unpadded.size())
    return unpadded[dim];
  auto sharding = function.getArgAttrOfType<dist::ShardingAttr>(
      i, dist::DistDialect::kShardingAttrName);
  auto module = function->getParentOfType<ModuleOp>();
  if (!sharding || !module || dim >= sharding.getDims().size())
    return local;
  auto mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
      module, sharding.getMesh());
  return local * axesProduct(mesh, sharding.getDimAxes(dim));
}

/// The classes of a cross-entropy's whole vocabulary: `vocab` when padded,
/// else its logits' columns times the group splitting them
/// (`dist.vocab_axes`).
int64_t wholeVocabulary(Operation *op) {
  if (auto vocab = op->getAttrOfType<IntegerAttr>("vocab"))
    return vocab.getInt();
  auto logits = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t columns = logits.getShape().back();
  auto axes = op->getAttrOfType<ArrayAttr>(dist::kVocabAxesAttr);
  auto module = op->getParentOfType<ModuleOp>();
  if (!axes || !module || module.getOps<dist::MeshOp>().empty())
    return columns;
  SmallVector<StringRef> names = llvm::map_to_vector(
      axes, [](Attribute a) { return cast<StringAttr>(a).getValue(); });
  return columns * axesProduct(*module.getOps<dist::MeshOp>().begin(), names);
}

/// The exclusive upper bound of an integer input's values, from its uses
/// (the smallest when several give one), or 0 when none does. Token ids are
/// global: a split embedding table bounds them by its global row count.
int64_t valueBoundOf(Value input) {
  int64_t bound = 0;
  auto tighten = [&](int64_t b) {
    bound = bound == 0 ? b : std::min(bound, b);
  };
  forEachUse(input, [&](OpOperand &use) {
    Operation *user = use.getOwner();
    Value used = use.get();
    if (auto embedding = dyn_cast<tpc::EmbeddingOp>(user)) {
      if (embedding.getIds() == used)
        tighten(globalDimSize(embedding.getTable(), 0));
    } else if (auto ce = dyn_cast<tpc::CrossEntropyOp>(user)) {
      if (ce.getLabels() != used)
        return;
      // The real classes of the whole vocabulary: padding is never a
      // target, and split logits hold a block of it.
      tighten(wholeVocabulary(ce));
    }
  });
  return bound;
}

class Lowering {
public:
  /// `mesh` is the module's dist.mesh, null for a single-device module.
  /// `microbatches` > 0: the function is a one-microbatch template (its
  /// microbatch's ops marked `tpc.microbatch_index`) lowered as functions
  /// run by actions for that many microbatches (lowerAsActions).
  Lowering(func::FuncOp function, dist::MeshOp mesh, int64_t microbatches = 0)
      : function(function), builder(function), meshOp(mesh) {
    actionMicrobatches = microbatches;
    if (mesh)
      this->mesh = MeshAttr::get(function.getContext(), mesh.getAxisNames(),
                                 mesh.getAxisSizes());
  }

  /// Builds the program before the function; on failure the caller erases
  /// it.
  FailureOr<ProgramOp> run();

private:
  /// See the constructor; 0: one kernel list, run once per step.
  int64_t actionMicrobatches = 0;
  /// The functions' kernel ranges and names, in program order.
  struct FunctionRange {
    std::string name;
    int64_t first, count;
    bool perMicrobatch;
  };
  SmallVector<FunctionRange> functions;
  int64_t kernelCount = 0;
  /// Lowers the body as the prologue, the per-microbatch target counts,
  /// their inverse, the microbatch and the epilogue functions; a pipeline
  /// template per stage, its microbatch's functions those
  /// dist-pipeline-stages marked.
  LogicalResult lowerAsActions(ProgramOp program);
  /// One stage's (or one device's) functions; its action list. `schedule`:
  /// the stage's entry of dist.stage_actions (null: one device).
  FailureOr<DenseI64ArrayAttr> lowerStageAsActions(ArrayRef<Operation *> ops,
                                           DictionaryAttr schedule);
  /// The slots of each pool (a stage's values of one kind handed between
  /// its functions).
  SmallVector<int64_t> poolSlots;
  /// Sizes the stage's pools (from `firstPool` on) by the runs of its
  /// action list, (function, microbatch) each.
  void sizePools(ArrayRef<std::pair<int64_t, int64_t>> runs,
                 int64_t firstPool);

  /// The pipeline stage of the op being lowered (null: no pipeline), and
  /// its phase and microbatch, copied onto its kernels.
  IntegerAttr stage;
  Attribute phase, microbatch;
  LogicalResult lowerArgument(BlockArgument arg);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerReturn(func::ReturnOp ret);

  /// One kernel reading `operands` with fresh rt.alloc results for
  /// `results` (those without a buffer yet).
  LogicalResult emitKernel(Operation *op, const KernelSpec &spec,
                           ValueRange operands, ValueRange results);
  KernelOp createKernel(Location loc, const KernelSpec &spec,
                    ArrayRef<Value> operandBuffers,
                    ArrayRef<Value> resultBuffers);
  /// A fresh rt.alloc for `result` of `op`.
  FailureOr<Value> allocFor(Operation *op, Value result);

  LogicalResult lowerExtractSlice(tensor::ExtractSliceOp op);
  /// The kernel of a dist collective (axes as mesh indices).
  FailureOr<KernelSpec> collectiveKernel(Operation *op);
  /// A dist.send or dist.recv of one pair: a send or recv kernel.
  LogicalResult lowerTransfer(Operation *op);
  LogicalResult lowerVocabulary(Operation *op, KernelSpec &spec);
  /// The mesh index of each axis in `axes` (names) of `op` on mesh `meshRef`.
  FailureOr<SmallVector<int64_t>>
  meshIndices(Operation *op, FlatSymbolRefAttr meshRef, ArrayAttr axes);
  /// The splits of `sharding`, a global layout of a value of rank `rank`
  /// (`what` names it for errors at `op`); null when nothing is split.
  FailureOr<SplitsAttr> splitsOf(Operation *op, const Twine &what,
                                 dist::ShardingAttr sharding, int64_t rank);
  /// The global shape of a value of shape `local` split by `splits`.
  FailureOr<SmallVector<int64_t>> globalShape(Operation *op, const Twine &what,
                                              SplitsAttr splits,
                                              ArrayRef<int64_t> local);
  /// The kernel splits of a dropout op (its `dist.sharding`) and its first
  /// index: the dropout block times the global elements of one block.
  LogicalResult lowerDropoutLayout(Operation *op, const tpc::DropoutDraw &draw,
                                   KernelSpec &spec);
  /// An optimizer state lives in its parameter's layout.
  LogicalResult checkStateLayouts();
  LogicalResult lowerUpdate(Operation *op, const KernelSpec &spec);
  /// The buffer of operand `value` of `op`; an error when it has none (a
  /// constant that no op folded).
  FailureOr<Value> bufferOf(Operation *op, Value value);
  /// Checks a returned value `value` tagged tpc.update or tpc.state: the
  /// new value an optimizer update computed in place for the argument whose
  /// `attrName` attribute is `expected`.
  LogicalResult checkUpdatedInPlace(func::ReturnOp ret, unsigned i, Value value,
                                    StringRef attrName, Attribute expected);

  func::FuncOp function;
  OpBuilder builder;
  /// The buffer of every tensor value of the function.
  DenseMap<Value, Value> buffers;
  /// The last buffer op made for an argument: buffers of the whole program
  /// made later (momentum state) go after it.
  Operation *lastArgumentBuffer = nullptr;
  /// The module's mesh, as dist and as rt has it (null: one device).
  dist::MeshOp meshOp;
  MeshAttr mesh;
  /// The global layout (splits, unpadded shape) of each parameter and
  /// state argument, by Hugging Face name, for checkStateLayouts.
  struct Layout {
    SplitsAttr splits;
    DenseI64ArrayAttr unpadded;
  };
  llvm::StringMap<Layout> paramLayouts;
  SmallVector<std::tuple<BlockArgument, StringAttr, Layout>> stateLayouts;
};

} // namespace

LogicalResult Lowering::lowerArgument(BlockArgument arg) {
  unsigned i = arg.getArgNumber();
  auto param = function.getArgAttrOfType<StringAttr>(i, tpc::kParamAttrName);
  auto input = function.getArgAttrOfType<StringAttr>(i, tpc::kInputAttrName);
  auto state =
      function.getArgAttrOfType<DictionaryAttr>(i, tpc::kStateAttrName);
  if ((param ? 1 : 0) + (input ? 1 : 0) + (state ? 1 : 0) != 1)
    return function.emitError()
           << "argument " << i << " must have exactly one of '"
           << tpc::kParamAttrName << "', '" << tpc::kInputAttrName
           << "' (a string) and '" << tpc::kStateAttrName << "' (a dictionary)";
  StringAttr stateName, stateParam;
  if (state) {
    stateName = state.getAs<StringAttr>("name");
    stateParam = state.getAs<StringAttr>("param");
    if (!stateName || !stateParam)
      return function.emitError()
             << "argument " << i << ": '" << tpc::kStateAttrName
             << "' must hold the strings 'name' and 'param' but is " << state;
  }
  std::string name =
      param   ? param.getValue().str()
      : input ? input.getValue().str()
              : (stateParam.getValue() + "." + stateName.getValue()).str();
  FailureOr<MemRefType> type = bufferTypeOf(arg.getType());
  if (failed(type))
    return function.emitError()
           << "argument " << i << " ('" << name << "') has type "
           << arg.getType() << ", not " << kBufferTypeRule;
  Location loc = arg.getLoc();
  std::string what = "argument " + std::to_string(i) + " ('" + name + "')";

  // The global layout dist-partition left on the argument.
  SplitsAttr splits;
  if (Attribute attr =
          function.getArgAttr(i, dist::DistDialect::kShardingAttrName)) {
    auto sharding = dyn_cast<dist::ShardingAttr>(attr);
    if (!sharding)
      return function.emitError()
             << what << ": '" << dist::DistDialect::kShardingAttrName
             << "' must be a #dist.sharding but is " << attr;
    FailureOr<SplitsAttr> lowered =
        splitsOf(function, what, sharding, type->getRank());
    if (failed(lowered))
      return failure();
    splits = *lowered;
  }
  FailureOr<SmallVector<int64_t>> global =
      globalShape(function, what, splits, type->getShape());
  if (failed(global))
    return failure();
  DenseI64ArrayAttr unpadded;
  if (Attribute attr = function.getArgAttr(i, kUnpaddedShapeAttrName)) {
    unpadded = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!unpadded || input)
      return function.emitError()
             << what << ": '" << kUnpaddedShapeAttrName
             << "' must be an array<i64> on a parameter or state, but is "
             << attr;
    bool fits = static_cast<size_t>(unpadded.size()) == global->size();
    for (auto [u, g] : llvm::zip(unpadded.asArrayRef(), *global))
      fits &= u >= 0 && u <= g;
    if (!fits)
      return function.emitError()
             << what << ": '" << kUnpaddedShapeAttrName << "' ["
             << unpadded.asArrayRef()
             << "] must have the rank of the global shape [" << *global
             << "] and be no larger in any dimension";
    // Padding to the same shape is no padding.
    if (unpadded.asArrayRef() == ArrayRef<int64_t>(*global))
      unpadded = {};
  }

  if (param) {
    // The view is global and unpadded; the buffer is this rank's block.
    ArrayRef<int64_t> view = unpadded ? unpadded.asArrayRef() : *global;
    auto hfShape =
        function.getArgAttrOfType<DenseI64ArrayAttr>(i, tpc::kHfShapeAttrName);
    if (!hfShape) {
      if (function.getArgAttr(i, tpc::kHfShapeAttrName))
        return function.emitError()
               << "argument " << i << " ('" << name << "'): '"
               << tpc::kHfShapeAttrName << "' must be an array<i64>";
      hfShape = builder.getDenseI64ArrayAttr(view);
    }
    buffers[arg] = ParamOp::create(
        builder, loc, *type, param, hfShape,
        ParamInitAttr::get(builder.getContext(), initOf(arg)),
        builder.getF64FloatAttr(0.02),
        /*offset=*/IntegerAttr(), /*view_shape=*/unpadded,
        /*padded_shape=*/
        unpadded ? builder.getDenseI64ArrayAttr(*global) : DenseI64ArrayAttr(),
        splits);
    paramLayouts[param.getValue()] = {splits, unpadded};
  } else if (input) {
    IntegerAttr pooled;
    // The inputs the microbatches slice (input_ids, labels; not `step`).
    bool sliced = llvm::any_of(arg.getUsers(), [](Operation *user) {
      return isa<tensor::ExtractSliceOp>(user);
    });
    if (actionMicrobatches > 0 && sliced) {
      // One microbatch a slot: the template reads microbatch 0's rows.
      SmallVector<int64_t> shape(type->getShape());
      if (shape.empty() || shape[0] % actionMicrobatches != 0)
        return function.emitError()
               << "input '" << input.getValue() << "' of type " << *type
               << " does not split into " << actionMicrobatches
               << " microbatches along its first dimension";
      shape[0] /= actionMicrobatches;
      *type = MemRefType::get(shape, type->getElementType());
      pooled = builder.getI64IntegerAttr(actionMicrobatches);
    }
    buffers[arg] = InputOp::create(builder, loc, *type, input,
                                   builder.getI64IntegerAttr(valueBoundOf(arg)),
                                   /*offset=*/IntegerAttr(), splits, pooled);
  } else {
    stateLayouts.emplace_back(arg, stateParam, Layout{splits, unpadded});
    buffers[arg] = StateOp::create(builder, loc, *type, stateName, stateParam,
                                   /*offset=*/IntegerAttr());
  }
  lastArgumentBuffer = buffers[arg].getDefiningOp();
  return success();
}

FailureOr<Value> Lowering::bufferOf(Operation *op, Value value) {
  if (Value buffer = buffers.lookup(value))
    return buffer;
  InFlightDiagnostic diag = op->emitError()
                            << "cannot lower '" << op->getName()
                            << "' to rt: an operand has no buffer";
  if (Operation *def = value.getDefiningOp())
    diag << " (it is the result of '" << def->getName()
         << "'; no kernel computes constants)";
  return diag;
}

FailureOr<Value> Lowering::allocFor(Operation *op, Value result) {
  FailureOr<MemRefType> type = bufferTypeOf(result.getType());
  if (failed(type))
    return op->emitError() << "result "
                           << cast<OpResult>(result).getResultNumber()
                           << " has type " << result.getType() << ", not "
                           << kBufferTypeRule;
  Value buffer = AllocOp::create(builder, op->getLoc(), *type,
                                 /*offset=*/IntegerAttr(), /*pool=*/IntegerAttr());
  buffers[result] = buffer;
  return buffer;
}

KernelOp Lowering::createKernel(Location loc, const KernelSpec &spec,
                            ArrayRef<Value> operandBuffers,
                            ArrayRef<Value> resultBuffers) {
  ++kernelCount;
  auto kernel = KernelOp::create(
      builder, loc, OpCodeAttr::get(builder.getContext(), spec.opcode),
      operandBuffers, resultBuffers, builder.getDenseI64ArrayAttr(spec.ints),
      builder.getDenseF64ArrayAttr(spec.floats),
      builder.getUI32IntegerAttr(spec.flags), spec.splits, stage);
  if (phase)
    kernel->setAttr(tpc::kPhaseAttrName, phase);
  if (microbatch)
    kernel->setAttr(tpc::kMicrobatchIndexAttrName, microbatch);
  return kernel;
}

LogicalResult Lowering::emitKernel(Operation *op, const KernelSpec &spec,
                                   ValueRange operands, ValueRange results) {
  SmallVector<Value> operandBuffers, resultBuffers;
  for (Value operand : operands) {
    FailureOr<Value> buffer = bufferOf(op, operand);
    if (failed(buffer))
      return failure();
    operandBuffers.push_back(*buffer);
  }
  for (Value result : results) {
    Value buffer = buffers.lookup(result);
    if (!buffer) {
      FailureOr<Value> fresh = allocFor(op, result);
      if (failed(fresh))
        return failure();
      buffer = *fresh;
    }
    resultBuffers.push_back(buffer);
  }
  KernelOp kernel =
      createKernel(op->getLoc(), spec, operandBuffers, resultBuffers);
  // The cost model counts recomputation apart (tpc-remat marks it).
  if (op->hasAttr(tpc::kRecomputeAttrName))
    kernel->setAttr(tpc::kRecomputeAttrName, builder.getUnitAttr());
  return success();
}

/// A slice along one dimension (a microbatch of the inputs) is a slice
/// kernel; the whole tensor is the same buffer.
LogicalResult Lowering::lowerExtractSlice(tensor::ExtractSliceOp op) {
  RankedTensorType source = op.getSourceType(), result = op.getResultType();
  // A template's microbatch of an input is the input's slot.
  if (auto arg = dyn_cast<BlockArgument>(op.getSource());
      arg && actionMicrobatches > 0 &&
      function.getArgAttr(arg.getArgNumber(), tpc::kInputAttrName)) {
    Value pooled = buffers.lookup(arg);
    if (!pooled || cast<MemRefType>(pooled.getType()).getShape() !=
                       result.getShape())
      return op.emitError() << "cannot lower '" << op->getName()
                            << "' to rt: in a template, an input is read as "
                               "its microbatch ("
                            << result << ")";
    buffers[op.getResult()] = pooled;
    return success();
  }
  auto fail = [&]() {
    return op.emitError()
           << "cannot lower '" << op->getName()
           << "' to rt: only a slice with constant offsets and unit strides "
              "along one dimension, of the same rank, has a kernel";
  };
  if (source.getRank() != result.getRank() || !source.hasStaticShape() ||
      !result.hasStaticShape())
    return fail();
  std::optional<int64_t> dim;
  int64_t sliceOffset = 0;
  for (int64_t d = 0, e = source.getRank(); d < e; ++d) {
    std::optional<int64_t> offset =
        getConstantIntValue(op.getMixedOffsets()[d]);
    std::optional<int64_t> stride =
        getConstantIntValue(op.getMixedStrides()[d]);
    if (!offset || !stride || *stride != 1)
      return fail();
    if (*offset == 0 && result.getDimSize(d) == source.getDimSize(d))
      continue;
    if (dim)
      return fail();
    dim = d;
    sliceOffset = *offset;
  }
  FailureOr<Value> sourceBuffer = bufferOf(op, op.getSource());
  if (failed(sourceBuffer))
    return failure();
  if (!dim) {
    buffers[op.getResult()] = *sourceBuffer;
    return success();
  }
  return emitKernel(
      op,
      KernelSpec{OpCode::Slice, {*dim, sliceOffset, result.getDimSize(*dim)}},
      op.getSource(), op.getResult());
}

/// The optimizer updates its parameter and state arguments in place: their
/// new values are the argument buffers, so nothing after the update may
/// read the old values.
LogicalResult Lowering::lowerUpdate(Operation *op, const KernelSpec &spec) {
  for (OpResult result : op->getResults()) {
    unsigned operandIndex =
        *getInPlaceOperand(spec.opcode, result.getResultNumber());
    Value old = op->getOperand(operandIndex);
    auto arg = dyn_cast<BlockArgument>(old);
    StringRef attrName =
        operandIndex == 0 ? tpc::kParamAttrName : tpc::kStateAttrName;
    if (!arg || arg.getOwner()->getParentOp() != function ||
        !function.getArgAttr(arg.getArgNumber(), attrName))
      return op->emitError()
             << "cannot lower '" << op->getName() << "' to rt: operand "
             << operandIndex << " must be a '" << attrName
             << "' argument, which the kernel updates in place";
    // A pipeline stage reads only its own rank's copy.
    auto stageOf = [](Operation *user) {
      return user->getAttr(dist::kPipelineRankAttrName);
    };
    for (Operation *user : old.getUsers())
      if (user != op && !user->isBeforeInBlock(op) &&
          stageOf(user) == stageOf(op)) {
        InFlightDiagnostic diag =
            op->emitError() << "cannot lower '" << op->getName()
                            << "' to rt: it updates operand " << operandIndex
                            << " in place, but '" << user->getName()
                            << "' reads the old value after it";
        diag.attachNote(user->getLoc()) << "the later reader";
        return diag;
      }
    buffers[result] = buffers.lookup(old);
  }
  return emitKernel(op, spec, op->getOperands(), op->getResults());
}

LogicalResult Lowering::lowerOp(Operation *op) {
  // Constants have no kernel: the ops that read them fold them (a dropout
  // block), and an op that reads any other constant is refused by bufferOf.
  if (isa<arith::ConstantOp>(op))
    return success();
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return lowerExtractSlice(slice);
  if (isa<dist::ShardOp>(op))
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: it annotates a global value; run "
                              "dist-partition first";
  if (isa<dist::SendOp, dist::RecvOp>(op))
    return lowerTransfer(op);
  if (isa<dist::WaitOp>(op))
    return emitKernel(op, KernelSpec{OpCode::Wait}, op->getOperands(), {});
  if (isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
          dist::ShardSliceOp, dist::ShardPadOp, dist::AllToAllOp>(op)) {
    FailureOr<KernelSpec> spec = collectiveKernel(op);
    if (failed(spec))
      return failure();
    return emitKernel(op, *spec, op->getOperands(), op->getResults());
  }
  std::optional<KernelSpec> spec = kernelFor(op);
  if (!spec) {
    if (isa<scf::ForOp, func::CallOp>(op))
      return op->emitError()
             << "cannot lower '" << op->getName()
             << "' to rt: inline the calls and unroll the microbatch loop "
                "first (tpc-unroll-train-step)";
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: no runtime kernel implements it";
  }
  if (isa<tpc::AdamWUpdateOp, tpc::SgdUpdateOp>(op))
    return lowerUpdate(op, *spec);
  if (failed(lowerVocabulary(op, *spec)))
    return failure();
  ValueRange operands = op->getOperands();
  if (auto drawing = dyn_cast<tpc::TpcDropoutDrawOpInterface>(op)) {
    tpc::DropoutDraw draw = drawing.getDropoutDraw();
    if (failed(lowerDropoutLayout(op, draw, *spec)))
      return failure();
    if (draw.block)
      operands = operands.drop_back();
  }
  return emitKernel(op, *spec, operands, op->getResults());
}

LogicalResult Lowering::lowerDropoutLayout(Operation *op,
                                           const tpc::DropoutDraw &draw,
                                           KernelSpec &spec) {
  std::string what = ("'" + op->getName().getStringRef() + "'").str();
  SmallVector<int64_t> global = draw.shape;
  if (Attribute attr = op->getAttr(dist::DistDialect::kShardingAttrName)) {
    auto sharding = dyn_cast<dist::ShardingAttr>(attr);
    if (!sharding)
      return op->emitError()
             << what << ": '" << dist::DistDialect::kShardingAttrName
             << "' must be a #dist.sharding but is " << attr;
    auto first = cast<RankedTensorType>(op->getResult(0).getType());
    FailureOr<SplitsAttr> splits =
        splitsOf(op, what, sharding, first.getRank());
    if (failed(splits))
      return failure();
    spec.splits = *splits;
    // The draw's leading dimensions are the first result's: split alike.
    FailureOr<SmallVector<int64_t>> firstGlobal =
        globalShape(op, what, spec.splits, first.getShape());
    if (failed(firstGlobal))
      return failure();
    for (unsigned d = 0; d < draw.shared; ++d)
      global[d] = (*firstGlobal)[draw.resultDim(d)];
  }
  if (!draw.block)
    return success();
  // A constant dropout block n draws the elements from n times the block's
  // global size on: the kernel's first index.
  APInt index;
  int64_t blockElements = 1, first;
  bool overflow = false;
  for (int64_t size : global)
    overflow |= llvm::MulOverflow(blockElements, size, blockElements);
  if (!matchPattern(draw.block, m_ConstantInt(&index)) || index.isNegative() ||
      overflow || llvm::MulOverflow(index.getSExtValue(), blockElements, first))
    return op->emitError()
           << "cannot lower '" << op->getName()
           << "' to rt: its dropout block must be a non-negative constant "
              "(unroll the microbatch loop first: tpc-unroll-train-step)";
  spec.ints.push_back(first);
  return success();
}

FailureOr<SplitsAttr> Lowering::splitsOf(Operation *op, const Twine &what,
                                         dist::ShardingAttr sharding,
                                         int64_t rank) {
  if (!meshOp)
    return op->emitError() << what << " has a layout on " << sharding.getMesh()
                           << " but the module has no dist.mesh";
  if (sharding.getMesh().getValue() != meshOp.getSymName())
    return op->emitError() << what << " has a layout on " << sharding.getMesh()
                           << ", not on the module's "
                           << "mesh @" << meshOp.getSymName();
  if (!sharding.getPartial().empty())
    return op->emitError() << what << " is a partial sum over ["
                           << llvm::join(sharding.getPartialAxes(), ", ")
                           << "]; only whole and split values lower to rt (run "
                              "dist-partition first)";
  if (static_cast<int64_t>(sharding.getDims().size()) != rank)
    return op->emitError() << what << " has a layout of "
                           << sharding.getDims().size()
                           << " dimensions but rank " << rank;
  bool split = false;
  for (unsigned dim = 0, e = sharding.getDims().size(); dim < e; ++dim)
    for (StringRef axis : sharding.getDimAxes(dim)) {
      if (!mesh.getAxisIndex(axis))
        return op->emitError()
               << what << ": '" << axis << "' (dimension " << dim
               << ") is not an axis of @" << meshOp.getSymName();
      split = true;
    }
  if (!split)
    return SplitsAttr();
  return SplitsAttr::get(op->getContext(), sharding.getDims());
}

FailureOr<SmallVector<int64_t>> Lowering::globalShape(Operation *op,
                                                      const Twine &what,
                                                      SplitsAttr splits,
                                                      ArrayRef<int64_t> local) {
  std::optional<SmallVector<int64_t>> global =
      getGlobalShape(mesh, splits, local);
  if (!global)
    return op->emitError() << what
                           << ": the global shape does not fit in int64";
  return *global;
}

FailureOr<SmallVector<int64_t>> Lowering::meshIndices(Operation *op,
                                                      FlatSymbolRefAttr meshRef,
                                                      ArrayAttr axes) {
  if (!meshOp || meshRef.getValue() != meshOp.getSymName())
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: it runs on " << meshRef
                           << ", which is not the module's one dist.mesh";
  SmallVector<int64_t> indices;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    std::optional<unsigned> index = mesh.getAxisIndex(name);
    if (!index)
      return op->emitError()
             << "cannot lower '" << op->getName() << "' to rt: '" << name
             << "' is not an axis of " << meshRef;
    indices.push_back(*index);
  }
  return indices;
}

/// A padded or split vocabulary (tpcx.fbs): an embedding's (and its
/// gradient's) ints are the mesh axes splitting its table's rows; a
/// cross-entropy's [ignore, vocab, axes...], vocab counting the real classes
/// of the whole vocabulary.
LogicalResult Lowering::lowerVocabulary(Operation *op, KernelSpec &spec) {
  auto axesAttr = op->getAttrOfType<ArrayAttr>(dist::kVocabAxesAttr);
  if (!isa<tpc::EmbeddingOp, tpc::EmbeddingGradOp, tpc::CrossEntropyOp,
           tpc::CrossEntropyGradOp>(op))
    return success();
  SmallVector<int64_t> axes;
  if (axesAttr) {
    if (!meshOp)
      return op->emitError() << "cannot lower '" << op->getName()
                             << "' to rt: it splits its vocabulary but the "
                                "module has no dist.mesh";
    FailureOr<SmallVector<int64_t>> indices = meshIndices(
        op, FlatSymbolRefAttr::get(meshOp.getSymNameAttr()), axesAttr);
    if (failed(indices))
      return failure();
    axes = *indices;
  }
  if (isa<tpc::EmbeddingOp, tpc::EmbeddingGradOp>(op)) {
    spec.ints.append(axes);
    return success();
  }
  if (!op->hasAttr("vocab") && axes.empty())
    return success();
  spec.ints.push_back(wholeVocabulary(op));
  spec.ints.append(axes);
  return success();
}

LogicalResult Lowering::lowerTransfer(Operation *op) {
  // One rank's side of one pair: its peer's position in the group.
  auto send = dyn_cast<dist::SendOp>(op);
  auto recv = dyn_cast<dist::RecvOp>(op);
  ArrayRef<int64_t> pairs = send ? send.getPairs() : recv.getPairs();
  if (pairs.size() != 2)
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: a kernel is one rank's side of one "
                              "transfer, not "
                           << pairs.size() / 2 << " pairs (run "
                           << "dist-pipeline-stages)";
  FailureOr<SmallVector<int64_t>> indices =
      send ? meshIndices(op, send.getMeshAttr(), send.getAxes())
           : meshIndices(op, recv.getMeshAttr(), recv.getAxes());
  if (failed(indices))
    return failure();
  bool async = send ? send.getAsync() : recv.getAsync();
  OpCode opcode = send ? (async ? OpCode::SendStart : OpCode::Send)
                       : (async ? OpCode::RecvStart : OpCode::Recv);
  KernelSpec spec{opcode, {send ? pairs[1] : pairs[0]}};
  spec.ints.append(*indices);
  return emitKernel(op, spec, op->getOperands(), op->getResults());
}

FailureOr<KernelSpec> Lowering::collectiveKernel(Operation *op) {
  // [dims..., axes...] as the kernel table has them.
  auto spec = [&](OpCode opcode, FlatSymbolRefAttr meshRef, ArrayAttr axes,
                  ArrayRef<int64_t> dims,
                  uint32_t flags = 0) -> FailureOr<KernelSpec> {
    FailureOr<SmallVector<int64_t>> indices = meshIndices(op, meshRef, axes);
    if (failed(indices))
      return failure();
    KernelSpec kernel{opcode, SmallVector<int64_t>(dims), {}, flags};
    kernel.ints.append(*indices);
    return kernel;
  };
  auto sumOnly = [&](dist::Reduction reduction) -> LogicalResult {
    if (reduction == dist::Reduction::Sum)
      return success();
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: the kernel only sums, not '"
                           << dist::stringifyReduction(reduction) << "'";
  };
  return llvm::TypeSwitch<Operation *, FailureOr<KernelSpec>>(op)
      .Case([&](dist::AllReduceOp op) -> FailureOr<KernelSpec> {
        dist::Reduction reduction = op.getReduction();
        if (reduction == dist::Reduction::Max)
          return spec(OpCode::AllReduce, op.getMeshAttr(), op.getAxes(), {},
                      /*max=*/1);
        if (failed(sumOnly(reduction)))
          return failure();
        return spec(OpCode::AllReduce, op.getMeshAttr(), op.getAxes(), {});
      })
      .Case([&](dist::AllGatherOp op) {
        return spec(OpCode::AllGather, op.getMeshAttr(), op.getAxes(),
                    {op.getDimAttr().getInt()});
      })
      .Case([&](dist::ReduceScatterOp op) -> FailureOr<KernelSpec> {
        if (failed(sumOnly(op.getReduction())))
          return failure();
        return spec(OpCode::ReduceScatter, op.getMeshAttr(), op.getAxes(),
                    {op.getDimAttr().getInt()});
      })
      .Case([&](dist::ShardSliceOp op) {
        return spec(OpCode::ShardSlice, op.getMeshAttr(), op.getAxes(),
                    {op.getDimAttr().getInt()});
      })
      .Case([&](dist::ShardPadOp op) {
        return spec(OpCode::ShardPad, op.getMeshAttr(), op.getAxes(),
                    {op.getDimAttr().getInt()});
      })
      .Case([&](dist::AllToAllOp op) {
        return spec(
            OpCode::AllToAll, op.getMeshAttr(), op.getAxes(),
            {op.getSplitDimAttr().getInt(), op.getConcatDimAttr().getInt()});
      });
}

LogicalResult Lowering::checkStateLayouts() {
  for (auto &[arg, param, layout] : stateLayouts) {
    auto it = paramLayouts.find(param.getValue());
    // A state of no parameter is the rt.program verifier's to report.
    if (it == paramLayouts.end())
      continue;
    if (it->second.splits != layout.splits ||
        it->second.unpadded != layout.unpadded)
      return function.emitError()
             << "argument " << arg.getArgNumber() << " (a state of '"
             << param.getValue() << "') must have its parameter's layout ('"
             << dist::DistDialect::kShardingAttrName << "' and '"
             << kUnpaddedShapeAttrName << "')";
  }
  return success();
}

LogicalResult Lowering::checkUpdatedInPlace(func::ReturnOp ret, unsigned i,
                                            Value value, StringRef attrName,
                                            Attribute expected) {
  if (auto result = dyn_cast<OpResult>(value))
    if (isa<tpc::AdamWUpdateOp, tpc::SgdUpdateOp>(result.getOwner())) {
      Operation *update = result.getOwner();
      OpCode opcode = isa<tpc::AdamWUpdateOp>(update) ? OpCode::AdamWUpdate
                                                      : OpCode::SgdUpdate;
      unsigned operand = *getInPlaceOperand(opcode, result.getResultNumber());
      auto arg = dyn_cast<BlockArgument>(update->getOperand(operand));
      if (arg && function.getArgAttr(arg.getArgNumber(), attrName) == expected)
        return success();
    }
  return ret.emitError() << "result " << i << " of @" << function.getName()
                         << " ('" << attrName << "' = " << expected
                         << ") is not the value an optimizer update computes "
                            "for that argument; only those are written back";
}

LogicalResult Lowering::lowerReturn(func::ReturnOp ret) {
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (auto name =
            function.getResultAttrOfType<StringAttr>(i, tpc::kOutputAttrName);
        name && !name.getValue().empty()) {
      FailureOr<Value> buffer = bufferOf(ret, value);
      if (failed(buffer))
        return failure();
      // Outputs are whole on every rank: a collective gathers a split value.
      Operation *def = buffer->getDefiningOp();
      auto param = dyn_cast<ParamOp>(def);
      auto input = dyn_cast<InputOp>(def);
      if ((param && param.getSplitsAttr()) || (input && input.getSplitsAttr()))
        return ret.emitError()
               << "result " << i << " of @" << function.getName() << " ('"
               << name.getValue() << "') is a split argument; outputs must "
               << "be whole (all_gather it first)";
      OutputOp::create(builder, ret.getLoc(), name, *buffer);
    } else if (auto grad = function.getResultAttrOfType<StringAttr>(
                   i, tpc::kGradAttrName)) {
      FailureOr<Value> buffer = bufferOf(ret, value);
      if (failed(buffer))
        return failure();
      GradOp::create(builder, ret.getLoc(), grad, *buffer);
    } else if (auto update = function.getResultAttrOfType<StringAttr>(
                   i, tpc::kUpdateAttrName)) {
      if (failed(
              checkUpdatedInPlace(ret, i, value, tpc::kParamAttrName, update)))
        return failure();
    } else if (auto state = function.getResultAttr(i, tpc::kStateAttrName)) {
      if (failed(
              checkUpdatedInPlace(ret, i, value, tpc::kStateAttrName, state)))
        return failure();
    } else {
      return ret.emitError()
             << "result " << i << " of @" << function.getName() << " has no '"
             << tpc::kOutputAttrName << "' name, '" << tpc::kGradAttrName
             << "', '" << tpc::kUpdateAttrName << "' or '"
             << tpc::kStateAttrName
             << "'; tpc-import and tpc-optimizer tag every result";
    }
  }
  return success();
}

FailureOr<ProgramOp> Lowering::run() {
  if (!function.getBody().hasOneBlock()) {
    function.emitError() << "@" << function.getName()
                         << " must have exactly one block";
    return failure();
  }
  auto program =
      ProgramOp::create(builder, function.getLoc(), function.getName());
  if (mesh)
    program.setMeshAttr(mesh);
  builder.setInsertionPointToStart(&program.getBody().front());
  auto fail = [&] {
    program.erase();
    return failure();
  };
  for (BlockArgument arg : function.getArguments())
    if (failed(lowerArgument(arg)))
      return fail();
  if (failed(checkStateLayouts()))
    return fail();
  if (actionMicrobatches > 0) {
    if (failed(lowerAsActions(program)))
      return fail();
    return program;
  }
  for (Operation &op : llvm::make_early_inc_range(function.getBody().front())) {
    LogicalResult lowered = success();
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      lowered = lowerReturn(ret);
    else if (op.getNumRegions() != 0 && !isa<scf::ForOp>(op))
      lowered = op.emitError() << "cannot lower '" << op.getName()
                               << "' to rt: ops with regions have no kernel";
    else {
      // A pipeline program (dist-pipeline-stages): the stage that runs it.
      auto rank = op.getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
      stage = rank ? builder.getUI32IntegerAttr(rank.getInt()) : IntegerAttr();
      // Which chunk's F, B or W and which microbatch a pipeline kernel
      // runs: for --emit mlir's readers (benchmarks/pipeline-idle.py).
      phase = rank ? op.getAttr(tpc::kPhaseAttrName) : Attribute();
      microbatch = rank ? op.getAttr(tpc::kMicrobatchIndexAttrName) : Attribute();
      lowered = lowerOp(&op);
    }
    if (failed(lowered))
      return fail();
  }
  return program;
}

LogicalResult Lowering::lowerAsActions(ProgramOp program) {
  // A pipeline template (dist-pipeline-stages functions=true) has one
  // program per stage, each with its action list; one device has one.
  Block &body = function.getBody().front();
  auto stageActions =
      function->getAttrOfType<ArrayAttr>(dist::kStageActionsAttrName);
  SmallVector<SmallVector<Operation *>> stageOps(stageActions ? 0 : 1);
  for (Operation &op : body.without_terminator()) {
    if (!stageActions) {
      stageOps.front().push_back(&op);
      continue;
    }
    auto rank = op.getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
    int64_t s = rank ? rank.getInt() : -1;
    if (s < 0 || s >= static_cast<int64_t>(stageActions.size()) ||
        s + 1 < static_cast<int64_t>(stageOps.size()))
      return op.emitError()
             << "tpc-lower-to-rt: in a pipeline template every op has a '"
             << dist::kPipelineRankAttrName << "' below "
             << stageActions.size()
             << " (the stages' action lists), the stages one after another";
    stageOps.resize(std::max<size_t>(stageOps.size(), s + 1));
    stageOps[s].push_back(&op);
  }
  Builder b(program.getContext());
  SmallVector<Attribute> lists;
  for (auto [s, ops] : llvm::enumerate(stageOps)) {
    stage = stageActions ? b.getUI32IntegerAttr(s) : IntegerAttr();
    auto schedule =
        stageActions ? dyn_cast<DictionaryAttr>(stageActions[s]) : nullptr;
    if (stageActions && !schedule)
      return function.emitError() << "tpc-lower-to-rt: '"
                                  << dist::kStageActionsAttrName << "' entry "
                                  << s << " is not a dictionary";
    FailureOr<DenseI64ArrayAttr> actions = lowerStageAsActions(ops, schedule);
    if (failed(actions))
      return failure();
    lists.push_back(*actions);
  }
  stage = IntegerAttr();
  if (failed(lowerReturn(cast<func::ReturnOp>(body.getTerminator()))))
    return failure();

  // The functions and the actions that run them, on the module.
  SmallVector<Attribute> functionAttrs, poolAttrs;
  for (const FunctionRange &range : functions)
    functionAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("name", b.getStringAttr(range.name)),
         b.getNamedAttr("first", b.getI64IntegerAttr(range.first)),
         b.getNamedAttr("count", b.getI64IntegerAttr(range.count))}));
  for (int64_t slots : poolSlots)
    poolAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("slots", b.getI64IntegerAttr(slots))}));
  program->setAttr("functions", b.getArrayAttr(functionAttrs));
  if (stageActions)
    program->setAttr("stage_actions", b.getArrayAttr(lists));
  else
    program->setAttr("actions", lists.front());
  if (!poolAttrs.empty())
    program->setAttr("pools", b.getArrayAttr(poolAttrs));
  return success();
}

FailureOr<DenseI64ArrayAttr>
Lowering::lowerStageAsActions(ArrayRef<Operation *> ops,
                              DictionaryAttr schedule) {
  // Each op's function, in the order they run: the prologue (what the
  // arguments alone give), the target count of each microbatch, its
  // inverse, each microbatch's functions (one device: all of the ops
  // marked with its index; a pipeline stage: its chunks' F, B and W and
  // its transfers, as dist-pipeline-stages marked them), the epilogue
  // (what reads the microbatches' sums).
  int64_t firstPool = poolSlots.size();
  enum Class { Prologue, Count, Invert, Micro, Epilogue };
  DenseMap<Operation *, Class> classOf;
  DenseMap<Operation *, StringRef> functionOf;
  SmallVector<StringRef> microFunctions;
  // The microbatch's rows of an input (its pool slot) and what is computed
  // from them (the data-parallel rank's shard) vary with the microbatch;
  // the target count reads the whole input and is counted per slot.
  DenseSet<Operation *> varying;
  auto readsMicrobatchInput = [&](Operation *op) {
    if (isa<tpc::CountTargetsOp>(op))
      return false;
    bool reads = llvm::any_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && varying.contains(def);
    });
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
      if (auto arg = dyn_cast<BlockArgument>(slice.getSource()))
        reads |= arg.getOwner()->getParentOp() == function.getOperation() &&
                 function.getArgAttr(arg.getArgNumber(), tpc::kInputAttrName);
    if (reads)
      varying.insert(op);
    return reads;
  };
  for (Operation *op : ops) {
    Class cls = Prologue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        cls = std::max(cls, classOf.lookup(def));
    auto name = op->getAttrOfType<StringAttr>(dist::kFunctionAttrName);
    if (schedule && name) {
      if (name.getValue() == dist::kEpilogueFunctionName) {
        cls = Epilogue;
      } else {
        cls = Micro;
        functionOf[op] = name.getValue();
      }
    } else if (schedule && cls == Micro) {
      return op->emitError() << "tpc-lower-to-rt: reads a microbatch's value "
                                "but is in no function ('"
                             << dist::kFunctionAttrName << "')";
    } else if (!schedule && (op->hasAttr(tpc::kMicrobatchIndexAttrName) ||
                             readsMicrobatchInput(op))) {
      cls = Micro;
      functionOf[op] = "microbatch";
    } else if (isa<tpc::CountTargetsOp>(op)) {
      cls = Count;
    } else if (cls == Micro) {
      cls = Epilogue; // reads a microbatch's value: their sum
    } else if (cls == Count) {
      cls = Invert;
    }
    classOf[op] = cls;
    if (cls == Micro && !llvm::is_contained(microFunctions, functionOf[op]))
      microFunctions.push_back(functionOf[op]);
  }
  // One device: what dist-partition inserted among the microbatch's ops (a
  // collective, a reshard) carries no microbatch index; a microbatch's op
  // reading it makes it the microbatch's too. (Users first: in reverse.)
  if (!schedule)
    for (Operation *op : llvm::reverse(ops))
      if (classOf.lookup(op) == Epilogue &&
          !op->hasAttr(tpc::kMicrobatchIndexAttrName) &&
          llvm::any_of(op->getUsers(), [&](Operation *user) {
            auto it = classOf.find(user);
            return it != classOf.end() && it->second == Micro;
          })) {
        classOf[op] = Micro;
        functionOf[op] = "microbatch";
      }
  // A microbatch's op that reads the epilogue would run before it exists.
  for (Operation *op : ops)
    if (classOf.lookup(op) == Micro)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && classOf.lookup(def) == Epilogue)
          return op->emitError() << "tpc-lower-to-rt: a microbatch's op "
                                    "reads the step's epilogue";
  // Values that leave their function: sums over the microbatches when the
  // step reads them past the microbatches, a pool slot's when another
  // function of the same microbatch does. (In the ops' order: the program
  // must not depend on pointers.)
  SmallVector<Value> microSums, countSums;
  DenseSet<Value> pooled;
  for (Operation *op : ops) {
    Class cls = classOf.lookup(op);
    if (cls != Micro && cls != Count)
      continue;
    for (Value result : op->getResults()) {
      bool summed = false, handed = false;
      for (Operation *user : result.getUsers()) {
        auto it = classOf.find(user);
        if (it == classOf.end() || it->second != cls)
          summed = true;
        else if (cls == Micro && functionOf.lookup(user) != functionOf[op])
          handed = true;
      }
      if (summed && handed)
        return op->emitError()
               << "tpc-lower-to-rt: a microbatch's value that another "
                  "function of the microbatch and the epilogue both read";
      if (summed)
        (cls == Micro ? microSums : countSums).push_back(result);
      if (handed)
        pooled.insert(result);
    }
  }

  Location loc = function.getLoc();
  DenseMap<Value, Value> accumulators;
  auto addInto = [&](Value v) -> LogicalResult {
    FailureOr<Value> share = bufferOf(v.getDefiningOp(), v);
    if (failed(share))
      return failure();
    Value acc = accumulators.lookup(v);
    createKernel(loc, KernelSpec{OpCode::Add}, {acc, *share}, {acc});
    return success();
  };
  // The stage's pools, when its functions hand values to each other: a
  // pool per kind of value, the functions that define and read it (so that
  // every buffer of a pool lives alike), for the buffers made for them in
  // the microbatch's functions (not a view of a persistent buffer).
  DenseSet<Operation *> earlier;
  llvm::StringMap<int64_t> poolOfKind;
  auto poolBuffer = [&](Value v) {
    auto alloc = buffers.lookup(v).getDefiningOp<AllocOp>();
    if (!alloc || earlier.contains(alloc) || alloc.getPool())
      return;
    SmallVector<StringRef> kind{functionOf.lookup(v.getDefiningOp())};
    for (Operation *user : v.getUsers())
      if (classOf.lookup(user) == Micro)
        kind.push_back(functionOf.lookup(user));
    llvm::sort(kind);
    kind.erase(llvm::unique(kind), kind.end());
    auto [it, fresh] = poolOfKind.try_emplace(llvm::join(kind, "\n"),
                                              poolSlots.size());
    if (fresh)
      poolSlots.push_back(1);
    alloc.setPoolAttr(builder.getI64IntegerAttr(it->second));
  };
  llvm::StringMap<int64_t> functionIndex;
  auto lowerClass = [&](Class cls, StringRef name, bool perMicrobatch,
                        function_ref<LogicalResult()> after) {
    int64_t first = kernelCount;
    // Some results go into their sums a few kernels later, so that the
    // kernels after theirs stay adjacent: the CUDA device runs them as one
    // (runtime/cuda/FusionPlan.h). A norm's parameter gradients wait for
    // its input gradient and the residual add of that, and the dropout of
    // the add's result right after (a residual branch's gradient); the loss
    // for its gradient.
    auto kernelsToHold = [](Operation *op) -> int64_t {
      if (isa<tpc::LayerNormParamGradOp, tpc::RmsNormParamGradOp>(op)) {
        Operation *input = op->getNextNode();
        Operation *add = input ? input->getNextNode() : nullptr;
        Operation *mask = add ? add->getNextNode() : nullptr;
        bool masked = isa_and_nonnull<tpc::AddOp>(add) &&
                      isa_and_nonnull<tpc::ApplyMaskOp>(mask) &&
                      mask->getOperand(0) == add->getResult(0);
        return masked ? 3 : 2;
      }
      return isa<tpc::CrossEntropyOp>(op) ? 1 : 0;
    };
    SmallVector<std::pair<Value, int64_t>> heldSums;
    auto addHeld = [&](bool all) -> LogicalResult {
      while (!heldSums.empty() &&
             (all || heldSums.front().second <= kernelCount)) {
        if (failed(addInto(heldSums.front().first)))
          return failure();
        heldSums.erase(heldSums.begin());
      }
      return success();
    };
    for (Operation *op : ops) {
      if (classOf.lookup(op) != cls ||
          (cls == Micro && functionOf.lookup(op) != name))
        continue;
      // Which chunk's F, B or W a pipeline kernel runs: for --emit mlir's
      // readers (benchmarks/pipeline-idle.py).
      phase = stage ? op->getAttr(tpc::kPhaseAttrName) : Attribute();
      microbatch = Attribute();
      if (failed(lowerOp(op)))
        return failure();
      // A microbatch's share goes into its sum right away, so that it is
      // not kept to the function's end (the unrolled step's early
      // accumulation).
      if (failed(addHeld(false)))
        return failure();
      int64_t hold = kernelsToHold(op);
      for (Value result : op->getResults()) {
        if (accumulators.count(result)) {
          if (hold)
            heldSums.push_back({result, kernelCount + hold});
          else if (failed(addInto(result)))
            return failure();
        }
        if (pooled.contains(result))
          poolBuffer(result);
      }
    }
    if (failed(addHeld(true)))
      return failure();
    if (failed(after()))
      return failure();
    if (kernelCount > first) {
      functionIndex[name] = functions.size();
      functions.push_back(
          {name.str(), first, kernelCount - first, perMicrobatch});
    }
    return success();
  };
  auto none = [] { return success(); };
  // The prologue zeroes every sum; each microbatch adds into it in place.
  auto zeroSums = [&]() -> LogicalResult {
    for (Value v : llvm::concat<Value>(countSums, microSums)) {
      FailureOr<MemRefType> type = bufferTypeOf(v.getType());
      if (failed(type))
        return v.getDefiningOp()->emitError()
               << "tpc-lower-to-rt: a microbatch sum of type " << v.getType();
      Value acc =
          AllocOp::create(builder, loc, *type, IntegerAttr(), IntegerAttr());
      accumulators[v] = acc;
      createKernel(loc, KernelSpec{OpCode::Zeros}, {}, {acc});
    }
    return success();
  };
  // Past its function, a value is its sum.
  auto useSums = [&](ArrayRef<Value> sums) -> LogicalResult {
    for (Value v : sums)
      buffers[v] = accumulators.lookup(v);
    return success();
  };
  auto noteEarlier = [&]() -> LogicalResult {
    for (auto alloc : builder.getInsertionBlock()->getOps<AllocOp>())
      earlier.insert(alloc);
    return success();
  };
  if (failed(lowerClass(Prologue, "prologue", false, zeroSums)) ||
      failed(lowerClass(Count, "count targets", true,
                        [&] { return useSums(countSums); })) ||
      failed(lowerClass(Invert, "inverse count", false, noteEarlier)))
    return failure();
  for (StringRef name : microFunctions)
    if (failed(lowerClass(Micro, name, true, none)))
      return failure();
  if (failed(useSums(microSums)) ||
      failed(lowerClass(Epilogue, "epilogue", false, none)))
    return failure();

  // The stage's actions: the prologue, the counts, their inverse, the
  // microbatches' functions (one device: in turn; a stage: as its
  // schedule orders them), the epilogue. An action's slot is its
  // microbatch: a pool of S slots holds microbatch i in slot i mod S.
  SmallVector<std::pair<int64_t, int64_t>> runs;
  auto act = [&](StringRef name, int64_t microbatch) {
    if (auto it = functionIndex.find(name); it != functionIndex.end())
      runs.push_back({it->second, microbatch});
  };
  act("prologue", 0);
  for (int64_t i = 0; i < actionMicrobatches; ++i)
    act("count targets", i);
  act("inverse count", 0);
  if (!schedule) {
    for (int64_t i = 0; i < actionMicrobatches; ++i)
      act("microbatch", i);
  } else {
    auto names = schedule.getAs<ArrayAttr>("functions");
    auto list = schedule.getAs<DenseI64ArrayAttr>("actions");
    if (!names || !list || list.size() % 2 != 0)
      return function.emitError()
             << "tpc-lower-to-rt: a stage's action list needs 'functions' "
                "(names) and 'actions' (function, microbatch pairs)";
    for (int64_t a = 0, e = list.size(); a < e; a += 2) {
      int64_t f = list[a], i = list[a + 1];
      if (f < 0 || f >= static_cast<int64_t>(names.size()) || i < 0 ||
          i >= actionMicrobatches)
        return function.emitError()
               << "tpc-lower-to-rt: action " << a / 2 << " ([" << f << ", "
               << i << "]) names no function or microbatch of the stage";
      act(cast<StringAttr>(names[f]).getValue(), i);
    }
  }
  act("epilogue", 0);
  sizePools(runs, firstPool);
  // One attribute for the list: an action is three integers, not an
  // attribute to unique (a pipeline has thousands per rank).
  SmallVector<int64_t> triples;
  triples.reserve(3 * runs.size());
  for (auto [f, microbatch] : runs)
    triples.append({f, microbatch, microbatch});
  return builder.getDenseI64ArrayAttr(triples);
}

void Lowering::sizePools(ArrayRef<std::pair<int64_t, int64_t>> runs,
                         int64_t firstPool) {
  int64_t numPools = poolSlots.size() - firstPool;
  if (numPools == 0)
    return;
  // The stage's pools each function's kernels address (kernels are made in
  // program order, so the k-th rt.kernel is kernel k).
  DenseMap<int64_t, SmallVector<int64_t, 4>> poolsOf;
  int64_t k = 0;
  size_t f = 0;
  for (auto kernel : builder.getInsertionBlock()->getOps<KernelOp>()) {
    while (f < functions.size() &&
           k >= functions[f].first + functions[f].count)
      ++f;
    if (f < functions.size() && k >= functions[f].first)
      for (Value buffer : kernel->getOperands())
        if (auto alloc = buffer.getDefiningOp<AllocOp>())
          if (std::optional<int64_t> pool = alloc.getPool();
              pool && *pool >= firstPool &&
              !llvm::is_contained(poolsOf[f], *pool))
            poolsOf[f].push_back(*pool);
    ++k;
  }
  // Each pool's microbatches live from their first action touching it to
  // their last; the slots the fewest that never put two live ones in one.
  std::vector<std::vector<dist::pipeline::PoolSpan>> spans(
      numPools,
      std::vector<dist::pipeline::PoolSpan>(std::max<int64_t>(
          actionMicrobatches, 1)));
  for (auto [a, run] : llvm::enumerate(runs))
    for (int64_t pool : poolsOf.lookup(run.first)) {
      dist::pipeline::PoolSpan &span = spans[pool - firstPool][run.second];
      if (span.first < 0)
        span.first = a;
      span.last = a;
    }
  for (int64_t p = 0; p < numPools; ++p)
    poolSlots[firstPool + p] = dist::pipeline::cyclicPoolSlots(spans[p]);
}

namespace {
struct LowerToRtPass : public tpc::impl::TpcLowerToRtBase<LowerToRtPass> {
  using TpcLowerToRtBase::TpcLowerToRtBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entry = module.lookupSymbol<func::FuncOp>(function);
    if (!entry) {
      module.emitError() << "tpc-lower-to-rt: no func.func @" << function;
      return signalPassFailure();
    }
    if (entry.isExternal()) {
      entry.emitError() << "tpc-lower-to-rt: @" << function << " has no body";
      return signalPassFailure();
    }
    // A partitioned module runs on its one mesh.
    dist::MeshOp mesh;
    for (auto candidate : module.getOps<dist::MeshOp>()) {
      if (mesh) {
        candidate.emitError()
            << "tpc-lower-to-rt: a program runs on one mesh, but the module "
               "has @"
            << mesh.getSymName() << " and @" << candidate.getSymName();
        return signalPassFailure();
      }
      mesh = candidate;
    }
    // On a mesh only a function rewritten for one rank has local types.
    if (mesh && !entry->hasAttr(dist::DistDialect::kPartitionedAttrName)) {
      entry.emitError() << "tpc-lower-to-rt: @" << function << " runs on @"
                        << mesh.getSymName() << " but is not partitioned (no '"
                        << dist::DistDialect::kPartitionedAttrName
                        << "'): run dist-partition first";
      return signalPassFailure();
    }
    int64_t microbatches = 0;
    if (actions) {
      auto count = entry->getAttrOfType<IntegerAttr>("tpc.microbatches");
      if (!count) {
        entry.emitError()
            << "tpc-lower-to-rt: actions needs a training step template "
               "(tpc.microbatches) on one device or cut into pipeline "
               "stages (dist-pipeline-stages functions=true)";
        return signalPassFailure();
      }
      microbatches = count.getInt();
    }
    if (failed(Lowering(entry, mesh, microbatches).run()))
      return signalPassFailure();
    entry.erase();
    // The program carries the mesh now; the dist.mesh stays while anything
    // else in the module still names it.
    if (mesh && SymbolTable::symbolKnownUseEmpty(mesh, module))
      mesh.erase();
    // The seed's 64 bits are stored as an i64 (see RtDialect).
    module->setAttr(RtDialect::kSeedAttrName,
                    Builder(module).getI64IntegerAttr(
                        static_cast<int64_t>(static_cast<uint64_t>(seed))));
  }
};
} // namespace
