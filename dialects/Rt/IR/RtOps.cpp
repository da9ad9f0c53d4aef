//===- RtOps.cpp - rt op verifiers ----------------------------------------===//
//
// The runtime trusts what the executable says about shapes, so the verifier
// checks per opcode everything a kernel relies on: operand and result counts,
// attribute lengths, flag bits, shapes and element types. Every message names
// the kernel and the bad operand or attribute.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"

#include "tpcrt/KernelTable.h"
#include "tpcrt/Program.h"

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

bool mlir::rt::isCollective(OpCode opcode) {
  switch (opcode) {
  case OpCode::AllReduce:
  case OpCode::AllGather:
  case OpCode::ReduceScatter:
  case OpCode::AllToAll:
    return true;
  default:
    return false;
  }
}

bool mlir::rt::isAllReduce(Operation *op) {
  auto kernel = dyn_cast<KernelOp>(op);
  return kernel && kernel.getOpcode() == OpCode::AllReduce;
}

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
  for (Operation &op : body) {
    if (op.getDialect() != (*this)->getDialect())
      return op.emitOpError("is not an rt op; an rt.program holds only rt "
                            "ops");
    if (isa<ProgramOp>(op))
      return op.emitOpError("cannot be nested in another rt.program");
  }
  return success();
}

// A region verifier: MLIR runs an op's verify() before the ops it holds are
// verified, and the checks below read those ops' attributes (an rt.kernel
// without its opcode crashed the verifier; found by test/fuzz).
LogicalResult ProgramOp::verifyRegions() {
  Block &body = getBody().front();
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
    } else if (auto alloc = dyn_cast<AllocOp>(op)) {
      if (std::optional<int64_t> pool = alloc.getPool()) {
        auto pools = (*this)->getAttrOfType<ArrayAttr>("pools");
        int64_t count = pools ? pools.size() : 0;
        if (*pool < 0 || *pool >= count)
          return alloc.emitOpError("is in pool ")
                 << *pool << " but the program has " << count
                 << " pools ('pools')";
      }
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
  if (std::optional<int64_t> count = getMicrobatches())
    if (*count < 1 || getBuffer().getType().getRank() == 0)
      return emitOpError("input '")
             << getName() << "': microbatches must be at least 1 and the "
             << "buffer not a scalar, not " << *count << " of "
             << getBuffer().getType();
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

/// What every opcode takes: its row of the kernel table (tpcrt/Kernels.def),
/// as the runtime's loader reads it (tpcrt_schema).
static const tpcrt::KernelInfo &kernelInfoOf(OpCode opcode) {
  return *tpcrt::kernelInfo(static_cast<tpcrt::fb::OpCode>(opcode));
}

std::optional<unsigned> mlir::rt::getInPlaceOperand(OpCode opcode,
                                                    unsigned result) {
  int operand = tpcrt::inPlaceOperand(
      static_cast<tpcrt::fb::OpCode>(opcode), result);
  if (operand < 0)
    return std::nullopt;
  return static_cast<unsigned>(operand);
}

namespace {

/// The checks of one kernel: the counts, attribute lengths, flags and
/// aliasing of its Kernels.def row here, then its dtype and shape rule by
/// the runtime's own decoder (tpcrt::decodeKernel), so that the verifier
/// accepts exactly the kernels the loader does. Every message starts with
/// the opcode's name.
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

  LogicalResult check();

private:
  /// The opcode's dtype and shape rule: the runtime decoder's.
  LogicalResult checkWithDecoder();

  KernelOp op;
};

/// A buffer as the decoder sees it (no offset: the plan has not placed it).
tpcrt::TensorRef tensorRefOf(MemRefType type) {
  tpcrt::TensorRef ref;
  Type element = type.getElementType();
  namespace fb = tpcrt::fb;
  ref.dtype = element.isF32()                   ? fb::DType::F32
              : element.isBF16()                ? fb::DType::BF16
              : element.isF16()                 ? fb::DType::F16
              : element.isSignlessInteger(32)   ? fb::DType::I32
              : element.isSignlessInteger(64)   ? fb::DType::I64
                                                : fb::DType::U8;
  ref.shape.assign(type.getShape().begin(), type.getShape().end());
  ref.elements = type.getNumElements();
  ref.bytes = static_cast<uint64_t>(ref.elements) *
              ((type.getElementTypeBitWidth() + 7) / 8);
  return ref;
}

} // namespace

LogicalResult KernelChecker::checkWithDecoder() {
  tpcrt::KernelCall call;
  call.op = static_cast<tpcrt::fb::OpCode>(op.getOpcode());
  for (Value operand : op.getInputs())
    call.operands.push_back(tensorRefOf(cast<MemRefType>(operand.getType())));
  for (Value result : op.getOutputs())
    call.results.push_back(tensorRefOf(cast<MemRefType>(result.getType())));
  call.intAttrs.assign(op.getInts().begin(), op.getInts().end());
  call.floatAttrs.assign(op.getFloats().begin(), op.getFloats().end());
  call.flags = op.getFlags();
  tpcrt::Mesh mesh;
  if (MeshAttr attr = getProgramMesh(op)) {
    for (StringRef name : attr.getNames().getAsValueRange<StringAttr>())
      mesh.names.push_back(name.str());
    mesh.sizes.assign(attr.getSizes().begin(), attr.getSizes().end());
    if (SplitsAttr splits = op.getSplitsAttr())
      for (const SmallVector<unsigned> &axes : getSplitAxes(attr, splits))
        call.splits.emplace_back(axes.begin(), axes.end());
  }
  if (tpcrt::Status status = tpcrt::decodeKernel(call, mesh); !status)
    return error() << status.message();
  return success();
}

LogicalResult KernelChecker::check() {
  const tpcrt::KernelInfo &info = kernelInfoOf(op.getOpcode());
  unsigned numOperands = op.getInputs().size();
  if (numOperands < info.minOperands || numOperands > info.maxOperands) {
    InFlightDiagnostic diag = error()
                              << "has " << numOperands << " operands, expected "
                              << info.minOperands;
    if (info.maxOperands == tpcrt::kAnyCount)
      diag << " or more";
    else if (info.maxOperands != info.minOperands)
      diag << " to " << info.maxOperands;
    return diag;
  }
  if (op.getOutputs().size() != info.numResults)
    return error() << "has " << op.getOutputs().size() << " results, expected "
                   << info.numResults;
  int64_t minInts = info.minInts, maxInts = info.maxInts;
  if (minInts == tpcrt::kRankInts)
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
    // An accumulator adds into itself: add's result may be its lhs (a sum
    // over the microbatches of a program of actions); such a sum may then
    // be reduced over the ranks where it is (rt-issue-reductions-early).
    bool accumulates = op.getOpcode() == OpCode::Add && i == 0 &&
                       result == op.getInputs()[0] &&
                       op.getInputs()[1] != result;
    bool reducesInPlace =
        op.getOpcode() == OpCode::AllReduce && result == op.getInputs()[0];
    if (llvm::is_contained(op.getInputs(), result) && !accumulates &&
        !reducesInPlace)
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

  // The splits' axes are the program mesh's (which kernels may carry
  // splits is the decoder's rule).
  if (SplitsAttr splits = op.getSplitsAttr())
    if (failed(verifySplits(op, stringifyOpCode(op.getOpcode()), splits,
                            out(0).getShape())))
      return failure();

  return checkWithDecoder();
}

LogicalResult KernelOp::verify() { return KernelChecker(*this).check(); }
