//===- LowerToRt.cpp - tpc-lower-to-rt ------------------------------------===//
//
// One walk over @forward: arguments become rt.param / rt.input, every op an
// rt.alloc per result and an rt.kernel, the return rt.outputs. The kernel
// attributes are those of the executable's kernel table (tpcx.fbs), so this
// file is where the tpc op attributes meet the runtime's encoding.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace mlir::rt {
#define GEN_PASS_DEF_TPCLOWERTORT
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

/// The attributes of one kernel, as the executable stores them.
struct KernelSpec {
  OpCode opcode;
  SmallVector<int64_t> ints = {};
  SmallVector<double> floats = {};
  uint32_t flags = 0;
};

/// The kernel of a tpc op, or nullopt when it has none. Operands and results
/// keep the op's order: the tpc op definitions list them as the kernel table
/// does.
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
        return KernelSpec{OpCode::Attention,
                          {op.getDropoutStreamAttr().getInt()},
                          {op.getScale().convertToDouble(),
                           op.getDropoutRate().convertToDouble()},
                          flag(op.getCausal(), 1)};
      })
      .Case([](RotaryOp op) {
        return KernelSpec{OpCode::Rotary,
                          {op.getOffsetAttr().getInt()},
                          {op.getTheta().convertToDouble()}};
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
      .Default([](Operation *) { return std::nullopt; });
}

/// What a buffer type of `bufferTypeOf` must be, for its diagnostics.
constexpr llvm::StringLiteral kBufferTypeRule =
    "a static tensor of f32, bf16, f16, i32 or i64 of fewer than 2^63 bytes";

/// The buffer type of a tensor value: same shape and element type, static,
/// of an element type the executable has, and a byte size that fits the
/// executable's int64 sizes.
FailureOr<MemRefType> bufferTypeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return failure();
  Type element = tensor.getElementType();
  if (!isa<Float32Type, BFloat16Type, Float16Type>(element) &&
      !element.isSignlessInteger(32) && !element.isSignlessInteger(64))
    return failure();
  auto buffer = MemRefType::get(tensor.getShape(), element);
  if (getBufferBytes(buffer) == std::numeric_limits<int64_t>::max())
    return failure();
  return buffer;
}

/// How tpc-run initializes a parameter without weights, from its uses: a
/// norm scale starts at one, a bias at zero, anything else is drawn.
ParamInit initOf(Value param) {
  bool isBias = false;
  for (OpOperand &use : param.getUses()) {
    Operation *user = use.getOwner();
    if (auto norm = dyn_cast<tpc::LayerNormOp>(user)) {
      if (norm.getWeight() == param)
        return ParamInit::Ones;
      isBias |= norm.getBias() == param;
    } else if (auto norm = dyn_cast<tpc::RmsNormOp>(user)) {
      if (norm.getWeight() == param)
        return ParamInit::Ones;
    } else if (auto linear = dyn_cast<tpc::LinearOp>(user)) {
      isBias |= linear.getBias() == param;
    }
  }
  return isBias ? ParamInit::Zeros : ParamInit::Normal;
}

/// The exclusive upper bound of an integer input's values, from its uses
/// (the smallest when several give one), or 0 when none does.
int64_t valueBoundOf(Value input) {
  int64_t bound = 0;
  auto tighten = [&](int64_t b) {
    bound = bound == 0 ? b : std::min(bound, b);
  };
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    if (auto embedding = dyn_cast<tpc::EmbeddingOp>(user)) {
      if (embedding.getIds() == input)
        tighten(embedding.getTable().getType().getDimSize(0));
    } else if (auto ce = dyn_cast<tpc::CrossEntropyOp>(user)) {
      if (ce.getLabels() == input)
        tighten(ce.getLogits().getType().getShape().back());
    }
  }
  return bound;
}

class Lowering {
public:
  Lowering(func::FuncOp forward) : forward(forward), builder(forward) {}

  /// Builds the program before @forward; on failure the caller erases it.
  FailureOr<ProgramOp> run();

private:
  LogicalResult lowerArgument(BlockArgument arg);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerReturn(func::ReturnOp ret);

  func::FuncOp forward;
  OpBuilder builder;
  /// The buffer of every tensor value of @forward.
  DenseMap<Value, Value> buffers;
};

} // namespace

LogicalResult Lowering::lowerArgument(BlockArgument arg) {
  unsigned i = arg.getArgNumber();
  auto param = forward.getArgAttrOfType<StringAttr>(i, tpc::kParamAttrName);
  auto input = forward.getArgAttrOfType<StringAttr>(i, tpc::kInputAttrName);
  if (!param == !input)
    return forward.emitError() << "argument " << i << " must have exactly one "
                               << "of '" << tpc::kParamAttrName << "' and '"
                               << tpc::kInputAttrName << "' (a string)";
  StringRef name = param ? param.getValue() : input.getValue();
  FailureOr<MemRefType> type = bufferTypeOf(arg.getType());
  if (failed(type))
    return forward.emitError()
           << "argument " << i << " ('" << name << "') has type "
           << arg.getType() << ", not " << kBufferTypeRule;
  Location loc = arg.getLoc();
  if (param) {
    auto hfShape =
        forward.getArgAttrOfType<DenseI64ArrayAttr>(i, tpc::kHfShapeAttrName);
    if (!hfShape) {
      if (forward.getArgAttr(i, tpc::kHfShapeAttrName))
        return forward.emitError()
               << "argument " << i << " ('" << name << "'): '"
               << tpc::kHfShapeAttrName << "' must be an array<i64>";
      hfShape = builder.getDenseI64ArrayAttr(type->getShape());
    }
    buffers[arg] =
        ParamOp::create(builder, loc, *type, param, hfShape,
                        ParamInitAttr::get(builder.getContext(), initOf(arg)),
                        builder.getF64FloatAttr(0.02),
                        /*offset=*/IntegerAttr());
  } else {
    buffers[arg] = InputOp::create(builder, loc, *type, input,
                                   builder.getI64IntegerAttr(valueBoundOf(arg)),
                                   /*offset=*/IntegerAttr());
  }
  return success();
}

LogicalResult Lowering::lowerOp(Operation *op) {
  std::optional<KernelSpec> spec = kernelFor(op);
  if (!spec)
    return op->emitError() << "cannot lower '" << op->getName()
                           << "' to rt: no runtime kernel implements it";
  SmallVector<Value> operands, results;
  for (Value operand : op->getOperands())
    operands.push_back(buffers.lookup(operand));
  for (OpResult result : op->getResults()) {
    FailureOr<MemRefType> type = bufferTypeOf(result.getType());
    if (failed(type))
      return op->emitError()
             << "result " << result.getResultNumber() << " has type "
             << result.getType() << ", not " << kBufferTypeRule;
    Value buffer = AllocOp::create(builder, op->getLoc(), *type,
                                   /*offset=*/IntegerAttr());
    buffers[result] = buffer;
    results.push_back(buffer);
  }
  KernelOp::create(builder, op->getLoc(),
                   OpCodeAttr::get(builder.getContext(), spec->opcode),
                   operands, results, builder.getDenseI64ArrayAttr(spec->ints),
                   builder.getDenseF64ArrayAttr(spec->floats),
                   builder.getUI32IntegerAttr(spec->flags));
  return success();
}

LogicalResult Lowering::lowerReturn(func::ReturnOp ret) {
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name =
        forward.getResultAttrOfType<StringAttr>(i, tpc::kOutputAttrName);
    if (!name || name.getValue().empty())
      return ret.emitError()
             << "result " << i << " of @forward has no '"
             << tpc::kOutputAttrName << "' name; tpc-import names every result";
    OutputOp::create(builder, ret.getLoc(), name, buffers.lookup(value));
  }
  return success();
}

FailureOr<ProgramOp> Lowering::run() {
  if (!forward.getBody().hasOneBlock()) {
    forward.emitError("@forward must have exactly one block");
    return failure();
  }
  auto program = ProgramOp::create(builder, forward.getLoc(), "forward");
  builder.setInsertionPointToStart(&program.getBody().front());
  auto fail = [&] {
    program.erase();
    return failure();
  };
  for (BlockArgument arg : forward.getArguments())
    if (failed(lowerArgument(arg)))
      return fail();
  for (Operation &op : forward.getBody().front()) {
    LogicalResult lowered = success();
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      lowered = lowerReturn(ret);
    else if (op.getNumRegions() != 0)
      lowered = op.emitError() << "cannot lower '" << op.getName()
                               << "' to rt: ops with regions have no kernel";
    else
      lowered = lowerOp(&op);
    if (failed(lowered))
      return fail();
  }
  return program;
}

namespace {
struct LowerToRtPass : public rt::impl::TpcLowerToRtBase<LowerToRtPass> {
  using TpcLowerToRtBase::TpcLowerToRtBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("tpc-lower-to-rt: no func.func @forward");
      return signalPassFailure();
    }
    if (forward.isExternal()) {
      forward.emitError("tpc-lower-to-rt: @forward has no body");
      return signalPassFailure();
    }
    if (failed(Lowering(forward).run()))
      return signalPassFailure();
    forward.erase();
    // The seed's 64 bits are stored as an i64 (see RtDialect).
    module->setAttr(RtDialect::kSeedAttrName,
                    Builder(module).getI64IntegerAttr(
                        static_cast<int64_t>(static_cast<uint64_t>(seed))));
  }
};
} // namespace
