//===- Layout.h - shardings as values the dist passes compute ---*- C++ -*-===//
//
// The dist passes reason about `#dist.sharding` attributes as plain values
// (Layout): per dimension the mesh axes splitting it, and the partial-sum
// axes. This header also holds what propagation and partitioning share: the
// mesh's axis sizes, the local type of a global type, and the per-op plan
// derived from the op's sharding rule (docs/design/sharding.md).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_DIST_TRANSFORMS_LAYOUT_H
#define DIALECTS_DIST_TRANSFORMS_LAYOUT_H

#include "dialects/Dist/IR/DistOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::tpc {
struct ShardingRule;
} // namespace mlir::tpc
namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace mlir::dist {

using AxisList = SmallVector<StringRef, 2>;

/// A sharding as a value (the meaning of #dist.sharding).
struct Layout {
  SmallVector<AxisList> dims;
  AxisList partial;

  static Layout replicated(unsigned rank) {
    Layout layout;
    layout.dims.resize(rank);
    return layout;
  }
  static Layout fromAttr(ShardingAttr attr);
  ShardingAttr toAttr(MLIRContext *context, FlatSymbolRefAttr mesh) const;

  bool isReplicated() const;
  bool hasPartial() const { return !partial.empty(); }
  /// Every axis splitting a dimension.
  AxisList splitAxes() const;
  /// The layout without its partial axes.
  Layout withoutPartial() const {
    Layout layout = *this;
    layout.partial.clear();
    return layout;
  }
  bool operator==(const Layout &other) const {
    return dims == other.dims && partial == other.partial;
  }
  bool operator!=(const Layout &other) const { return !(*this == other); }
  void print(raw_ostream &os) const;
  std::string str() const;
};

/// Where dist-partition reduce-scatters the partial sums over `reduce` of a
/// value laid out as `from` on its way to `to`: the first dimension that
/// `to` splits further than `from` by axes among `reduce` alone, with those
/// axes (the rest of `reduce` is all-reduced); none where no dimension is.
std::optional<std::pair<unsigned, AxisList>>
reductionScatter(const Layout &from, const Layout &to,
                 ArrayRef<StringRef> reduce);

/// The mesh the passes work on: the module's only dist.mesh.
struct MeshInfo {
  mutable MeshOp op;
  llvm::StringMap<int64_t> sizes;
  /// Axis names in mesh order.
  SmallVector<StringRef> names;

  /// The module's mesh; an error at the module without exactly one.
  static FailureOr<MeshInfo> get(ModuleOp module);
  FlatSymbolRefAttr symbol() const;
  int64_t groupSize(ArrayRef<StringRef> axes) const;
  /// Sorts axes into mesh order (partial axes have no order of their own).
  void sortAxes(AxisList &axes) const;
  /// `type` with each dimension divided by the product of its axes; an
  /// error (null) when one does not divide.
  RankedTensorType localType(RankedTensorType type,
                             const Layout &layout) const;
};

/// What an op needs of its operands and gives its results, from its rule.
struct OpPlan {
  SmallVector<Layout> operands; // one per operand (rank 0 for non-tensors)
  SmallVector<Layout> results;
};

/// How firmly an operand's current layout is held: a parameter's split is
/// kept over an annotated activation's, which is kept over a derived one's.
enum class Hold { Parameter, Annotated, Derived };

/// Decides the split of every factor of `rule` from the operands' current
/// layouts (firmest `hold` first), and from it the layout each operand must
/// have and each result gets; partial sums pass through where the rule's
/// linearity allows. Fails, with an error at `op` naming both, when two
/// operands held alike (both parameters, or both annotated) disagree.
/// `wantedResult`, when given, is how a reader needs the first result: its
/// splits of factors that no operand has (an embedding gradient's
/// vocabulary) are taken after the parameters' splits and before any other
/// operand's, which then gives way (its operand is gathered or reduced).
FailureOr<OpPlan> planOp(Operation *op, const tpc::ShardingRule &rule,
                         ArrayRef<Layout> current, ArrayRef<Hold> hold,
                         const MeshInfo &mesh,
                         const Layout *wantedResult = nullptr);

/// The factors of `rule` that appear in a result and in no operand.
SmallVector<bool> resultOnlyFactors(const tpc::ShardingRule &rule);

/// Runs `fn` on every function of `module` with a one-block body, with the
/// module's mesh; fails at the first failure or without exactly one mesh.
LogicalResult
forEachMeshFunction(ModuleOp module,
                    function_ref<LogicalResult(func::FuncOp, const MeshInfo &)>
                        fn);

/// The function argument behind a weight, looking through the casts to the
/// model's precision; null when it is computed.
BlockArgument argumentBehindCasts(Value value);

/// Ops that move elements without computing (reshape, transpose, slice,
/// rotary, cast, repeat): a matmul's role shows through them.
bool isView(Operation *op);

/// The producer of `value`, looking through views; null for an argument.
Operation *producerThroughViews(Value value);

/// Infers the result types of every op of `func` again, in order, after
/// the types of arguments or operands changed.
LogicalResult inferTypesAgain(func::FuncOp func);

/// Attribute names the passes exchange.
inline constexpr StringLiteral kShardingAttr = "dist.sharding";
inline constexpr StringLiteral kOperandShardingsAttr =
    "dist.operand_shardings";
inline constexpr StringLiteral kResultShardingsAttr = "dist.result_shardings";
/// On a partitioned embedding or cross-entropy: the mesh axes splitting its
/// vocabulary (the table's rows, the logits' last dim).
inline constexpr StringLiteral kVocabAxesAttr = "dist.vocab_axes";
/// On a parameter padded to a multiple of the split: the unpadded shape.
inline constexpr StringLiteral kUnpaddedShapeAttr = "dist.unpadded_shape";

} // namespace mlir::dist

#endif // DIALECTS_DIST_TRANSFORMS_LAYOUT_H
