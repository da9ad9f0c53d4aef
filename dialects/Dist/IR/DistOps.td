//===- DistOps.td - dist dialect operations ----------------*- tablegen -*-===//

#ifndef DIALECTS_DIST_IR_DISTOPS_TD
#define DIALECTS_DIST_IR_DISTOPS_TD

include "dialects/Dist/IR/DistBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Mesh and sharding annotation
//===----------------------------------------------------------------------===//

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "A device mesh with named axes";
  let description = [{
    Names the axes of a mesh of devices and their sizes; the mesh holds the
    product of the sizes devices, numbered row-major over the axes. Axis
    names are unique and sizes positive.

    ```mlir
    dist.mesh @mesh axes [dp = 2, pp = 2, tp = 4]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let assemblyFormat = [{
    $sym_name `axes` custom<MeshAxes>($axis_names, $axis_sizes) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of axis `name`, or nullopt when the mesh has no such axis.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name);
  }];
}

def Dist_ShardOp : Dist_Op<"shard", [Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Attaches a sharding to a value";
  let description = [{
    The result is the input, laid out as `sharding` says. The mesh must
    exist and have every named axis; the sharding names one axis list per
    dimension, and each dimension is divisible by the product of its axes'
    sizes. The type is the global (unpartitioned) type.

    ```mlir
    %y = dist.shard %x to <@mesh, [[dp], [], [tp]]> : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input,
                       Dist_ShardingAttr:$sharding);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// A collective over the groups of devices that differ only on `axes`.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code commonDescription = [{
    The group is the devices of mesh `mesh` that share their coordinates on
    every axis other than `axes`; its size is the product of the axes'
    sizes, and a device's index in it is its coordinates on `axes`,
    row-major in the order given. The mesh must exist, have every axis, and
    no axis may be named twice.
  }];
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Combines the group's values; every device gets the result";
  let description = commonDescription # [{

    Resolves a partial sum (`reduce sum`, the default); `max` and `min`
    serve the vocab-parallel cross-entropy.

    ```mlir
    %r = dist.all_reduce %p on @mesh axes [tp] : tensor<8x16x64xf32>
    %m = dist.all_reduce %x on @mesh axes [tp] reduce max : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       DefaultValuedAttr<Dist_ReductionAttr,
                           "::mlir::dist::Reduction::Sum">:$reduction);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) (`reduce` `` $reduction^)?
      attr-dict `:` type($input)
  }];
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Concatenates the group's pieces along a dimension";
  let description = commonDescription # [{

    Every device gets the group's inputs concatenated along `dim` in group
    order: the result's `dim` is the input's times the group size, the other
    dimensions are equal.

    ```mlir
    %g = dist.all_gather %s on @mesh axes [tp] dim 1
        : tensor<8x4x64xf32> -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `dim` $dim attr-dict `:`
      type($input) `->` type($result)
  }];
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Combines the group's values and scatters the pieces";
  let description = commonDescription # [{

    The combined value is cut along `dim` into group-size pieces and device
    `i` of the group gets piece `i`: the input's `dim` must be divisible by
    the group size, and the result's is the quotient.

    ```mlir
    %s = dist.reduce_scatter %p on @mesh axes [tp] dim 1
        : tensor<8x16x64xf32> -> tensor<8x4x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim,
                       DefaultValuedAttr<Dist_ReductionAttr,
                           "::mlir::dist::Reduction::Sum">:$reduction);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `dim` $dim
      (`reduce` `` $reduction^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Moves a split from one dimension to another";
  let description = commonDescription # [{

    Each device cuts its input along `split_dim` into group-size pieces,
    sends piece `j` to device `j` and concatenates what it receives along
    `concat_dim` in group order: the result's `split_dim` is the input's
    divided by the group size, its `concat_dim` the input's times it.

    ```mlir
    %t = dist.all_to_all %s on @mesh axes [tp] split 2 concat 1
        : tensor<8x4x64xf32> -> tensor<8x16x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `split` $split_dim
      `concat` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_ShardSliceOp : Dist_CollectiveOp<"shard_slice",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Keeps this device's piece of a replicated value";
  let description = commonDescription # [{

    The input, the same on every device of the group, is cut along `dim`
    into group-size pieces and device `i` keeps piece `i`: the transition
    from replicated to split, which needs no communication. The input's
    `dim` must be divisible by the group size.

    ```mlir
    %s = dist.shard_slice %r on @mesh axes [tp] dim 1
        : tensor<8x16x64xf32> -> tensor<8x4x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `dim` $dim attr-dict `:`
      type($input) `->` type($result)
  }];
}

def Dist_ShardPadOp : Dist_CollectiveOp<"shard_pad",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Places this device's piece in zeros: a partial sum";
  let description = commonDescription # [{

    The inverse of `shard_slice`: device `i` of the group puts its input as
    piece `i` along `dim` of a zero tensor group-size times larger there, so
    the group's results sum to the whole value. The transition from split
    to partial sum, which needs no communication: an op linear in the value
    may then run on the partial sum and its result be reduced later, where
    it is smaller (`dist-partition` does so for a `tpc.sum_groups` whose
    grouped dimension is split finer than its groups: the weight gradient
    of replicated kv-heads).

    ```mlir
    %p = dist.shard_pad %s on @mesh axes [tp] dim 0
        : tensor<1x16x128xf32> -> tensor<4x16x128xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `dim` $dim attr-dict `:`
      type($input) `->` type($result)
  }];
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Every device of the group gets the root's value";
  let description = commonDescription # [{

    `root` is the index in the group of the device whose input every device
    gets (below the group size).

    ```mlir
    %b = dist.broadcast %x on @mesh axes [tp] root 0 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$root);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` custom<Axes>($axes) `root` $root attr-dict `:`
      type($input)
  }];
}

// send and recv have effects: they pair up by `channel` and must not be
// removed or reordered against each other.
def Dist_SendOp : Dist_CollectiveOp<"send", [MemoryEffects<[MemWrite]>]> {
  let summary = "Sends a value to peer devices of the group";
  let description = commonDescription # [{

    `pairs` lists `source -> target` group indices: device `source` sends
    its input to device `target`; the `dist.recv` with the same `channel`
    receives it. Indices are below the group size, a device never sends to
    itself, and each index is a source at most once and a target at most
    once. Devices that are no source send nothing.

    Without `async` the send is blocking. With `async` it only starts: the
    transfer completes at the `dist.wait` on the same input, which must
    follow (an async send's input has a `dist.wait` user), and the input
    must stay unchanged and allocated until then.

    ```mlir
    dist.send %x on @mesh axes [pp] pairs [0 -> 1, 1 -> 2] channel 0
        : tensor<8x16x64xf32>
    dist.send async %x on @mesh axes [pp] pairs [0 -> 1] channel 1
        : tensor<8x16x64xf32>
    dist.wait %x : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, DenseI64ArrayAttr:$pairs,
                       I64Attr:$channel, UnitAttr:$async);
  let assemblyFormat = [{
    (`async` $async^)? $input `on` $mesh `axes` custom<Axes>($axes)
      `pairs` custom<Pairs>($pairs) `channel` $channel attr-dict `:`
      type($input)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_CollectiveOp<"recv", [MemoryEffects<[MemWrite]>]> {
  let summary = "Receives a value from peer devices of the group";
  let description = commonDescription # [{

    The counterpart of the `dist.send` with the same `channel` and `pairs`:
    device `target` gets the value device `source` sent. The pairs obey the
    rules of `dist.send`; a device that is no target gets zeros.

    With `async` the receive only starts: the result holds the value once
    the `dist.wait` on it has run (an async receive's result has exactly
    one `dist.wait` user; nothing may read it before that wait).

    ```mlir
    %y = dist.recv on @mesh axes [pp] pairs [0 -> 1, 1 -> 2] channel 0
        : tensor<8x16x64xf32>
    %z = dist.recv async on @mesh axes [pp] pairs [0 -> 1] channel 1
        : tensor<8x16x64xf32>
    dist.wait %z : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$pairs, I64Attr:$channel,
                       UnitAttr:$async);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    (`async` $async^)? `on` $mesh `axes` custom<Axes>($axes)
      `pairs` custom<Pairs>($pairs) `channel` $channel attr-dict `:`
      type($result)
  }];
  let hasVerifier = 1;
}

def Dist_WaitOp : Dist_Op<"wait", [MemoryEffects<[MemWrite]>]> {
  let summary = "Completes an asynchronous send or receive";
  let description = [{
    Returns once the transfer started on `value` is complete: `value` is
    the input of a `dist.send async` or the result of a `dist.recv async`.
    Until the wait, a sent value stays unchanged and allocated, and a
    received value is not read: the memory plan keeps `value` live to here,
    because the wait reads it. Pipeline stages start a send where the
    schedule sends and wait for it one compute later, and post a receive
    one compute before the schedule receives (docs/design/pipeline-schedules.md,
    "Asynchronous transfers").

    ```mlir
    %y = dist.recv async on @mesh axes [pp] pairs [0 -> 1] channel 0
        : tensor<8x16x64xf32>
    dist.wait %y : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // DIALECTS_DIST_IR_DISTOPS_TD
