//===- DistOps.cpp - dist attribute and op verifiers ----------------------===//
//
// Everything that needs a mesh (axis names, sizes) is checked in
// verifySymbolUses, where the mesh symbol can be resolved; the rest in the
// attribute and op verifiers. Every message names the mesh, axis, dimension
// or shape at fault.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Axis lists: `[dp, tp]` (bare identifiers)
//===----------------------------------------------------------------------===//

static ParseResult parseAxisList(AsmParser &parser, ArrayAttr &axes) {
  SmallVector<Attribute> names;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        StringRef name;
        if (parser.parseKeyword(&name))
          return failure();
        names.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      }))
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  return success();
}

static void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer, [&](Attribute axis) {
    printer << cast<StringAttr>(axis).getValue();
  });
  printer << ']';
}

static ParseResult parseAxes(OpAsmParser &parser, ArrayAttr &axes) {
  return parseAxisList(parser, axes);
}

static void printAxes(OpAsmPrinter &printer, Operation *, ArrayAttr axes) {
  printAxisList(printer, axes);
}

/// `[dp = 2, tp = 4]`.
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizeValues;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        StringRef name;
        int64_t size;
        if (parser.parseKeyword(&name) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        nameAttrs.push_back(parser.getBuilder().getStringAttr(name));
        sizeValues.push_back(size);
        return success();
      }))
    return failure();
  names = parser.getBuilder().getArrayAttr(nameAttrs);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(sizeValues);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr names,
                          DenseI64ArrayAttr sizes) {
  printer << '[';
  llvm::interleaveComma(llvm::zip(names, sizes.asArrayRef()), printer,
                        [&](auto pair) {
                          printer << cast<StringAttr>(std::get<0>(pair))
                                         .getValue()
                                  << " = " << std::get<1>(pair);
                        });
  printer << ']';
}

/// `[0 -> 1, 1 -> 2]`, stored flat as [0, 1, 1, 2].
static ParseResult parsePairs(OpAsmParser &parser, DenseI64ArrayAttr &pairs) {
  SmallVector<int64_t> flat;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        int64_t source, target;
        if (parser.parseInteger(source) || parser.parseArrow() ||
            parser.parseInteger(target))
          return failure();
        flat.append({source, target});
        return success();
      }))
    return failure();
  pairs = parser.getBuilder().getDenseI64ArrayAttr(flat);
  return success();
}

static void printPairs(OpAsmPrinter &printer, Operation *,
                       DenseI64ArrayAttr pairs) {
  ArrayRef<int64_t> flat = pairs.asArrayRef();
  printer << '[';
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    printer << (i ? ", " : "") << flat[i] << " -> " << flat[i + 1];
  printer << ']';
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

/// `<@mesh, [[dp], [], [tp]]>` or `<@mesh, [[dp], [], []], partial [tp]>`.
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  ArrayAttr partial = parser.getBuilder().getArrayAttr({});
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        ArrayAttr axes;
        if (parseAxisList(parser, axes))
          return failure();
        dims.push_back(axes);
        return success();
      }))
    return {};
  if (succeeded(parser.parseOptionalComma()) &&
      (parser.parseKeyword("partial") || parseAxisList(parser, partial)))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(
      parser.getContext(), mesh, parser.getBuilder().getArrayAttr(dims),
      partial);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printAttribute(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute axes) {
    printAxisList(printer, cast<ArrayAttr>(axes));
  });
  printer << ']';
  if (!getPartial().empty()) {
    printer << ", partial ";
    printAxisList(printer, getPartial());
  }
  printer << '>';
}

static bool isAxisList(Attribute attr) {
  auto list = dyn_cast<ArrayAttr>(attr);
  return list && llvm::all_of(list, llvm::IsaPred<StringAttr>);
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims,
                     ArrayAttr partial) {
  if (!mesh)
    return emitError() << "sharding needs a mesh";
  if (!dims || !llvm::all_of(dims, isAxisList))
    return emitError() << "sharding dims must be lists of axis names";
  if (!partial || !isAxisList(partial))
    return emitError() << "sharding partial axes must be a list of axis names";
  // An axis splits one dimension or sums one partial value, not both: a
  // device's coordinate on it picks exactly one thing.
  llvm::StringSet<> seen;
  auto check = [&](ArrayAttr axes) -> LogicalResult {
    for (Attribute axis : axes) {
      StringRef name = cast<StringAttr>(axis).getValue();
      if (!seen.insert(name).second)
        return emitError() << "mesh axis '" << name
                           << "' is used twice in the sharding";
    }
    return success();
  };
  for (Attribute axes : dims)
    if (failed(check(cast<ArrayAttr>(axes))))
      return failure();
  return check(partial);
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  return llvm::map_to_vector(cast<ArrayAttr>(getDims()[dim]), [](Attribute a) {
    return cast<StringAttr>(a).getValue();
  });
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  return llvm::map_to_vector(getPartial(), [](Attribute a) {
    return cast<StringAttr>(a).getValue();
  });
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  ArrayAttr names = getAxisNames();
  ArrayRef<int64_t> sizes = getAxisSizes();
  if (names.empty())
    return emitOpError() << "mesh @" << getSymName() << " has no axes";
  if (names.size() != sizes.size())
    return emitOpError() << "has " << names.size() << " axis names but "
                         << sizes.size() << " sizes";
  llvm::StringSet<> seen;
  // The number of devices: every group of its axes (a product of some of
  // their sizes) is then an int64 too.
  int64_t devices = 1;
  for (auto [nameAttr, size] : llvm::zip(names, sizes)) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (!seen.insert(name).second)
      return emitOpError() << "mesh @" << getSymName() << " names axis '"
                           << name << "' twice";
    if (size < 1)
      return emitOpError() << "mesh @" << getSymName() << " axis '" << name
                           << "' has size " << size << ", must be positive";
    if (llvm::MulOverflow(devices, size, devices))
      return emitOpError() << "mesh @" << getSymName() << " axis '" << name
                           << "' has size " << size
                           << ": the mesh would have 2^63 devices or more";
  }
  return success();
}

std::optional<int64_t> MeshOp::getAxisSize(StringRef name) {
  for (auto [nameAttr, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (cast<StringAttr>(nameAttr).getValue() == name)
      return size;
  return std::nullopt;
}

/// The mesh `ref` names, or an error at `op`.
static FailureOr<MeshOp> lookupMesh(Operation *op,
                                    SymbolTableCollection &symbols,
                                    FlatSymbolRefAttr ref) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, ref);
  if (!mesh)
    return op->emitOpError() << "unknown mesh " << ref;
  return mesh;
}

/// The product of the sizes of `axes` on `mesh`, or an error at `op` for an
/// unknown axis or one named twice.
static FailureOr<int64_t> getAxesProduct(Operation *op, MeshOp mesh,
                                         ArrayAttr axes) {
  int64_t product = 1;
  llvm::StringSet<> seen;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(name);
    if (!size)
      return op->emitOpError() << "mesh @" << mesh.getSymName()
                               << " has no axis '" << name << "'";
    if (!seen.insert(name).second)
      return op->emitOpError() << "mesh axis '" << name << "' is named twice";
    // Distinct axes of a verified mesh do not overflow (MeshOp::verify);
    // checked again for a mesh not verified yet.
    if (llvm::MulOverflow(product, *size, product))
      return op->emitOpError() << "mesh @" << mesh.getSymName()
                               << " has 2^63 devices or more";
  }
  return product;
}

LogicalResult mlir::dist::verifySharding(Operation *op,
                                         SymbolTableCollection &symbols,
                                         ShardingAttr sharding,
                                         ShapedType type) {
  FailureOr<MeshOp> mesh = lookupMesh(op, symbols, sharding.getMesh());
  if (failed(mesh))
    return failure();
  ArrayAttr dims = sharding.getDims();
  if (static_cast<int64_t>(dims.size()) != type.getRank())
    return op->emitOpError() << "sharding has " << dims.size()
                             << " dimensions but the value " << type
                             << " has rank " << type.getRank();
  for (auto [dim, axes] : llvm::enumerate(dims)) {
    FailureOr<int64_t> pieces =
        getAxesProduct(op, *mesh, cast<ArrayAttr>(axes));
    if (failed(pieces))
      return failure();
    int64_t size = type.getDimSize(dim);
    if (size % *pieces != 0)
      return op->emitOpError()
             << "dimension " << dim << " of " << type << " (size " << size
             << ") is not divisible by " << *pieces
             << ", the product of the sizes of its mesh axes";
  }
  return getAxesProduct(op, *mesh, sharding.getPartial());
}

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifySharding(*this, symbols, getSharding(), getInput().getType());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// The size of the group `op` runs over, after checking its mesh and axes.
static FailureOr<int64_t> verifyGroup(Operation *op,
                                      SymbolTableCollection &symbols,
                                      FlatSymbolRefAttr meshRef,
                                      ArrayAttr axes) {
  FailureOr<MeshOp> mesh = lookupMesh(op, symbols, meshRef);
  if (failed(mesh))
    return failure();
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  return getAxesProduct(op, *mesh, axes);
}

/// Checks that `dim` is a dimension of `type` (named `what` in messages).
static LogicalResult verifyDim(Operation *op, StringRef what, int64_t dim,
                               ShapedType type) {
  if (dim < 0 || dim >= type.getRank())
    return op->emitOpError() << what << " " << dim
                             << " is not a dimension of " << type;
  return success();
}

/// Checks that `result` is `input` with the sizes `expected` computes for
/// each dimension.
static LogicalResult
verifyResultShape(Operation *op, ShapedType input, ShapedType result,
                  function_ref<int64_t(int64_t dim, int64_t size)> expected) {
  SmallVector<int64_t> shape;
  for (auto [dim, size] : llvm::enumerate(input.getShape()))
    shape.push_back(expected(dim, size));
  if (result.getShape() != ArrayRef<int64_t>(shape))
    return op->emitOpError()
           << "result type " << result << " has the wrong shape: expected "
           << input.clone(shape);
  return success();
}

/// Checks that dimension `dim` of `type` times the group size `pieces` is an
/// int64 (an all_gather of a dimension near 2^63 overflowed:
/// test/fuzz/corpus/mlir/finding-dist-all-gather-dim-overflow.mlir).
static LogicalResult verifyGrowable(Operation *op, ShapedType type,
                                    int64_t dim, int64_t pieces) {
  int64_t grown;
  if (llvm::MulOverflow(type.getDimSize(dim), pieces, grown))
    return op->emitOpError()
           << "dimension " << dim << " of " << type << " (size "
           << type.getDimSize(dim) << ") times the group size " << pieces
           << " is not an int64";
  return success();
}

/// Checks that dimension `dim` of `type` can be cut into `pieces`.
static LogicalResult verifyDivisible(Operation *op, ShapedType type,
                                     int64_t dim, int64_t pieces) {
  if (type.getDimSize(dim) % pieces != 0)
    return op->emitOpError()
           << "dimension " << dim << " of " << type << " (size "
           << type.getDimSize(dim) << ") is not divisible by the group size "
           << pieces;
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGroup(*this, symbols, getMeshAttr(), getAxes());
}

/// A collective whose result is its input with `dim` times the group size
/// (all_gather, shard_pad).
template <typename OpTy>
static LogicalResult verifyGrowingDim(OpTy op, SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      verifyGroup(op, symbols, op.getMeshAttr(), op.getAxes());
  auto input = op.getInput().getType();
  int64_t grownDim = op.getDimAttr().getInt();
  if (failed(group) || failed(verifyDim(op, "dim", grownDim, input)) ||
      failed(verifyGrowable(op, input, grownDim, *group)))
    return failure();
  return verifyResultShape(op, input, op.getResult().getType(),
                           [&](int64_t dim, int64_t size) {
                             return dim == grownDim ? size * *group : size;
                           });
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGrowingDim(*this, symbols);
}

LogicalResult ShardPadOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGrowingDim(*this, symbols);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      verifyGroup(*this, symbols, getMeshAttr(), getAxes());
  auto input = getInput().getType();
  int64_t scatterDim = getDimAttr().getInt();
  if (failed(group) || failed(verifyDim(*this, "dim", scatterDim, input)) ||
      failed(verifyDivisible(*this, input, scatterDim, *group)))
    return failure();
  return verifyResultShape(*this, input, getResult().getType(),
                           [&](int64_t dim, int64_t size) {
                             return dim == scatterDim ? size / *group : size;
                           });
}

LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      verifyGroup(*this, symbols, getMeshAttr(), getAxes());
  auto input = getInput().getType();
  int64_t sliceDim = getDimAttr().getInt();
  if (failed(group) || failed(verifyDim(*this, "dim", sliceDim, input)) ||
      failed(verifyDivisible(*this, input, sliceDim, *group)))
    return failure();
  return verifyResultShape(*this, input, getResult().getType(),
                           [&](int64_t dim, int64_t size) {
                             return dim == sliceDim ? size / *group : size;
                           });
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      verifyGroup(*this, symbols, getMeshAttr(), getAxes());
  auto input = getInput().getType();
  int64_t splitDim = getSplitDimAttr().getInt();
  int64_t concatDim = getConcatDimAttr().getInt();
  if (failed(group) ||
      failed(verifyDim(*this, "split dim", splitDim, input)) ||
      failed(verifyDim(*this, "concat dim", concatDim, input)) ||
      failed(verifyDivisible(*this, input, splitDim, *group)) ||
      (splitDim != concatDim &&
       failed(verifyGrowable(*this, input, concatDim, *group))))
    return failure();
  return verifyResultShape(*this, input, getResult().getType(),
                           [&](int64_t dim, int64_t size) {
                             if (dim == splitDim)
                               size /= *group;
                             if (dim == concatDim)
                               size *= *group;
                             return size;
                           });
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      verifyGroup(*this, symbols, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= *group)
    return emitOpError() << "root " << root
                         << " is not an index in the group of size " << *group;
  return success();
}

/// The send/recv pairs: indices in the group, no self-send, each device a
/// source at most once and a target at most once.
static LogicalResult verifyPairs(Operation *op, SymbolTableCollection &symbols,
                                 FlatSymbolRefAttr mesh, ArrayAttr axes,
                                 ArrayRef<int64_t> pairs) {
  FailureOr<int64_t> group = verifyGroup(op, symbols, mesh, axes);
  if (failed(group))
    return failure();
  if (pairs.empty() || pairs.size() % 2 != 0)
    return op->emitOpError() << "needs at least one 'source -> target' pair";
  llvm::SmallSet<int64_t, 8> sources, targets;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    int64_t source = pairs[i], target = pairs[i + 1];
    for (int64_t peer : {source, target})
      if (peer < 0 || peer >= *group)
        return op->emitOpError() << "peer " << peer
                                 << " is not an index in the group of size "
                                 << *group;
    if (source == target)
      return op->emitOpError() << "device " << source << " sends to itself";
    if (!sources.insert(source).second)
      return op->emitOpError() << "device " << source
                               << " is the source of two pairs";
    if (!targets.insert(target).second)
      return op->emitOpError() << "device " << target
                               << " is the target of two pairs";
  }
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, symbols, getMeshAttr(), getAxes(), getPairs());
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPairs(*this, symbols, getMeshAttr(), getAxes(), getPairs());
}

/// The dist.wait ops on `value`.
static auto waitsOn(Value value) {
  return llvm::make_filter_range(value.getUsers(), [](Operation *user) {
    return isa<WaitOp>(user);
  });
}

LogicalResult SendOp::verify() {
  if (getAsync() && waitsOn(getInput()).empty())
    return emitOpError() << "is async, but its input has no 'dist.wait'";
  return success();
}

LogicalResult RecvOp::verify() {
  if (!getAsync())
    return success();
  auto waits = waitsOn(getResult());
  int64_t count = std::distance(waits.begin(), waits.end());
  if (count != 1)
    return emitOpError() << "is async, so its result needs one 'dist.wait', "
                            "not "
                         << count;
  return success();
}

LogicalResult WaitOp::verify() {
  Value value = getValue();
  if (auto recv = value.getDefiningOp<RecvOp>(); recv && recv.getAsync())
    return success();
  for (Operation *user : value.getUsers())
    if (auto send = dyn_cast<SendOp>(user); send && send.getAsync())
      return success();
  return emitOpError() << "waits on a value that no 'dist.send async' sends "
                          "and no 'dist.recv async' receives";
}

#define GET_OP_CLASSES
#include "dialects/Dist/IR/DistOps.cpp.inc"
