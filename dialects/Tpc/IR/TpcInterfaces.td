//===- TpcInterfaces.td - tpc op interfaces ----------------*- tablegen -*-===//
//
// The derivative interface: what an op's backward reads from the forward
// (the stash) and how it builds its operand gradients. The sharding
// interface: how an op may be split over a device mesh.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_TPCINTERFACES_TD
#define DIALECTS_TPC_IR_TPCINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tpc_DerivativeOpInterface : OpInterface<"TpcDerivativeOpInterface"> {
  let cppNamespace = "::mlir::tpc";
  let description = [{
    The reverse-mode derivative of a forward op. `tpc-autodiff` asks each op
    which of its forward values the gradients of some operands read (those
    become the stash between the forward and the backward functions, each
    value once), then asks it to build the gradients, in the input-gradient
    function B for activation operands and in the weight-gradient function W
    for parameter operands.

    The rules receive the backward-side values in a `DerivativeArgs`: the
    op's operands and results as the backward function sees them (only those
    the rule declared as read are set), the gradients of the results (null
    where a result has none) and the operands whose gradient is wanted.
    Input gradients keep the operand's element type; weight gradients are
    built in f32, so that a bf16 model accumulates its gradients in fp32.
  }];
  let methods = [
    InterfaceMethod<[{
        The operands whose forward values the gradients of the `wanted`
        operands read (indices into the op's operands).
      }],
      "::llvm::SmallVector<unsigned>", "getStashedOperands",
      (ins "::llvm::ArrayRef<bool>":$wanted), [{}], [{ return {}; }]>,
    InterfaceMethod<[{
        The results whose forward values the gradients of the `wanted`
        operands read (indices into the op's results).
      }],
      "::llvm::SmallVector<unsigned>", "getStashedResults",
      (ins "::llvm::ArrayRef<bool>":$wanted), [{}], [{ return {}; }]>,
    InterfaceMethod<[{
        Builds the gradients of `args.wanted` operands into `operandGrads`
        (resized to the number of operands; unwanted entries stay null).
        `gradElementType` is the element type of gradients the rule builds
        with its own backward ops; null keeps each operand's element type.
        Ops that only pass a gradient on (views, add) keep the incoming
        gradient's element type.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::tpc::DerivativeArgs &":$args,
           "::mlir::Type":$gradElementType,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        Input (activation) gradients, for the B function: the operands'
        element types.
      }],
      "::llvm::LogicalResult", "buildInputGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::tpc::DerivativeArgs &":$args,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads), [{}],
      [{
        return $_op.buildGradients(builder, args, ::mlir::Type(),
                                   operandGrads);
      }]>,
    InterfaceMethod<[{
        Weight (parameter) gradients, for the W function: in f32.
      }],
      "::llvm::LogicalResult", "buildWeightGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::tpc::DerivativeArgs &":$args,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads), [{}],
      [{
        return $_op.buildGradients(builder, args,
                                   builder.getF32Type(), operandGrads);
      }]>
  ];
}

def Tpc_DropoutDrawOpInterface : OpInterface<"TpcDropoutDrawOpInterface"> {
  let cppNamespace = "::mlir::tpc";
  let description = [{
    An op that draws dropout masks from the counter-based stream (seed,
    stream, step, element index). Split over devices, each draws the
    single-device mask of its own elements: dist-partition records the
    split on the op (`dist.sharding`) and tpc-lower-to-rt turns it and the
    draw into the kernel's splits and first index.
  }];
  let methods = [
    InterfaceMethod<[{
        What the op draws: the mask's shape, or attention's probabilities
        [b, h, sq, sk]; how many leading dimensions are the first result's
        (split like them); the block (microbatch) operand, null if none.
      }],
      "::mlir::tpc::DropoutDraw", "getDropoutDraw", (ins)>
  ];
}

def Tpc_ShardingOpInterface : OpInterface<"TpcShardingOpInterface"> {
  let cppNamespace = "::mlir::tpc";
  let description = [{
    The sharding rule of an op, in a form propagation reads in both
    directions (docs/design/sharding.md): factors shared by the dimensions
    of operands and results, each parallel, a reduction (splitting it makes
    the results pending partial sums) or whole (it must stay replicated),
    and the op's linearity (whether a partial sum may pass through it).
    What is particular to an op stays here, never in a list of ops in the
    dist passes: the factor whose blocks it must be told of (`blockFactor`),
    whether it sums its operands apart, and how it adapts its attributes to
    one device's shapes.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's rule, computed from its operand and result types and its
        attributes.
      }],
      "::mlir::tpc::ShardingRule", "getShardingRule", (ins)>,
    InterfaceMethod<[{
        Called by a partitioner after it gave the op's operands and results
        one device's shapes: the op updates what its attributes count of the
        whole tensors (a repeat count; the vocabulary blocks). `blocks` is
        the number of blocks the rule's `blockFactor` is split into (1 when
        it is whole or the rule has none).
      }],
      "void", "adaptToShard", (ins "int64_t":$blocks), [{}],
      [{ /* Nothing counts the whole. */ }]>
  ];
}

#endif // DIALECTS_TPC_IR_TPCINTERFACES_TD
