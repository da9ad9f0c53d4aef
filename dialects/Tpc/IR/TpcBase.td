//===- TpcBase.td - tpc dialect, types and enums -----------*- tablegen -*-===//
//
// The tpc dialect: transformer model graphs on builtin ranked tensors.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_TPCBASE_TD
#define DIALECTS_TPC_IR_TPCBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tpc_Dialect : Dialect {
  let name = "tpc";
  let cppNamespace = "::mlir::tpc";
  let summary = "Transformer model graphs on ranked tensors";
  let description = [{
    The `tpc` dialect represents a transformer model as a graph of coarse
    operations (embedding, linear, attention, norms, ...) on builtin ranked
    tensors of `f32`, `bf16` or `f16`, with `i32`/`i64` tensors for token ids
    and labels. Shapes are static. Every op verifies its shapes, element types
    and attributes with a diagnostic that names the bad value.

    A model is a `func.func @forward` whose leading arguments are parameters,
    each carrying its Hugging Face name in the `tpc.param` argument attribute
    (and, when the IR uses another view of the tensor than the checkpoint
    stores, the Hugging Face shape in `tpc.hf_shape`; the view is a row-major
    reshape of it). The last two arguments are `input_ids` and `labels`
    (argument attribute `tpc.input`). Ops that belong to a transformer layer
    carry the discardable attribute `tpc.layer = N`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = [];
}

class Tpc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tpc_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Shapes are static: every check below compares dimension sizes, and a
// dynamic size would silently compare as a (negative) number.
def Tpc_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def Tpc_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Tpc_ScalarF32 : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}
// A dropout keep mask: one byte per element, 1 keeps the element.
def Tpc_MaskTensor : StaticShapeTensorOf<[I8]>;
def Tpc_F32Tensor : StaticShapeTensorOf<[F32]>;
def Tpc_ScalarI64 : 0DTensorOf<[I64]> {
  let builderCall =
      "::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))";
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tpc_WeightLayout : I32EnumAttr<"WeightLayout",
    "how a linear weight stores its input and output features", [
      I32EnumAttrCase<"InOut", 0, "in_out">,
      I32EnumAttrCase<"OutIn", 1, "out_in">
    ]> {
  let cppNamespace = "::mlir::tpc";
  let genSpecializedAttr = 0;
}
def Tpc_WeightLayoutAttr : EnumAttr<Tpc_Dialect, Tpc_WeightLayout, "layout">;

def Tpc_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "the form of the GeLU activation", [
      I32EnumAttrCase<"Erf", 0, "erf">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let cppNamespace = "::mlir::tpc";
  let genSpecializedAttr = 0;
}
def Tpc_GeluApproximationAttr
    : EnumAttr<Tpc_Dialect, Tpc_GeluApproximation, "gelu">;

def Tpc_LrScheduleKind : I32EnumAttr<"LrScheduleKind",
    "the learning-rate schedule after the warm-up", [
      I32EnumAttrCase<"Constant", 0, "constant">,
      I32EnumAttrCase<"Cosine", 1, "cosine">
    ]> {
  let cppNamespace = "::mlir::tpc";
  let genSpecializedAttr = 0;
}
def Tpc_LrScheduleKindAttr
    : EnumAttr<Tpc_Dialect, Tpc_LrScheduleKind, "schedule">;

#endif // DIALECTS_TPC_IR_TPCBASE_TD
