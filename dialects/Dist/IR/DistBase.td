//===- DistBase.td - dist dialect, attributes and enums ----*- tablegen -*-===//
//
// The dist dialect: device meshes, shardings of tensor values and the
// collectives that move between shardings (docs/rationale/dist-dialect.md).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_DIST_IR_DISTBASE_TD
#define DIALECTS_DIST_IR_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "Device meshes, shardings and collectives";
  let description = [{
    The `dist` dialect describes how tensor values are laid out over a mesh
    of devices and the collectives that move a value from one layout to
    another:

    * `dist.mesh` names the axes of a device mesh and their sizes.
    * `#dist.sharding` says, for each dimension of a value, the mesh axes
      it is split over (major to minor), and the axes over which the value
      is a pending partial sum. Axes not named replicate the value.
    * `dist.shard` attaches a sharding to a value (an annotation, checked
      against the mesh and the value's shape).
    * `dist.all_reduce`, `dist.all_gather`, `dist.reduce_scatter`,
      `dist.all_to_all`, `dist.broadcast`, `dist.send` and `dist.recv` are
      the collectives, each over a set of mesh axes: the devices that share
      their coordinates on all other axes form one group. Operands and
      results are per-device tensors with static shapes.

    A function parameter takes a sharding as the argument attribute
    `dist.sharding`, checked like `dist.shard`'s, and a parameter that
    `dist-pad-vocab` padded records its global shape before padding in
    `dist.unpadded_shape`. A function that `dist-partition` rewrote for one
    device carries the unit attribute `dist.partitioned`: its parameters
    have their local types, their `dist.sharding` the global layout.

    ```mlir
    dist.mesh @mesh axes [dp = 2, tp = 4]
    func.func @f(%x: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
      %p = dist.shard %x to <@mesh, [[dp], [], []], partial [tp]>
          : tensor<8x16x64xf32>
      %s = dist.reduce_scatter %p on @mesh axes [tp] dim 1
          : tensor<8x16x64xf32> -> tensor<8x4x64xf32>
      %g = dist.all_gather %s on @mesh axes [tp] dim 1
          : tensor<8x4x64xf32> -> tensor<8x16x64xf32>
      return %g : tensor<8x16x64xf32>
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The argument attribute that gives a block argument (a function
    /// parameter) its sharding.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "dist.sharding";
    static constexpr ::llvm::StringLiteral kUnpaddedShapeAttrName =
        "dist.unpadded_shape";
    /// On an argument of a pipeline chunk (dist-pipeline-outline): the
    /// chunk that sends it, an activation of that chunk.
    static constexpr ::llvm::StringLiteral kBoundaryAttrName = "dist.boundary";
    /// On a function: rewritten for one device by dist-partition.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName =
        "dist.partitioned";
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Dist_Reduction : I32EnumAttr<"Reduction",
    "how all_reduce and reduce_scatter combine the group's values", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Min", 2, "min">
    ]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}
def Dist_ReductionAttr : EnumAttr<Dist_Dialect, Dist_Reduction, "reduction">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "How a tensor value is laid out over a mesh";
  let description = [{
    For each dimension of the value, the mesh axes that split it, major to
    minor (the dimension is cut into as many pieces as the product of their
    sizes; the device's coordinates on those axes, row-major, pick its
    piece); and the axes over which the value is a pending partial sum
    (every device of the group holds a summand of the true value). An axis
    is named at most once. Axes not named replicate the value.

    ```mlir
    // A [b, s, h] activation: batch split over dp, a partial sum over tp
    // (the output of a row-parallel matmul).
    #dist.sharding<@mesh, [[dp], [], []], partial [tp]>
    // Sequence-parallel: each tp rank holds s/t positions.
    #dist.sharding<@mesh, [[dp], [tp], []]>
    ```

    Axis names and divisibility are checked where the sharding meets a mesh
    and a shape (`dist.shard`); the attribute itself checks that no axis is
    used twice.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dims,
                        "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes splitting dimension `dim`.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
    /// The partial-sum axes.
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
  }];
}

#endif // DIALECTS_DIST_IR_DISTBASE_TD
