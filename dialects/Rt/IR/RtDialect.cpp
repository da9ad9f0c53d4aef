//===- RtDialect.cpp - rt dialect registration ----------------------------===//

#include "dialects/Rt/IR/RtDialect.h"
#include "dialects/Rt/IR/RtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::rt;

#include "dialects/Rt/IR/RtDialect.cpp.inc"
#include "dialects/Rt/IR/RtEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Rt/IR/RtAttrs.cpp.inc"

void RtDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Rt/IR/RtAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Rt/IR/RtOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr: `[dp = 2, tp = 2]`
//===----------------------------------------------------------------------===//

/// An axis name prints as a bare keyword: a letter or `_`, then letters,
/// digits, `_`, `$` or `.`.
static bool isAxisName(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
  });
}

static ParseResult parseAxisName(AsmParser &parser, Attribute &name) {
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  name = parser.getBuilder().getStringAttr(keyword);
  return success();
}

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        Attribute name;
        int64_t size;
        if (parseAxisName(parser, name) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        names.push_back(name);
        sizes.push_back(size);
        return success();
      }))
    return {};
  return MeshAttr::getChecked([&] { return parser.emitError(loc); },
                              parser.getContext(),
                              parser.getBuilder().getArrayAttr(names), sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << '[';
  for (unsigned axis = 0, e = getNumAxes(); axis < e; ++axis)
    printer << (axis ? ", " : "") << getAxisName(axis) << " = "
            << getSizes()[axis];
  printer << ']';
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayAttr names, ArrayRef<int64_t> sizes) {
  if (names.empty() || names.size() != sizes.size())
    return emitError() << "a mesh has at least one axis and one size per "
                          "axis name";
  llvm::StringSet<> seen;
  int64_t world = 1;
  for (auto [name, size] : llvm::zip(names, sizes)) {
    auto str = dyn_cast<StringAttr>(name);
    if (!str || !isAxisName(str.getValue()))
      return emitError() << "mesh axis name " << name
                         << " is not an identifier";
    if (!seen.insert(str.getValue()).second)
      return emitError() << "mesh axis '" << str.getValue()
                         << "' is named twice";
    if (size < 1 || llvm::MulOverflow(world, size, world))
      return emitError() << "mesh axis '" << str.getValue()
                         << "' must have a positive size (and the mesh fewer "
                            "than 2^63 ranks) but has "
                         << size;
  }
  return success();
}

StringRef MeshAttr::getAxisName(unsigned axis) const {
  return cast<StringAttr>(getNames()[axis]).getValue();
}

std::optional<unsigned> MeshAttr::getAxisIndex(StringRef name) const {
  for (unsigned axis = 0, e = getNumAxes(); axis < e; ++axis)
    if (getAxisName(axis) == name)
      return axis;
  return std::nullopt;
}

int64_t MeshAttr::getWorldSize() const {
  int64_t world = 1;
  for (int64_t size : getSizes())
    world *= size; // verified not to overflow
  return world;
}

//===----------------------------------------------------------------------===//
// SplitsAttr: `[[dp], [], [tp]]`
//===----------------------------------------------------------------------===//

Attribute SplitsAttr::parse(AsmParser &parser, Type) {
  SmallVector<Attribute> dims;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        SmallVector<Attribute> axes;
        if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
              Attribute name;
              if (parseAxisName(parser, name))
                return failure();
              axes.push_back(name);
              return success();
            }))
          return failure();
        dims.push_back(parser.getBuilder().getArrayAttr(axes));
        return success();
      }))
    return {};
  return SplitsAttr::getChecked([&] { return parser.emitError(loc); },
                                parser.getContext(),
                                parser.getBuilder().getArrayAttr(dims));
}

void SplitsAttr::print(AsmPrinter &printer) const {
  printer << '[';
  for (unsigned dim = 0, e = getRank(); dim < e; ++dim) {
    printer << (dim ? ", [" : "[");
    llvm::interleaveComma(getDimAxes(dim), printer);
    printer << ']';
  }
  printer << ']';
}

LogicalResult SplitsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayAttr dims) {
  llvm::StringSet<> seen;
  for (auto [dim, axes] : llvm::enumerate(dims)) {
    auto list = dyn_cast<ArrayAttr>(axes);
    if (!list)
      return emitError() << "splits of dimension " << dim
                         << " must be a list of axis names but are " << axes;
    for (Attribute axis : list) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name || !isAxisName(name.getValue()))
        return emitError() << "split axis " << axis << " of dimension " << dim
                           << " is not an identifier";
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' splits more than once";
    }
  }
  return success();
}

SmallVector<StringRef> SplitsAttr::getDimAxes(unsigned dim) const {
  return llvm::map_to_vector(cast<ArrayAttr>(getDims()[dim]), [](Attribute a) {
    return cast<StringAttr>(a).getValue();
  });
}

//===----------------------------------------------------------------------===//
// Module attributes
//===----------------------------------------------------------------------===//

/// The module attributes hold the executable's uint64 fields as i64: sizes
/// must be non-negative, the seed is any 64-bit pattern.
LogicalResult RtDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kOverlapMovedAttrName) {
    if (!isa<KernelOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' is a unit attribute of rt.kernel";
    return success();
  }
  if (name != kArenaBytesAttrName && name != kPlannedPeakBytesAttrName &&
      name != kSeedAttrName && name != kStagePlannedPeakBytesAttrName)
    return op->emitError() << "unknown rt attribute '" << name << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << name
                           << "' is a module attribute, but is on '"
                           << op->getName() << "'";
  if (name == kStagePlannedPeakBytesAttrName) {
    auto peaks = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!peaks || llvm::any_of(peaks.asArrayRef(),
                               [](int64_t bytes) { return bytes < 0; }))
      return op->emitError() << "'" << name
                             << "' must be an array of non-negative i64 but "
                                "is "
                             << attr.getValue();
    return success();
  }
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger(64))
    return op->emitError() << "'" << name << "' must be an i64 integer but is "
                           << attr.getValue();
  // The seed is a full 64-bit value (it may print as a negative i64).
  if (name != kSeedAttrName && value.getInt() < 0)
    return op->emitError() << "'" << name << "' must be non-negative but is "
                           << value.getInt();
  return success();
}
