//===- RtBase.td - rt dialect, types and enums -------------*- tablegen -*-===//
//
// The rt dialect: the executable's view of a program, 1:1 with the .tpcx
// schema (runtime/schema/tpcx.fbs).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_IR_RTBASE_TD
#define DIALECTS_RT_IR_RTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::mlir::rt";
  let summary = "Buffers in one arena and kernel calls: the executable's view";
  let description = [{
    The `rt` dialect is what `tpc-compile` serializes into a `.tpcx`
    executable, one op per schema entry:

    * `rt.param`, `rt.input`, `rt.state` and `rt.alloc` define the buffers
      (params, inputs, optimizer state, intermediates). A buffer is a builtin
      memref with a static shape and the identity layout; its dtype and
      shape are the executable buffer's (`i8` is the schema's `U8`, for
      dropout masks). The memory plan (`rt-plan-memory`) gives each one an
      `offset` in the per-rank arena, a multiple of its element size
      (kernels read elements in place). Parameters are f32, bf16 or f16.
    * `rt.kernel` calls one runtime kernel in destination-passing style: its
      operands and results are both buffers (memref operands), and `ints`,
      `floats` and `flags` are stored exactly as in the executable (the
      per-opcode table of `tpcx.fbs`).
    * `rt.output` binds a buffer to an output name (`loss`, `logits`,
      `grad_norm`, `lr`), `rt.grad` a buffer to the gradient of a parameter
      (training).

    Everything lives in one `rt.program`, whose op order is the execution
    order. A distributed program (issue 5) names its device mesh
    (`rt.program @forward mesh [dp = 2, tp = 2]`) and is what every rank
    runs on its own blocks: params and inputs say how their global tensors
    are split (`splits [[dp], []]`, mesh axes per dimension), the
    collectives `all_reduce`, `all_gather`, `reduce_scatter`, `shard_slice`,
    `all_to_all` and `shard_pad` are kernels over groups of ranks, and the dropout
    kernels draw each element at its global index. The module carries the whole-program numbers as discardable
    attributes: `rt.arena_bytes` (the arena size per rank),
    `rt.planned_peak_bytes` (see `rt-plan-memory`) and `rt.seed` (the dropout
    seed).

    ```mlir
    module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64} {
      rt.program @forward {
        %w = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
        %ids = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
        %x = rt.alloc offset 192 : memref<2x3x8xf32>
        rt.kernel embedding(%w, %ids) -> (%x)
            : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
        rt.output "x" %x : memref<2x3x8xf32>
      }
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Module attribute names (non-negative i64 integers).
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName =
        "rt.arena_bytes";
    static constexpr ::llvm::StringLiteral kPlannedPeakBytesAttrName =
        "rt.planned_peak_bytes";
    static constexpr ::llvm::StringLiteral kSeedAttrName = "rt.seed";
    /// Pipeline programs: each stage's planned peak (an i64 array).
    static constexpr ::llvm::StringLiteral kStagePlannedPeakBytesAttrName =
        "rt.stage_planned_peak_bytes";
    /// A kernel moved by rt-overlap-collectives with `mark` (a unit
    /// attribute that the flow's second run drops).
    static constexpr ::llvm::StringLiteral kOverlapMovedAttrName =
        "rt.overlap_moved";
  }];
}

class Rt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rt_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Exactly the executable's buffers: a static shape (the schema stores one),
// the identity layout (a buffer is a contiguous row-major region) and a dtype
// of the schema's DType (i8 is its U8: dropout masks).
def Rt_Buffer : ConfinedType<MemRefOf<[F32, BF16, F16, I32, I64, I8]>,
    [HasStaticShapePred,
     CPred<"::llvm::cast<::mlir::MemRefType>($_self).getLayout()"
           ".isIdentity()">,
     CPred<"!::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace()">],
    "statically shaped memref of f32, bf16, f16, i32, i64 or i8 with the "
    "identity layout and the default memory space">;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// The kernels' opcodes: one case per row of the kernel table
// (runtime/include/tpcrt/Kernels.def), whose values tpcx.fbs's OpCode has;
// dialects/Rt/IR/CMakeLists.txt writes them into RtOpCodes.td.
include "RtOpCodes.td"
def Rt_OpCodeAttr : EnumAttr<Rt_Dialect, Rt_OpCode, "opcode">;

// Mirrors tpcrt::fb::ParamInit.
def Rt_ParamInit : I32EnumAttr<"ParamInit",
    "how tpc-run --init-seed initializes a parameter", [
      I32EnumAttrCase<"Normal", 0, "normal">,
      I32EnumAttrCase<"Zeros", 1, "zeros">,
      I32EnumAttrCase<"Ones", 2, "ones">
    ]> {
  let cppNamespace = "::mlir::rt";
  let genSpecializedAttr = 0;
}
def Rt_ParamInitAttr : EnumAttr<Rt_Dialect, Rt_ParamInit, "init">;

//===----------------------------------------------------------------------===//
// Attributes of distributed programs
//===----------------------------------------------------------------------===//

def Rt_MeshAttr : AttrDef<Rt_Dialect, "Mesh"> {
  let mnemonic = "mesh";
  let summary = "The device mesh of a distributed program (Executable.mesh)";
  let description = [{
    The named axes of the mesh and their sizes, in the executable's order:
    a rank's coordinates are its rank written row-major over the axes (the
    last axis varies fastest), and the world size is the product of the
    sizes. At least one axis; names are unique identifiers, sizes positive.

    ```mlir
    rt.program @forward mesh [dp = 2, tp = 2] { ... }
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$names,
                        ArrayRefParameter<"int64_t">:$sizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getNumAxes() const { return getSizes().size(); }
    ::llvm::StringRef getAxisName(unsigned axis) const;
    /// The index of axis `name`, or nullopt when the mesh has none.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name) const;
    /// The number of ranks (the product of the sizes).
    int64_t getWorldSize() const;
  }];
}

def Rt_SplitsAttr : AttrDef<Rt_Dialect, "Splits"> {
  let mnemonic = "splits";
  let summary = "How each dimension of a global tensor is split over the mesh";
  let description = [{
    One list of mesh axis names per dimension (the executable's `DimSplit`),
    major first: the dimension is cut into as many blocks as the product of
    the axes' sizes and a rank holds block `position`, the row-major
    combination of its coordinates on those axes. An empty list keeps the
    dimension whole. An axis splits at most one dimension, once. The buffer
    that carries the splits is the rank's block: the global shape is the
    buffer's shape times the split sizes.

    ```mlir
    %ids = rt.input "input_ids" splits [[dp], []] : memref<2x8xi64>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getDims().size(); }
    /// The names of the axes splitting dimension `dim`, major first.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
  }];
}

#endif // DIALECTS_RT_IR_RTBASE_TD
