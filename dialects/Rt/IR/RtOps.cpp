//===- RtOps.cpp - rt op verifiers ----------------------------------------===//
//
// The runtime trusts what the executable says about shapes, so the verifier
// checks per opcode everything a kernel relies on: operand and result counts,
// attribute lengths, flag bits, shapes and element types. Every message names
// the kernel and the bad operand or attribute.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"

#include "tpcrt/KernelRoles.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::rt;

/// The operand types of an rt.kernel: a comma-separated list that is empty
/// for a kernel without operands (dropout_mask).
static ParseResult parseOperandTypes(OpAsmParser &parser,
                                     SmallVectorImpl<Type> &types) {
  Type type;
  OptionalParseResult first = parser.parseOptionalType(type);
  if (!first.has_value())
    return success();
  if (failed(*first))
    return failure();
  types.push_back(type);
  while (succeeded(parser.parseOptionalComma())) {
    if (parser.parseType(type))
      return failure();
    types.push_back(type);
  }
  return success();
}

static void printOperandTypes(OpAsmPrinter &printer, Operation *,
                              TypeRange types) {
  llvm::interleaveComma(types, printer);
}

#define GET_OP_CLASSES
#include "dialects/Rt/IR/RtOps.cpp.inc"

/// Prints a shape as `4x32x64` (a scalar as `scalar`).
static std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string str;
  llvm::raw_string_ostream os(str);
  llvm::interleave(shape, os, "x");
  return str;
}

/// The element count of a static shape, or nullopt on overflow.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

int64_t mlir::rt::getBufferBytes(MemRefType type) {
  std::optional<int64_t> count = elementCount(type.getShape());
  int64_t bytes;
  if (!count || llvm::MulOverflow(
                    *count, int64_t(type.getElementTypeBitWidth() / 8), bytes))
    return std::numeric_limits<int64_t>::max();
  return bytes;
}

/// Offsets are read as signed (the executable's uint64 would wrap) and must
/// be a multiple of the element size: kernels read elements in place.
static LogicalResult verifyOffset(Operation *op, IntegerAttr offset) {
  if (!offset)
    return success();
  int64_t value = offset.getInt();
  if (value < 0)
    return op->emitOpError("offset must be non-negative but is ") << value;
  auto type = cast<MemRefType>(op->getResult(0).getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (value % elementBytes != 0)
    return op->emitOpError("offset ")
           << value << " is not a multiple of the " << elementBytes
           << "-byte element size of " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Meshes and splits
//===----------------------------------------------------------------------===//

MeshAttr mlir::rt::getProgramMesh(Operation *op) {
  auto program = op->getParentOfType<ProgramOp>();
  return program ? program.getMeshAttr() : MeshAttr();
}

SmallVector<SmallVector<unsigned>> mlir::rt::getSplitAxes(MeshAttr mesh,
                                                          SplitsAttr splits) {
  SmallVector<SmallVector<unsigned>> axes;
  for (unsigned dim = 0, e = splits.getRank(); dim < e; ++dim)
    axes.push_back(
        llvm::map_to_vector(splits.getDimAxes(dim), [&](StringRef name) {
          return *mesh.getAxisIndex(name);
        }));
  return axes;
}

std::optional<SmallVector<int64_t>>
mlir::rt::getGlobalShape(MeshAttr mesh, SplitsAttr splits,
                         ArrayRef<int64_t> local) {
  SmallVector<int64_t> global(local);
  if (!splits)
    return global;
  for (auto [dim, axes] : llvm::enumerate(getSplitAxes(mesh, splits)))
    for (unsigned axis : axes)
      if (llvm::MulOverflow(global[dim], mesh.getSizes()[axis], global[dim]))
        return std::nullopt;
  return global;
}

bool mlir::rt::drawsDropout(OpCode opcode) {
  return opcode == OpCode::Dropout || opcode == OpCode::DropoutMask ||
         opcode == OpCode::Attention || opcode == OpCode::AttentionGrad;
}

/// `[dp = 2, tp = 2]`, as the program prints it.
static std::string meshStr(MeshAttr mesh) {
  std::string str = "[";
  for (unsigned axis = 0, e = mesh.getNumAxes(); axis < e; ++axis)
    str += (axis ? ", " : "") + mesh.getAxisName(axis).str() + " = " +
           std::to_string(mesh.getSizes()[axis]);
  return str + "]";
}

/// `[[dp], [], [tp]]`, as the ops print it.
static std::string splitsStr(SplitsAttr splits) {
  std::string str = "[";
  for (unsigned dim = 0, e = splits.getRank(); dim < e; ++dim)
    str += (dim ? ", [" : "[") + llvm::join(splits.getDimAxes(dim), ", ") + "]";
  return str + "]";
}

/// Checks the splits of `what` (a buffer or kernel result of shape `local`)
/// against the mesh of the program holding `op`: there is a mesh, one axis
/// list per dimension, every axis is the mesh's, and the global shape fits
/// in int64. (The attribute itself checks that no axis repeats.) Returns the
/// global shape.
static FailureOr<SmallVector<int64_t>> verifySplits(Operation *op,
                                                    const Twine &what,
                                                    SplitsAttr splits,
                                                    ArrayRef<int64_t> local) {
  MeshAttr mesh = getProgramMesh(op);
  if (!mesh)
    return op->emitOpError()
           << what << " has splits but its rt.program has no mesh";
  if (splits.getRank() != local.size())
    return op->emitOpError()
           << what << ": splits " << splitsStr(splits) << " have "
           << splits.getRank() << " dimensions but the shape "
           << shapeStr(local) << " has " << local.size();
  for (unsigned dim = 0, e = splits.getRank(); dim < e; ++dim)
    for (StringRef name : splits.getDimAxes(dim))
      if (!mesh.getAxisIndex(name))
        return op->emitOpError()
               << what << ": split axis '" << name << "' of dimension " << dim
               << " is not an axis of the mesh " << meshStr(mesh);
  std::optional<SmallVector<int64_t>> global =
      getGlobalShape(mesh, splits, local);
  if (!global)
    return op->emitOpError()
           << what << ": the global shape of " << shapeStr(local)
           << " split by " << splitsStr(splits) << " does not fit in int64";
  return *global;
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state,
                      StringRef name) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}


/// A state or gradient of parameter `name` is f32 of the parameter's buffer
/// shape (its view, or this rank's block of it).
static LogicalResult verifyParamShaped(Operation *op, StringRef what,
                                       StringRef name, MemRefType type,
                                       const llvm::StringMap<ParamOp> &params) {
  ParamOp param = params.lookup(name);
  if (!param)
    return op->emitOpError() << what << " of '" << name
                             << "', which is no parameter of the program";
  ArrayRef<int64_t> shape = param.getBuffer().getType().getShape();
  if (!type.getElementType().isF32() || type.getShape() != shape)
    return op->emitOpError()
           << what << " of '" << name << "' is " << type
           << " but must be f32 of the parameter's buffer shape [" << shape
           << "]";
  return success();
}

LogicalResult ProgramOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 0)
    return emitOpError("body must have no arguments");
  // States and gradients name parameters wherever they are defined.
  llvm::StringMap<ParamOp> params;
  for (auto param : body.getOps<ParamOp>())
    if (!params.try_emplace(param.getHfName(), param).second)
      return param.emitOpError("duplicate parameter '")
             << param.getHfName() << "'";
  llvm::StringSet<> inputs, outputs, grads, states;
  // Allocs written so far, in execution order.
  llvm::DenseSet<Value> written;
  auto isUnwrittenAlloc = [&](Value v) {
    return v.getDefiningOp<AllocOp>() && !written.contains(v);
  };
  for (Operation &op : body) {
    if (op.getDialect() != (*this)->getDialect())
      return op.emitOpError("is not an rt op; an rt.program holds only rt "
                            "ops");
    if (auto input = dyn_cast<InputOp>(op)) {
      if (!inputs.insert(input.getName()).second)
        return input.emitOpError("duplicate input '") << input.getName() << "'";
    } else if (auto state = dyn_cast<StateOp>(op)) {
      std::string key = (state.getParam() + "." + state.getName()).str();
      if (!states.insert(key).second)
        return state.emitOpError("duplicate state '")
               << state.getName() << "' of '" << state.getParam() << "'";
      std::string what = ("state '" + state.getName() + "'").str();
      if (failed(verifyParamShaped(state, what, state.getParam(),
                                   state.getBuffer().getType(), params)))
        return failure();
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      if (!outputs.insert(output.getName()).second)
        return output.emitOpError("duplicate output '")
               << output.getName() << "'";
      if (isUnwrittenAlloc(output.getBuffer()))
        return output.emitOpError("binds output '")
               << output.getName() << "' to an rt.alloc no kernel writes";
      Operation *def = output.getBuffer().getDefiningOp();
      if ((isa_and_nonnull<ParamOp>(def) &&
           cast<ParamOp>(def).getSplitsAttr()) ||
          (isa_and_nonnull<InputOp>(def) && cast<InputOp>(def).getSplitsAttr()))
        return output.emitOpError("binds output '")
               << output.getName()
               << "' to a split buffer; outputs are whole on every rank";
    } else if (auto grad = dyn_cast<GradOp>(op)) {
      if (!grads.insert(grad.getName()).second)
        return grad.emitOpError("duplicate gradient of '")
               << grad.getName() << "'";
      if (failed(verifyParamShaped(grad, "gradient", grad.getName(),
                                   grad.getBuffer().getType(), params)))
        return failure();
      if (!grad.getBuffer().getDefiningOp<AllocOp>() ||
          isUnwrittenAlloc(grad.getBuffer()))
        return grad.emitOpError("binds the gradient of '")
               << grad.getName()
               << "' to a buffer no earlier kernel writes; a gradient is an "
                  "rt.alloc";
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      OpCode opcode = kernel.getOpcode();
      for (auto [i, operand] : llvm::enumerate(kernel.getInputs()))
        if (isUnwrittenAlloc(operand))
          return kernel.emitOpError()
                 << stringifyOpCode(opcode) << ": operand " << i
                 << " is an rt.alloc that no earlier kernel writes";
      for (auto [i, result] : llvm::enumerate(kernel.getOutputs())) {
        bool inPlace = getInPlaceOperand(opcode, i).has_value();
        Operation *def = result.getDefiningOp();
        if (!isa_and_nonnull<AllocOp>(def) &&
            !(inPlace && isa_and_nonnull<ParamOp, StateOp>(def)))
          return kernel.emitOpError()
                 << stringifyOpCode(opcode) << ": result " << i
                 << " is not an rt.alloc; kernels only read inputs, and "
                    "params and state only change by the optimizer's "
                    "in-place updates";
        written.insert(result);
      }
    } else if (isa<ProgramOp>(op)) {
      return op.emitOpError("cannot be nested in another rt.program");
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Buffer ops
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getHfName().empty())
    return emitOpError("hf_name must not be empty");
  if (!isa<FloatType>(getBuffer().getType().getElementType()))
    return emitOpError("'")
           << getHfName() << "': a parameter buffer holds "
           << "f32, bf16 or f16, not " << getBuffer().getType();
  ArrayRef<int64_t> hfShape = getHfShape();
  std::optional<int64_t> hfElements = elementCount(hfShape);
  if (!hfElements)
    return emitOpError("hf_shape of '")
           << getHfName() << "' has a negative dimension or too many elements";
  std::string what = ("'" + getHfName() + "'").str();
  // The global (padded) view: the buffer is its block.
  SmallVector<int64_t> global(getBuffer().getType().getShape());
  if (SplitsAttr splits = getSplitsAttr()) {
    FailureOr<SmallVector<int64_t>> verified =
        verifySplits(*this, what, splits, global);
    if (failed(verified))
      return failure();
    global = *verified;
  }
  ArrayRef<int64_t> view = global;
  if (!getViewShapeAttr() != !getPaddedShapeAttr())
    return emitOpError() << what
                         << ": view (before padding) and padded (after) are "
                            "given together or not at all";
  if (std::optional<ArrayRef<int64_t>> padded = getPaddedShape()) {
    if (*padded != ArrayRef<int64_t>(global))
      return emitOpError() << what << ": padded shape [" << *padded
                           << "] must be the buffer's shape times the split "
                              "sizes, ["
                           << global << "]";
    view = *getViewShape();
    bool fits = view.size() == global.size() && view != padded;
    for (auto [v, p] : llvm::zip(view, *padded))
      fits &= v >= 0 && v <= p;
    if (!fits)
      return emitOpError() << what << ": view [" << view
                           << "] must have the padded shape's rank and be no "
                              "larger in any dimension and smaller in one "
                              "than ["
                           << *padded << "]";
  }
  std::optional<int64_t> elements = elementCount(view);
  if (!elements || *hfElements != *elements) {
    InFlightDiagnostic diag = emitOpError()
                              << what << ": hf_shape [" << hfShape << "] has "
                              << *hfElements << " elements but ";
    if (getViewShapeAttr() || getSplitsAttr())
      diag << "the view [" << view << "] has ";
    else
      diag << "the buffer " << getBuffer().getType() << " has ";
    if (elements)
      diag << *elements;
    else
      diag << "more than 2^63";
    return diag;
  }
  double std = getInitStd().convertToDouble();
  if (!std::isfinite(std) || std < 0)
    return emitOpError("'") << getHfName()
                            << "': init std must be finite and non-negative "
                               "but is "
                            << std;
  return verifyOffset(*this, getOffsetAttr());
}

LogicalResult InputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  int64_t bound = getValueBoundAttr().getInt();
  if (bound < 0)
    return emitOpError("input '")
           << getName() << "': bound must be non-negative but is " << bound;
  if (bound != 0 && !getBuffer().getType().getElementType().isSignlessInteger())
    return emitOpError("input '")
           << getName() << "': a value bound needs an integer buffer, not "
           << getBuffer().getType();
  if (SplitsAttr splits = getSplitsAttr())
    if (failed(verifySplits(*this, "input '" + getName() + "'", splits,
                            getBuffer().getType().getShape())))
      return failure();
  return verifyOffset(*this, getOffsetAttr());
}

LogicalResult AllocOp::verify() { return verifyOffset(*this, getOffsetAttr()); }

LogicalResult StateOp::verify() {
  if (getName().empty() || getParam().empty())
    return emitOpError("name and param must not be empty");
  return verifyOffset(*this, getOffsetAttr());
}

LogicalResult OutputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return success();
}

LogicalResult GradOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

namespace {

/// What every opcode takes: its row of the kernel table the runtime reads
/// too (tpcrt/Kernels.def).
struct KernelInfo {
  OpCode op;
  unsigned minOperands, maxOperands, numResults;
  /// Length of `ints`: from minInts to maxInts; kRankInts: the rank of
  /// operand 0 (a permutation).
  int minInts, maxInts;
  unsigned numFloats;
  uint32_t flagMask;
  /// Comma-separated role names (an in-place update's results are the
  /// operands of the same names).
  const char *operandRoles, *resultRoles;
  /// Kernels.def's Aliasing column.
  enum Aliasing { None, SameBytes, Update } aliasing;
};
constexpr int kRankInts = -1;
constexpr unsigned kAnyCount = std::numeric_limits<unsigned>::max();

constexpr KernelInfo kKernels[] = {
#define TPCX_ANY kAnyCount
#define TPCX_RANK kRankInts
#define TPCX_KERNEL(Name, Value, Mnemonic, MinOperands, MaxOperands, Results,   \
                    MinInts, MaxInts, Floats, FlagMask, Aliasing, OperandRoles, \
                    ResultRoles, Decoder, ...)                                       \
  {OpCode::Name, MinOperands,  MaxOperands, Results,                           \
   MinInts,      MaxInts,      Floats,      FlagMask,                          \
   OperandRoles, ResultRoles,  KernelInfo::Aliasing},
#include "tpcrt/Kernels.def"
};
static_assert(std::size(kKernels) ==
                  static_cast<size_t>(getMaxEnumValForOpCode()) + 1,
              "every opcode needs a row in kKernels");

constexpr bool kernelTableIsIndexedByOpcode() {
  for (size_t i = 0; i < std::size(kKernels); ++i)
    if (static_cast<size_t>(kKernels[i].op) != i)
      return false;
  return true;
}
static_assert(kernelTableIsIndexedByOpcode(),
              "kKernels rows must be in opcode order");

} // namespace

std::optional<unsigned> mlir::rt::getInPlaceOperand(OpCode opcode,
                                                    unsigned result) {
  const KernelInfo &info = kKernels[static_cast<size_t>(opcode)];
  if (info.aliasing != KernelInfo::Update || result >= info.numResults)
    return std::nullopt;
  int operand =
      tpcrt::updatedOperand(info.operandRoles, info.resultRoles, result);
  if (operand < 0)
    return std::nullopt;
  return static_cast<unsigned>(operand);
}

namespace {

/// Shape and element checks of one kernel. Every message starts with the
/// opcode's name.
class KernelChecker {
public:
  explicit KernelChecker(KernelOp op) : op(op) {}

  InFlightDiagnostic error() {
    return op.emitOpError() << stringifyOpCode(op.getOpcode()) << ": ";
  }
  MemRefType in(unsigned i) {
    return cast<MemRefType>(op.getInputs()[i].getType());
  }
  MemRefType out(unsigned i) {
    return cast<MemRefType>(op.getOutputs()[i].getType());
  }

  LogicalResult isFloat(MemRefType type, StringRef name) {
    if (isa<Float32Type, BFloat16Type, Float16Type>(type.getElementType()))
      return success();
    return error() << name << " must hold f32, bf16 or f16 but is " << type;
  }
  LogicalResult isIndex(MemRefType type, StringRef name) {
    if (type.getElementType().isSignlessInteger(32) ||
        type.getElementType().isSignlessInteger(64))
      return success();
    return error() << name << " must hold i32 or i64 but is " << type;
  }
  LogicalResult isMask(MemRefType type, StringRef name) {
    if (type.getElementType().isSignlessInteger(8))
      return success();
    return error() << name << " must hold i8 (one byte per element) but is "
                   << type;
  }
  LogicalResult isF32(MemRefType type, StringRef name) {
    if (type.getElementType().isF32())
      return success();
    return error() << name << " must hold f32 but is " << type;
  }
  LogicalResult sameElement(MemRefType ref, StringRef refName, MemRefType other,
                            StringRef otherName) {
    if (ref.getElementType() == other.getElementType())
      return success();
    return error() << otherName << " element type " << other.getElementType()
                   << " differs from the " << refName << " element type "
                   << ref.getElementType();
  }
  LogicalResult sameType(MemRefType ref, StringRef refName, MemRefType other,
                         StringRef otherName) {
    if (ref == other)
      return success();
    return error() << otherName << " " << other << " must have the type of the "
                   << refName << " " << ref;
  }
  LogicalResult hasShape(MemRefType type, StringRef name,
                         ArrayRef<int64_t> expected) {
    if (type.getShape() == expected)
      return success();
    return error() << name << " has shape " << shapeStr(type.getShape())
                   << " but must be " << shapeStr(expected);
  }
  LogicalResult hasRank(MemRefType type, StringRef name, int64_t rank) {
    if (type.getRank() == rank)
      return success();
    return error() << name << " must have rank " << rank << " but has shape "
                   << shapeStr(type.getShape());
  }
  LogicalResult isScalar(MemRefType type, StringRef name, Type element) {
    if (type.getRank() == 0 && type.getElementType() == element)
      return success();
    return error() << name << " must be a scalar of " << element << " but is "
                   << type;
  }
  /// floats[index] lies in [low, high), `range` in words.
  LogicalResult floatInRange(unsigned index, StringRef name, double low,
                             double high, StringRef range) {
    double value = op.getFloats()[index];
    if (value >= low && value < high)
      return success();
    return error() << name << " must be " << range << " but is " << value;
  }
  LogicalResult isRate(unsigned index, StringRef name) {
    return floatInRange(index, name, 0.0, 1.0, "in [0, 1)");
  }
  LogicalResult nonNegativeFloat(unsigned index, StringRef name) {
    return floatInRange(index, name, 0.0,
                        std::numeric_limits<double>::infinity(),
                        "non-negative");
  }
  /// The optional first index (ints[1]) of a kernel drawing a dropout stream.
  LogicalResult firstIndex() {
    if (op.getInts().size() == 2 && op.getInts()[1] < 0)
      return error() << "first index (ints[1]) must be non-negative but is "
                     << op.getInts()[1];
    return success();
  }

  LogicalResult check();

private:
  LogicalResult checkEmbedding();
  LogicalResult checkLinear();
  LogicalResult checkBatchMatmul();
  LogicalResult checkNorm();
  LogicalResult checkUnary();
  LogicalResult checkBinary();
  LogicalResult checkAttention();
  LogicalResult checkCrossEntropy();
  LogicalResult checkLossMean();
  LogicalResult checkCopy();
  LogicalResult checkTranspose();
  LogicalResult checkSliceOrRepeat();
  LogicalResult checkCast();
  LogicalResult checkEmbeddingGrad();
  LogicalResult checkLinearGrad();
  LogicalResult checkSumTo();
  LogicalResult checkNormInputGrad();
  LogicalResult checkNormParamGrad();
  LogicalResult checkActivationGrad();
  LogicalResult checkDropoutMask();
  LogicalResult checkApplyMask();
  LogicalResult checkAttentionGrad();
  LogicalResult checkCrossEntropyGrad();
  LogicalResult checkPad();
  LogicalResult checkSumGroups();
  LogicalResult checkCountTargets();
  LogicalResult checkInverseCount();
  LogicalResult checkOptimizerUpdate();
  LogicalResult checkSumSquares();
  LogicalResult checkClipCoefficient();
  LogicalResult checkLrSchedule();
  LogicalResult checkCollective();

  /// Shapes shared by linear and its gradients: the result (or dY) shape
  /// for `input` ([..., in]) and `weight`, by the out_in flag.
  FailureOr<SmallVector<int64_t>> linearResultShape(MemRefType input,
                                                    StringRef inputName,
                                                    MemRefType weight,
                                                    StringRef weightName);
  /// q, k and v of attention (operands first .. first + 2), its dropout
  /// rate and causal flag; the result (or dO) shape [b, h, sq, dv].
  FailureOr<SmallVector<int64_t>> attentionResultShape(unsigned first);
  /// Labels of cross_entropy (grad): the logits' shape without its last
  /// dimension.
  LogicalResult checkLogitsAndLabels(MemRefType logits, MemRefType labels);
  /// A causal softmax needs [..., q, k] with k >= q.
  LogicalResult checkCausalSoftmax(MemRefType input);

  KernelOp op;
};

} // namespace

LogicalResult KernelChecker::checkEmbedding() {
  MemRefType table = in(0), ids = in(1), result = out(0);
  if (failed(isFloat(table, "table")) || failed(isIndex(ids, "ids")) ||
      failed(hasRank(table, "table", 2)) ||
      failed(sameElement(table, "table", result, "result")))
    return failure();
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  return hasShape(result, "result", expected);
}

FailureOr<SmallVector<int64_t>>
KernelChecker::linearResultShape(MemRefType input, StringRef inputName,
                                 MemRefType weight, StringRef weightName) {
  if (input.getRank() < 1 || weight.getRank() < 2)
    return error() << inputName << " must have rank >= 1 and " << weightName
                   << " rank >= 2, but they have shapes "
                   << shapeStr(input.getShape()) << " and "
                   << shapeStr(weight.getShape());
  int64_t k = input.getShape().back();
  bool outIn = op.getFlags() & 1;
  ArrayRef<int64_t> w = weight.getShape();
  int64_t weightIn = outIn ? w.back() : w.front();
  if (weightIn != k)
    return error() << weightName << " " << shapeStr(w) << " ("
                   << (outIn ? "[out..., in]" : "[in, out...]")
                   << ") does not contract " << inputName << " dimension " << k;
  ArrayRef<int64_t> outDims = outIn ? w.drop_back() : w.drop_front();
  SmallVector<int64_t> expected(input.getShape().drop_back());
  expected.append(outDims.begin(), outDims.end());
  return expected;
}

LogicalResult KernelChecker::checkLinear() {
  MemRefType input = in(0), weight = in(1), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameElement(input, "input", weight, "weight")) ||
      failed(sameElement(input, "input", result, "result")))
    return failure();
  FailureOr<SmallVector<int64_t>> expected =
      linearResultShape(input, "input", weight, "weight");
  // The runtime only reads element counts (m, k, n), but a consistent shape
  // catches a mixed-up layout flag.
  if (failed(expected) || failed(hasShape(result, "result", *expected)))
    return failure();
  if (op.getInputs().size() == 3) {
    MemRefType bias = in(2);
    if (failed(sameElement(input, "input", bias, "bias")))
      return failure();
    ArrayRef<int64_t> w = weight.getShape();
    int64_t n =
        *elementCount((op.getFlags() & 1) ? w.drop_back() : w.drop_front());
    if (bias.getNumElements() != n)
      return error() << "bias has " << bias.getNumElements()
                     << " elements but the output has " << n << " features";
  }
  return success();
}

LogicalResult KernelChecker::checkBatchMatmul() {
  MemRefType lhs = in(0), rhs = in(1), result = out(0);
  if (failed(isFloat(lhs, "lhs")) ||
      failed(sameElement(lhs, "lhs", rhs, "rhs")) ||
      failed(sameElement(lhs, "lhs", result, "result")))
    return failure();
  int64_t rank = lhs.getRank();
  if (rank < 2 || rhs.getRank() != rank)
    return error() << "lhs and rhs must have the same rank >= 2 but have "
                      "shapes "
                   << shapeStr(lhs.getShape()) << " and "
                   << shapeStr(rhs.getShape());
  bool tl = op.getFlags() & 1, tr = op.getFlags() & 2;
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t m = l[rank - (tl ? 1 : 2)], kl = l[rank - (tl ? 2 : 1)];
  int64_t kr = r[rank - (tr ? 1 : 2)], n = r[rank - (tr ? 2 : 1)];
  if (kl != kr || l.drop_back(2) != r.drop_back(2))
    return error() << "lhs " << shapeStr(l) << " and rhs " << shapeStr(r)
                   << " do not multiply (transpose_lhs " << tl
                   << ", transpose_rhs " << tr << ")";
  SmallVector<int64_t> expected(l.drop_back(2));
  expected.append({m, n});
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkNorm() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameType(input, "input", result, "result")) ||
      failed(nonNegativeFloat(0, "epsilon")))
    return failure();
  if (input.getRank() < 1)
    return error() << "input must have rank >= 1";
  int64_t hidden = input.getShape().back();
  StringRef names[] = {"input", "weight", "bias"};
  for (unsigned i = 1, e = op.getInputs().size(); i < e; ++i) {
    if (failed(sameElement(input, "input", in(i), names[i])) ||
        failed(hasShape(in(i), names[i], {hidden})))
      return failure();
  }
  return success();
}

LogicalResult KernelChecker::checkCausalSoftmax(MemRefType input) {
  if ((op.getFlags() & 1) &&
      (input.getRank() < 2 ||
       input.getShape().back() < input.getShape()[input.getRank() - 2]))
    return error() << "a causal softmax needs [..., q, k] with k >= q but "
                      "the input has shape "
                   << shapeStr(input.getShape());
  return success();
}

LogicalResult KernelChecker::checkUnary() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameType(input, "input", result, "result")))
    return failure();
  switch (op.getOpcode()) {
  case OpCode::Dropout:
    return failure(failed(isRate(0, "rate")) || failed(firstIndex()));
  case OpCode::Softmax:
    return checkCausalSoftmax(input);
  case OpCode::Rotary:
    if (input.getRank() != 4 || input.getShape().back() % 2 != 0)
      return error() << "input must be [b, heads, s, d] with an even d but "
                        "has shape "
                     << shapeStr(input.getShape());
    if (op.getInts()[0] < 0)
      return error() << "position offset must be non-negative but is "
                     << op.getInts()[0];
    return success();
  default:
    return success();
  }
}

LogicalResult KernelChecker::checkBinary() {
  MemRefType lhs = in(0), rhs = in(1), result = out(0);
  if (failed(isFloat(lhs, "lhs")) ||
      failed(sameElement(lhs, "lhs", rhs, "rhs")) ||
      failed(sameType(lhs, "lhs", result, "result")))
    return failure();
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  if (r.size() > l.size() || l.take_back(r.size()) != r)
    return error() << "rhs shape " << shapeStr(r)
                   << " is not a suffix of the lhs shape " << shapeStr(l);
  return success();
}

FailureOr<SmallVector<int64_t>>
KernelChecker::attentionResultShape(unsigned first) {
  MemRefType q = in(first), k = in(first + 1), v = in(first + 2);
  if (failed(isFloat(q, "query")) ||
      failed(sameElement(q, "query", k, "key")) ||
      failed(sameElement(q, "query", v, "value")) ||
      failed(hasRank(q, "query", 4)) || failed(hasRank(k, "key", 4)) ||
      failed(hasRank(v, "value", 4)))
    return failure();
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  if (ks[0] != qs[0] || ks[3] != qs[3] || vs[0] != ks[0] || vs[1] != ks[1] ||
      vs[2] != ks[2] || ks[1] <= 0 || qs[1] % ks[1] != 0)
    return error() << "query " << shapeStr(qs) << ", key " << shapeStr(ks)
                   << " and value " << shapeStr(vs)
                   << " are not [b, h, sq, d], [b, kv, sk, d], [b, kv, sk, dv] "
                      "with h a multiple of kv";
  if ((op.getFlags() & 1) && ks[2] < qs[2])
    return error() << "causal attention needs sk >= sq but sk is " << ks[2]
                   << " and sq " << qs[2];
  if (failed(isRate(1, "dropout rate")) || failed(firstIndex()))
    return failure();
  return SmallVector<int64_t>{qs[0], qs[1], qs[2], vs[3]};
}

LogicalResult KernelChecker::checkAttention() {
  FailureOr<SmallVector<int64_t>> expected = attentionResultShape(0);
  if (failed(expected) || failed(sameElement(in(0), "query", out(0), "result")))
    return failure();
  return hasShape(out(0), "result", *expected);
}

LogicalResult KernelChecker::checkLogitsAndLabels(MemRefType logits,
                                                  MemRefType labels) {
  if (failed(isFloat(logits, "logits")) || failed(isIndex(labels, "labels")))
    return failure();
  if (logits.getRank() < 1 ||
      labels.getShape() != logits.getShape().drop_back())
    return error() << "labels shape " << shapeStr(labels.getShape())
                   << " must be the logits shape "
                   << shapeStr(logits.getShape())
                   << " without its last dimension";
  return success();
}

LogicalResult KernelChecker::checkCrossEntropy() {
  if (failed(checkLogitsAndLabels(in(0), in(1))))
    return failure();
  Builder b(op.getContext());
  if (failed(isScalar(out(0), "result 0 (loss sum)", b.getF32Type())) ||
      failed(isScalar(out(1), "result 1 (count)", b.getIntegerType(64))))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkLossMean() {
  Builder b(op.getContext());
  if (failed(isScalar(in(0), "operand 0 (sum)", b.getF32Type())) ||
      failed(isScalar(in(1), "operand 1 (count)", b.getIntegerType(64))) ||
      failed(isScalar(out(0), "result", b.getF32Type())))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkCopy() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  if (input.getNumElements() != result.getNumElements())
    return error() << "input " << shapeStr(input.getShape()) << " has "
                   << input.getNumElements() << " elements but result "
                   << shapeStr(result.getShape()) << " has "
                   << result.getNumElements();
  return success();
}

LogicalResult KernelChecker::checkTranspose() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  ArrayRef<int64_t> perm = op.getInts();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
      return error() << "ints [" << perm << "] is not a permutation of rank "
                     << perm.size();
    seen[p] = true;
    expected.push_back(input.getDimSize(p));
  }
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkSliceOrRepeat() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  ArrayRef<int64_t> ints = op.getInts();
  int64_t dim = ints[0];
  if (dim < 0 || dim >= input.getRank())
    return error() << "dim " << dim << " is out of range for input shape "
                   << shapeStr(input.getShape());
  SmallVector<int64_t> expected(input.getShape());
  int64_t size = expected[dim];
  if (op.getOpcode() == OpCode::Slice) {
    int64_t offset = ints[1], length = ints[2];
    if (offset < 0 || length < 0 || offset > size || length > size - offset)
      return error() << "[" << offset << ", +" << length
                     << ") is out of range for dimension " << dim << " of size "
                     << size;
    expected[dim] = length;
  } else {
    int64_t repeats = ints[1];
    if (repeats < 1 || llvm::MulOverflow(size, repeats, expected[dim]))
      return error() << "repeats must be positive (and the result fit in "
                        "int64) but is "
                     << repeats;
  }
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkCast() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) || failed(isFloat(result, "result")) ||
      failed(hasShape(result, "result", input.getShape())))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkEmbeddingGrad() {
  MemRefType grad = in(0), ids = in(1), result = out(0);
  if (failed(isFloat(grad, "dY")) || failed(isIndex(ids, "ids")) ||
      failed(isFloat(result, "result")) || failed(hasRank(result, "result", 2)))
    return failure();
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(result.getDimSize(1));
  return hasShape(grad, "dY", expected);
}

// Gradients may change the element type (f32 accumulation of a 16-bit
// model), so only their shapes are tied to the forward op's.
LogicalResult KernelChecker::checkLinearGrad() {
  for (unsigned i = 0; i < 2; ++i)
    if (failed(isFloat(in(i), "operand " + std::to_string(i))))
      return failure();
  if (failed(isFloat(out(0), "result")))
    return failure();
  bool inputGrad = op.getOpcode() == OpCode::LinearInputGrad;
  MemRefType input = inputGrad ? out(0) : in(0);
  MemRefType weight = inputGrad ? in(1) : out(0);
  MemRefType grad = inputGrad ? in(0) : in(1);
  FailureOr<SmallVector<int64_t>> expected =
      linearResultShape(input, inputGrad ? "result" : "input", weight,
                        inputGrad ? "weight" : "result");
  if (failed(expected))
    return failure();
  return hasShape(grad, "dY", *expected);
}

LogicalResult KernelChecker::checkSumTo() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) || failed(isFloat(result, "result")))
    return failure();
  ArrayRef<int64_t> x = input.getShape(), y = result.getShape();
  if (y.size() > x.size() || x.take_back(y.size()) != y)
    return error() << "result shape " << shapeStr(y)
                   << " is not a suffix of the input shape " << shapeStr(x);
  return success();
}

LogicalResult KernelChecker::checkNormInputGrad() {
  MemRefType grad = in(0), input = in(1), weight = in(2), result = out(0);
  if (failed(isFloat(grad, "dY")) || failed(isFloat(input, "input")) ||
      failed(isFloat(weight, "weight")) || failed(isFloat(result, "result")) ||
      failed(nonNegativeFloat(0, "epsilon")) ||
      failed(hasShape(grad, "dY", input.getShape())) ||
      failed(hasShape(result, "result", input.getShape())))
    return failure();
  if (input.getRank() < 1)
    return error() << "input must have rank >= 1";
  return hasShape(weight, "weight", {input.getShape().back()});
}

LogicalResult KernelChecker::checkNormParamGrad() {
  MemRefType grad = in(0), input = in(1);
  if (failed(isFloat(grad, "dY")) || failed(isFloat(input, "input")) ||
      failed(nonNegativeFloat(0, "epsilon")) ||
      failed(hasShape(grad, "dY", input.getShape())))
    return failure();
  if (input.getRank() < 1)
    return error() << "input must have rank >= 1";
  for (unsigned i = 0, e = op.getOutputs().size(); i < e; ++i) {
    std::string name = "result " + std::to_string(i);
    if (failed(isFloat(out(i), name)) ||
        failed(hasShape(out(i), name, {input.getShape().back()})))
      return failure();
  }
  return success();
}

/// gelu_grad, silu_grad and softmax_grad: dY, the forward value and the
/// result have one shape.
LogicalResult KernelChecker::checkActivationGrad() {
  MemRefType grad = in(0), input = in(1), result = out(0);
  if (failed(isFloat(grad, "dY")) || failed(isFloat(input, "operand 1")) ||
      failed(isFloat(result, "result")) ||
      failed(hasShape(grad, "dY", input.getShape())) ||
      failed(hasShape(result, "result", input.getShape())))
    return failure();
  if (op.getOpcode() == OpCode::SoftmaxGrad)
    return checkCausalSoftmax(input);
  return success();
}

LogicalResult KernelChecker::checkDropoutMask() {
  if (failed(isMask(out(0), "result")) || failed(isRate(0, "rate")))
    return failure();
  return firstIndex();
}

LogicalResult KernelChecker::checkApplyMask() {
  MemRefType input = in(0), mask = in(1), result = out(0);
  if (failed(isFloat(input, "input")) || failed(isMask(mask, "mask")) ||
      failed(sameType(input, "input", result, "result")) ||
      failed(hasShape(mask, "mask", input.getShape())))
    return failure();
  return isRate(0, "rate");
}

LogicalResult KernelChecker::checkAttentionGrad() {
  FailureOr<SmallVector<int64_t>> expected = attentionResultShape(1);
  if (failed(expected) || failed(isFloat(in(0), "dO")) ||
      failed(hasShape(in(0), "dO", *expected)))
    return failure();
  StringRef names[] = {"query grad", "key grad", "value grad"};
  for (unsigned i = 0; i < 3; ++i)
    if (failed(isFloat(out(i), names[i])) ||
        failed(hasShape(out(i), names[i], in(i + 1).getShape())))
      return failure();
  return success();
}

LogicalResult KernelChecker::checkCrossEntropyGrad() {
  Builder b(op.getContext());
  if (failed(checkLogitsAndLabels(in(0), in(1))) ||
      failed(isScalar(in(2), "operand 2 (loss sum grad)", b.getF32Type())) ||
      failed(isFloat(out(0), "result")))
    return failure();
  return hasShape(out(0), "result", in(0).getShape());
}

LogicalResult KernelChecker::checkPad() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameElement(input, "input", result, "result")))
    return failure();
  int64_t dim = op.getInts()[0], offset = op.getInts()[1];
  if (dim < 0 || dim >= result.getRank() || input.getRank() != result.getRank())
    return error() << "dim " << dim << " is out of range, or input "
                   << shapeStr(input.getShape()) << " and result "
                   << shapeStr(result.getShape()) << " differ in rank";
  int64_t size = input.getDimSize(dim), extent = result.getDimSize(dim);
  if (offset < 0 || offset > extent || size > extent - offset)
    return error() << "input's " << size << " at offset " << offset
                   << " of dimension " << dim << " lie outside the result's "
                   << extent;
  SmallVector<int64_t> expected(result.getShape());
  expected[dim] = size;
  return hasShape(input, "input", expected);
}

LogicalResult KernelChecker::checkSumGroups() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameElement(input, "input", result, "result")))
    return failure();
  int64_t dim = op.getInts()[0], repeats = op.getInts()[1];
  if (dim < 0 || dim >= input.getRank())
    return error() << "dim " << dim << " is out of range for input shape "
                   << shapeStr(input.getShape());
  if (repeats < 1 || input.getDimSize(dim) % repeats != 0)
    return error() << "repeats " << repeats
                   << " is not a positive divisor of dimension " << dim
                   << " of the input shape " << shapeStr(input.getShape());
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] /= repeats;
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkCountTargets() {
  if (failed(isIndex(in(0), "labels")))
    return failure();
  return isScalar(out(0), "result", IntegerType::get(op.getContext(), 64));
}

LogicalResult KernelChecker::checkInverseCount() {
  Builder b(op.getContext());
  if (failed(isScalar(in(0), "operand 0 (count)", b.getIntegerType(64))))
    return failure();
  return isScalar(out(0), "result", b.getF32Type());
}

LogicalResult KernelChecker::checkOptimizerUpdate() {
  bool adamw = op.getOpcode() == OpCode::AdamWUpdate;
  Builder b(op.getContext());
  if (adamw) {
    if (failed(isRate(0, "beta1")) || failed(isRate(1, "beta2")) ||
        failed(nonNegativeFloat(2, "eps")) ||
        failed(nonNegativeFloat(3, "weight decay")))
      return failure();
  } else if (failed(nonNegativeFloat(0, "momentum")) ||
             failed(nonNegativeFloat(1, "weight decay"))) {
    return failure();
  }
  StringRef adamwNames[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  StringRef sgdNames[] = {"param", "grad", "momentum"};
  ArrayRef<StringRef> names = adamw ? ArrayRef(adamwNames) : ArrayRef(sgdNames);
  for (auto [i, name] : llvm::enumerate(names))
    if (failed(isF32(in(i), name)) ||
        failed(hasShape(in(i), name, in(0).getShape())))
      return failure();
  unsigned next = names.size();
  if (failed(isScalar(in(next++), "lr", b.getF32Type())))
    return failure();
  if (adamw && failed(isScalar(in(next++), "step", b.getIntegerType(64))))
    return failure();
  if (op.getInputs().size() > next &&
      failed(isScalar(in(next), "grad scale", b.getF32Type())))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkSumSquares() {
  for (unsigned i = 0, e = op.getInputs().size(); i < e; ++i)
    if (failed(isFloat(in(i), "operand " + std::to_string(i))))
      return failure();
  return isScalar(out(0), "result", Float32Type::get(op.getContext()));
}

LogicalResult KernelChecker::checkClipCoefficient() {
  Type f32 = Float32Type::get(op.getContext());
  if (failed(nonNegativeFloat(0, "max norm")) ||
      failed(isScalar(in(0), "operand 0 (sum of squares)", f32)) ||
      failed(isScalar(out(0), "result 0 (norm)", f32)) ||
      failed(isScalar(out(1), "result 1 (coefficient)", f32)))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkLrSchedule() {
  Builder b(op.getContext());
  if (failed(nonNegativeFloat(0, "lr")) ||
      failed(nonNegativeFloat(1, "min lr")) ||
      failed(isScalar(in(0), "operand 0 (step)", b.getIntegerType(64))) ||
      failed(isScalar(out(0), "result (lr)", b.getF32Type())))
    return failure();
  int64_t warmup = op.getInts()[0], decay = op.getInts()[1];
  if (warmup < 0 || decay < 0)
    return error() << "warm-up and decay steps must be non-negative but are "
                   << warmup << " and " << decay;
  if ((op.getFlags() & 1) && decay <= warmup)
    return error() << "a cosine schedule needs decay steps (" << decay
                   << ") greater than warm-up steps (" << warmup << ")";
  return success();
}

/// The int_attrs are [dims..., axes...]: all_reduce has no dim, all_to_all
/// two (split, concat), the others one.
LogicalResult KernelChecker::checkCollective() {
  MeshAttr mesh = getProgramMesh(op);
  if (!mesh)
    return error() << "a collective needs the mesh of its rt.program";
  OpCode opcode = op.getOpcode();
  unsigned numDims = opcode == OpCode::AllReduce  ? 0
                     : opcode == OpCode::AllToAll ? 2
                                                  : 1;
  ArrayRef<int64_t> ints = op.getInts();
  int64_t group = 1;
  SmallVector<bool> seen(mesh.getNumAxes(), false);
  for (int64_t axis : ints.drop_front(numDims)) {
    if (axis < 0 || axis >= mesh.getNumAxes())
      return error() << "mesh axis " << axis << " is out of range for the mesh "
                     << meshStr(mesh) << " (ints [" << ints << "])";
    if (seen[axis])
      return error() << "mesh axis " << axis << " ('" << mesh.getAxisName(axis)
                     << "') is named twice (ints [" << ints << "])";
    seen[axis] = true;
    group *= mesh.getSizes()[axis];
  }
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  Type element = input.getElementType();
  if (opcode == OpCode::AllReduce) {
    bool max = op.getFlags() & 1;
    if (!isa<FloatType>(element) && !(element.isSignlessInteger(64) && !max))
      return error() << "reduces f32, bf16 or f16 (sum or max) or i64 (sum), not "
                     << (max ? "the max of " : "the sum of ") << input;
    return sameType(input, "input", result, "result");
  }
  if (opcode == OpCode::ReduceScatter && !isa<FloatType>(element))
    return error() << "reduces f32, bf16 or f16, not " << input;
  // Each dim names a dimension of the input; the result's is `g` times
  // (gathered, padded) or a `g`-th (divided) of it.
  SmallVector<int64_t> expected(input.getShape());
  auto dimAt = [&](unsigned i, StringRef name) -> FailureOr<int64_t> {
    int64_t dim = ints[i];
    if (dim < 0 || dim >= input.getRank())
      return error() << name << " " << dim << " is out of range for input "
                     << "shape " << shapeStr(input.getShape());
    return dim;
  };
  auto divide = [&](int64_t dim) -> LogicalResult {
    if (expected[dim] % group != 0)
      return error() << "dimension " << dim << " of the input shape "
                     << shapeStr(input.getShape())
                     << " is not divisible by the group size " << group;
    expected[dim] /= group;
    return success();
  };
  auto multiply = [&](int64_t dim) -> LogicalResult {
    if (llvm::MulOverflow(expected[dim], group, expected[dim]))
      return error() << "dimension " << dim << " times the group size " << group
                     << " does not fit in int64";
    return success();
  };
  if (opcode == OpCode::AllToAll) {
    FailureOr<int64_t> split = dimAt(0, "split dim");
    if (failed(split))
      return failure();
    FailureOr<int64_t> concat = dimAt(1, "concat dim");
    if (failed(concat) || failed(divide(*split)) || failed(multiply(*concat)))
      return failure();
  } else {
    FailureOr<int64_t> dim = dimAt(0, "dim");
    bool grows = opcode == OpCode::AllGather || opcode == OpCode::ShardPad;
    if (failed(dim) || failed(grows ? multiply(*dim) : divide(*dim)))
      return failure();
  }
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::check() {
  const KernelInfo &info = kKernels[static_cast<size_t>(op.getOpcode())];
  unsigned numOperands = op.getInputs().size();
  if (numOperands < info.minOperands || numOperands > info.maxOperands) {
    InFlightDiagnostic diag = error()
                              << "has " << numOperands << " operands, expected "
                              << info.minOperands;
    if (info.maxOperands == kAnyCount)
      diag << " or more";
    else if (info.maxOperands != info.minOperands)
      diag << " to " << info.maxOperands;
    return diag;
  }
  if (op.getOutputs().size() != info.numResults)
    return error() << "has " << op.getOutputs().size() << " results, expected "
                   << info.numResults;
  int64_t minInts = info.minInts, maxInts = info.maxInts;
  if (minInts == kRankInts)
    minInts = maxInts = in(0).getRank();
  auto numInts = static_cast<int64_t>(op.getInts().size());
  if (numInts < minInts || numInts > maxInts) {
    InFlightDiagnostic diag = error() << "takes " << minInts;
    if (maxInts != minInts)
      diag << " or " << maxInts;
    return diag << " ints but has " << numInts;
  }
  if (op.getFloats().size() != info.numFloats)
    return error() << "takes " << info.numFloats << " floats but has "
                   << op.getFloats().size();
  for (double value : op.getFloats())
    if (!std::isfinite(value))
      return error() << "floats must be finite but one is " << value;
  if (uint32_t unknown = op.getFlags() & ~info.flagMask)
    return error() << "flags " << op.getFlags() << " set bits " << unknown
                   << " this kernel does not define";
  for (auto [i, result] : llvm::enumerate(op.getOutputs())) {
    if (std::optional<unsigned> updated =
            getInPlaceOperand(op.getOpcode(), i)) {
      if (result != op.getInputs()[*updated])
        return error() << "result " << i << " must be operand " << *updated
                       << ", which this kernel updates in place";
      continue;
    }
    if (llvm::is_contained(op.getInputs(), result))
      return error() << "result " << i
                     << " is also an operand; kernels do not run in place";
    if (llvm::is_contained(op.getOutputs().take_front(i), result))
      return error() << "result " << i << " repeats an earlier result";
  }
  // An in-place update must not read the buffers it writes anywhere else.
  for (auto [i, result] : llvm::enumerate(op.getOutputs()))
    if (std::optional<unsigned> updated = getInPlaceOperand(op.getOpcode(), i))
      for (auto [j, operand] : llvm::enumerate(op.getInputs()))
        if (j != *updated && operand == result)
          return error() << "operand " << j << " is result " << i
                         << ", which this kernel updates in place";

  if (SplitsAttr splits = op.getSplitsAttr()) {
    if (!drawsDropout(op.getOpcode()))
      return error() << "only dropout, dropout_mask, attention and "
                        "attention_grad take splits";
    if (failed(verifySplits(op, stringifyOpCode(op.getOpcode()), splits,
                            out(0).getShape())))
      return failure();
  }

  switch (op.getOpcode()) {
  case OpCode::Embedding:
    return checkEmbedding();
  case OpCode::Linear:
    return checkLinear();
  case OpCode::BatchMatmul:
    return checkBatchMatmul();
  case OpCode::LayerNorm:
  case OpCode::RmsNorm:
    return checkNorm();
  case OpCode::Gelu:
  case OpCode::Silu:
  case OpCode::Dropout:
  case OpCode::Softmax:
  case OpCode::Rotary:
    return checkUnary();
  case OpCode::Add:
  case OpCode::Mul:
    return checkBinary();
  case OpCode::Attention:
    return checkAttention();
  case OpCode::CrossEntropy:
    return checkCrossEntropy();
  case OpCode::LossMean:
    return checkLossMean();
  case OpCode::Copy:
    return checkCopy();
  case OpCode::Transpose:
    return checkTranspose();
  case OpCode::Slice:
  case OpCode::Repeat:
    return checkSliceOrRepeat();
  case OpCode::Cast:
    return checkCast();
  case OpCode::EmbeddingGrad:
    return checkEmbeddingGrad();
  case OpCode::LinearInputGrad:
  case OpCode::LinearWeightGrad:
    return checkLinearGrad();
  case OpCode::SumTo:
    return checkSumTo();
  case OpCode::LayerNormInputGrad:
  case OpCode::RmsNormInputGrad:
    return checkNormInputGrad();
  case OpCode::LayerNormParamGrad:
  case OpCode::RmsNormParamGrad:
    return checkNormParamGrad();
  case OpCode::GeluGrad:
  case OpCode::SiluGrad:
  case OpCode::SoftmaxGrad:
    return checkActivationGrad();
  case OpCode::DropoutMask:
    return checkDropoutMask();
  case OpCode::ApplyMask:
    return checkApplyMask();
  case OpCode::AttentionGrad:
    return checkAttentionGrad();
  case OpCode::CrossEntropyGrad:
    return checkCrossEntropyGrad();
  case OpCode::Pad:
    return checkPad();
  case OpCode::SumGroups:
    return checkSumGroups();
  case OpCode::CountTargets:
    return checkCountTargets();
  case OpCode::InverseCount:
    return checkInverseCount();
  case OpCode::AdamWUpdate:
  case OpCode::SgdUpdate:
    return checkOptimizerUpdate();
  case OpCode::SumSquares:
    return checkSumSquares();
  case OpCode::ClipCoefficient:
    return checkClipCoefficient();
  case OpCode::LrSchedule:
    return checkLrSchedule();
  case OpCode::AllReduce:
  case OpCode::AllGather:
  case OpCode::ReduceScatter:
  case OpCode::ShardSlice:
  case OpCode::AllToAll:
  case OpCode::ShardPad:
    return checkCollective();
  }
  llvm_unreachable("unknown opcode");
}

LogicalResult KernelOp::verify() { return KernelChecker(*this).check(); }
