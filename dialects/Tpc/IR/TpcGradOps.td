//===- TpcGradOps.td - tpc backward and driver ops ---------*- tablegen -*-===//
//
// The ops the derivative rules build (TpcDerivativeOpInterface) and the ones
// the training driver needs. Included from TpcOps.td. Operand `grad` is always
// the gradient of the forward op's result (its "dY"). Every op has a sharding
// rule (ShardingRulesGrad*.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_TPCGRADOPS_TD
#define DIALECTS_TPC_IR_TPCGRADOPS_TD

//===----------------------------------------------------------------------===//
// Embedding and matrix products
//===----------------------------------------------------------------------===//

def Tpc_EmbeddingGradOp : Tpc_Op<"embedding_grad", [Pure, Tpc_Sharding]> {
  let summary = "Gradient of an embedding table: scatter-add of rows by id";
  let description = [{
    `result[v] = sum over positions p with ids[p] == v of grad[p]`; rows no id
    selects are zero. `grad` has the shape of `ids` followed by `hidden`; the
    result is the table's `[vocab, hidden]`, in any float type (f32 for
    accumulation in a bf16 model).

    ```mlir
    %dwte = tpc.embedding_grad %dx[%ids]
        : tensor<4x32x64xbf16>, tensor<4x32xi64> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_IndexTensor:$ids);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $ids `]` attr-dict `:` type($grad) `,` type($ids) `->`
      type($result)
  }];
  let hasVerifier = 1;
}

def Tpc_LinearInputGradOp : Tpc_Op<"linear_input_grad",
    [Pure, InferTypeOpAdaptor, Tpc_Sharding]> {
  let summary = "Input gradient of tpc.linear: dY·Wᵀ";
  let description = [{
    For `y = linear(x, w)` with `grad = dL/dy` (`[..., out...]`), the input
    gradient `[..., in]`: the product of `grad` with the weight transposed,
    contracting the weight's output dimensions. `layout` is the forward op's.

    ```mlir
    %dx = tpc.linear_input_grad %dy, %w layout in_out
        : tensor<4x32x3x4x16xf32>, tensor<64x3x4x16xf32>
    // %dx : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$weight,
                       DefaultValuedAttr<Tpc_WeightLayoutAttr,
                         "::mlir::tpc::WeightLayout::InOut">:$layout);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight `layout` `` $layout attr-dict
      `:` type($grad) `,` type($weight)
  }];
}

def Tpc_LinearWeightGradOp : Tpc_Op<"linear_weight_grad",
    [Pure, Tpc_Sharding]> {
  let summary = "Weight gradient of tpc.linear: xᵀ·dY over all positions";
  let description = [{
    For `y = linear(x, w)` with `x: [..., in]` and `grad: [..., out...]`, the
    weight gradient summed over every leading position, in the weight's shape
    for `layout` (`[in, out...]` or `[out..., in]`). The result may be f32
    for inputs in a 16-bit type (the product accumulates in f32).

    ```mlir
    %dw = tpc.linear_weight_grad %x, %dy layout in_out
        : tensor<4x32x64xbf16>, tensor<4x32x256xbf16> -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, Tpc_FloatTensor:$grad,
                       DefaultValuedAttr<Tpc_WeightLayoutAttr,
                         "::mlir::tpc::WeightLayout::InOut">:$layout);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `layout` `` $layout attr-dict
      `:` type($input) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tpc_SumToOp : Tpc_Op<"sum_to", [Pure, Tpc_Sharding]> {
  let summary = "Sums leading dimensions away (gradient of a broadcast)";
  let description = [{
    The result's shape is a suffix of the input's; every leading dimension
    not in it is summed. This is the gradient of a bias and of the `rhs` of a
    broadcasting `tpc.add` / `tpc.mul`. The element type may change (f32
    accumulation).

    ```mlir
    %db = tpc.sum_to %dy : tensor<4x32x256xbf16> -> tensor<256xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations and activations
//===----------------------------------------------------------------------===//

def Tpc_LayerNormInputGradOp : Tpc_Op<"layer_norm_input_grad",
    [Pure, AllTypesMatch<["grad", "input", "result"]>, Tpc_Sharding]> {
  let summary = "Input gradient of tpc.layer_norm";
  let description = [{
    With `xhat = (x - mean) * rstd` recomputed from the forward `input`:
    `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`, `g = grad * weight`,
    means over the last dimension. `epsilon` is the forward op's.

    ```mlir
    %dx = tpc.layer_norm_input_grad %dy, %x, %w eps 1.000000e-05
        : tensor<4x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input,
                       Tpc_FloatTensor:$weight, F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `eps` $epsilon attr-dict
      `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Tpc_LayerNormParamGradOp : Tpc_Op<"layer_norm_param_grad",
    [Pure, AllTypesMatch<["grad", "input"]>, Tpc_Sharding]> {
  let summary = "Weight and bias gradients of tpc.layer_norm";
  let description = [{
    `weight_grad = sum(grad * xhat)` and `bias_grad = sum(grad)` over every
    leading position, `xhat` recomputed from the forward `input`. Results are
    `[hidden]` in any float type.

    ```mlir
    %dw, %db = tpc.layer_norm_param_grad %dy, %x eps 1.000000e-05
        : tensor<4x32x64xbf16> -> tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input,
                       F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$weight_grad,
                      Tpc_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `eps` $epsilon attr-dict `:` type($input) `->`
      type($weight_grad) `,` type($bias_grad)
  }];
  let hasVerifier = 1;
}

def Tpc_RmsNormInputGradOp : Tpc_Op<"rms_norm_input_grad",
    [Pure, AllTypesMatch<["grad", "input", "result"]>, Tpc_Sharding]> {
  let summary = "Input gradient of tpc.rms_norm";
  let description = [{
    With `rstd = 1 / sqrt(mean(x^2) + epsilon)` and `g = grad * weight`:
    `dx = rstd * (g - x * rstd^2 * mean(g * x))`, means over the last
    dimension.

    ```mlir
    %dx = tpc.rms_norm_input_grad %dy, %x, %w eps 9.999999e-07
        : tensor<4x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input,
                       Tpc_FloatTensor:$weight, F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `eps` $epsilon attr-dict
      `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Tpc_RmsNormParamGradOp : Tpc_Op<"rms_norm_param_grad",
    [Pure, AllTypesMatch<["grad", "input"]>, Tpc_Sharding]> {
  let summary = "Weight gradient of tpc.rms_norm";
  let description = [{
    `sum(grad * x * rstd)` over every leading position; `[hidden]` in any
    float type.

    ```mlir
    %dw = tpc.rms_norm_param_grad %dy, %x eps 9.999999e-07
        : tensor<4x32x64xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input,
                       F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `eps` $epsilon attr-dict `:` type($input) `->`
      type($result)
  }];
  let hasVerifier = 1;
}

class Tpc_ActivationGradOp<string mnemonic, list<Trait> traits = []>
    : Tpc_Op<mnemonic, !listconcat(traits,
        [Pure, AllTypesMatch<["grad", "input", "result"]>, Tpc_Sharding])> {
  let results = (outs Tpc_FloatTensor:$result);
}

def Tpc_GeluGradOp : Tpc_ActivationGradOp<"gelu_grad"> {
  let summary = "Input gradient of tpc.gelu: grad * gelu'(x)";
  let description = [{
    The derivative of the forward op's form (`approximation`) at the forward
    input.

    ```mlir
    %dx = tpc.gelu_grad %dy, %x tanh : tensor<4x32x256xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input,
                       Tpc_GeluApproximationAttr:$approximation);
  let assemblyFormat = [{
    $grad `,` $input `` $approximation attr-dict `:` type($input)
  }];
}

def Tpc_SiluGradOp : Tpc_ActivationGradOp<"silu_grad"> {
  let summary = "Input gradient of tpc.silu: grad * s * (1 + x (1 - s))";
  let description = [{
    `s = sigmoid(x)` at the forward input.

    ```mlir
    %dx = tpc.silu_grad %dy, %x : tensor<4x32x176xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$input);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
}

def Tpc_SoftmaxGradOp : Tpc_Op<"softmax_grad",
    [Pure, AllTypesMatch<["grad", "output", "result"]>, Tpc_Sharding]> {
  let summary = "Input gradient of tpc.softmax from its output";
  let description = [{
    `dx = y * (grad - sum(grad * y))` over the last dimension, `y` the
    forward op's output. A causally masked element has `y = 0`, so the mask
    needs no attribute here.

    ```mlir
    %ds = tpc.softmax_grad %dp, %p : tensor<4x4x32x32xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$output);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dropout as mask and application
//===----------------------------------------------------------------------===//

def Tpc_DropoutMaskOp : Tpc_Op<"dropout_mask", [Pure, Tpc_Sharding,
                                                Tpc_DrawsDropout]> {
  let summary = "The keep mask of a dropout, one byte per element";
  let description = [{
    Element `i` is 1 when the dropout `stream` keeps the element at global
    index `i` and 0 when it drops it (the same function of `(seed, stream,
    step, index)` as `tpc.dropout`). With `block` (an i64 scalar `n`), the
    mask is block `n` along the leading dimension of the op's full tensor:
    element `i` is the one at global index `n * N + i`, `N` being this
    mask's element count. `tpc-autodiff` splits every dropout into this op
    and `tpc.apply_mask`, so that the backward reads one byte per element
    and a microbatch draws the whole batch's mask.

    ```mlir
    %m = tpc.dropout_mask rate 1.000000e-01 stream 3 block %mb
        : tensor<2x32x64xi8>
    ```
  }];
  let arguments = (ins F64Attr:$rate, I64Attr:$stream,
                       Optional<Tpc_ScalarI64>:$block);
  let results = (outs Tpc_MaskTensor:$result);
  let assemblyFormat = [{
    `rate` $rate `stream` $stream (`block` $block^)? attr-dict `:`
      type($result)
  }];
  let hasVerifier = 1;
}

// The forward half of a split dropout, so it has a derivative rule too.
def Tpc_ApplyMaskOp : Tpc_Op<"apply_mask",
    [Pure, AllTypesMatch<["input", "result"]>, Tpc_StashingDerivative,
     Tpc_Sharding]> {
  let summary = "Applies a dropout keep mask: x * mask / (1 - rate)";
  let description = [{
    Kept elements are multiplied by `float(1 / (1 - rate))`, dropped ones
    are zero; `tpc.dropout` is `apply_mask(x, dropout_mask)`, and so is its
    gradient (`apply_mask(grad, mask)`).

    ```mlir
    %y = tpc.apply_mask %x, %m rate 1.000000e-01
        : tensor<2x32x64xf32>, tensor<2x32x64xi8>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, Tpc_MaskTensor:$mask,
                       F64Attr:$rate);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask `rate` $rate attr-dict `:` type($input) `,` type($mask)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tpc_AttentionGradOp : Tpc_Op<"attention_grad",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["query", "query_grad"]>,
     AllTypesMatch<["key", "key_grad"]>,
     AllTypesMatch<["value", "value_grad"]>, Tpc_Sharding,
     Tpc_DrawsDropout]> {
  let summary = "Gradients of tpc.attention for q, k and v";
  let description = [{
    Recomputes the probabilities from `query` and `key` (same scale, causal
    mask, dropout stream and `block` as the forward op, so the same dropout
    mask) and returns the gradients of `query`, `key` and `value` for `grad`
    (`[b, heads, s_q, d_v]`). With grouped kv heads, a kv head's gradient
    sums over the query heads that read it. `seq_major` as in
    `tpc.attention`: every tensor `[b, s, heads, d]`.

    With `saved(%output, %lse)`, the forward's result and log-sum-exp (a
    `tpc.attention ... lse`'s two results), the probabilities are
    `exp(scale * q k^T - lse)` and their row sums `rowsum(grad * output)`:
    a device need not rerun the forward for them (two `s_q x s_k x d`
    products fewer on a GPU).

    ```mlir
    %dq, %dk, %dv = tpc.attention_grad %do, %q, %k, %v causal
        scale 2.500000e-01
        : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>,
          tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
    %dq2, %dk2, %dv2 = tpc.attention_grad %do, %q, %k, %v
        saved(%o, %lse : tensor<4x8x32x16xf32>, tensor<4x8x32xf32>) causal
        scale 2.500000e-01
        : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>,
          tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, Tpc_FloatTensor:$query,
                       Tpc_FloatTensor:$key, Tpc_FloatTensor:$value,
                       Optional<Tpc_FloatTensor>:$output,
                       Optional<Tpc_FloatTensor>:$lse,
                       UnitAttr:$causal, F64Attr:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_stream,
                       Optional<Tpc_ScalarI64>:$block, UnitAttr:$seq_major);
  let results = (outs Tpc_FloatTensor:$query_grad, Tpc_FloatTensor:$key_grad,
                      Tpc_FloatTensor:$value_grad);
  let extraClassDeclaration = [{
    /// As tpc.attention's.
    unsigned getHeadsDim() { return attentionHeadsDim(getSeqMajor()); }
    unsigned getSeqDim() { return attentionSeqDim(getSeqMajor()); }
  }];
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value
      (`saved` `(` $output^ `,` $lse `:` type($output) `,` type($lse) `)`)?
      (`causal` $causal^)? (`seq_major` $seq_major^)? `scale` $scale
      (`dropout` $dropout_rate^ `stream` $dropout_stream)?
      (`block` $block^)? attr-dict
      `:` type($grad) `,` type($query) `,` type($key) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Tpc_RotaryGradOp : Tpc_Op<"rotary_grad",
    [Pure, AllTypesMatch<["grad", "result"]>, Tpc_Sharding]> {
  let summary = "Input gradient of tpc.rotary: the inverse rotation";
  let description = [{
    The rotation is orthogonal, so the gradient rotates `grad` by the
    negated angles: `grad * cos - rotate_half(grad) * sin` with the forward
    op's `theta`, `offset` and `scaling`. A separate op (not an attribute on
    `tpc.rotary`) so that a backend without the kernel refuses it rather
    than rotating the wrong way.

    ```mlir
    %dq = tpc.rotary_grad %dqr theta 1.000000e+04 : tensor<4x8x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$grad, F64Attr:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       OptionalAttr<DenseF64ArrayAttr>:$scaling,
                       UnitAttr:$seq_major);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad (`seq_major` $seq_major^)? `theta` $theta (`offset` $offset^)?
      (`scaling` $scaling^)? attr-dict `:` type($grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Tpc_CrossEntropyGradOp : Tpc_Op<"cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>, Tpc_ShardingAdapts]> {
  let summary = "Logits gradient of tpc.cross_entropy's loss sum";
  let description = [{
    `(softmax(logits) - onehot(label)) * loss_sum_grad` at positions whose
    label is not `ignore_index`, zero at the others. `loss_sum_grad` is the
    gradient of the summed loss (a f32 scalar; the training driver passes
    `1 / global target count`). `vocab` and `blocks` as for
    `tpc.cross_entropy`: the padded columns get a zero gradient.

    ```mlir
    %dlogits = tpc.cross_entropy_grad %logits, %labels, %dsum
        : tensor<4x32x256xf32>, tensor<4x32xi64>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$logits, Tpc_IndexTensor:$labels,
                       Tpc_ScalarF32:$loss_sum_grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       OptionalAttr<I64Attr>:$vocab,
                       OptionalAttr<I64Attr>:$vocab_blocks);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_sum_grad (`ignore` $ignore_index^)?
      (`vocab` $vocab^)? (`blocks` $vocab_blocks^)? attr-dict `:`
      type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Tpc_CountTargetsOp : Tpc_Op<"count_targets", [Pure, Tpc_Sharding]> {
  let summary = "Number of labels that are not ignore_index";
  let description = [{
    The count `tpc.cross_entropy` would return for these labels. The training
    driver counts the targets of the global batch once, before any
    microbatch, so every microbatch scales its gradient by the global count.

    ```mlir
    %total = tpc.count_targets %labels : tensor<8x32xi64>
    ```
  }];
  let arguments = (ins Tpc_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tpc_ScalarI64:$result);
  let assemblyFormat = [{
    $labels (`ignore` $ignore_index^)? attr-dict `:` type($labels)
  }];
}

def Tpc_InverseCountOp : Tpc_Op<"inverse_count", [Pure, Tpc_Sharding]> {
  let summary = "1 / count as f32, 0 for a count of 0";
  let description = [{
    The gradient of the mean loss with respect to the summed loss: the
    training driver seeds every microbatch's backward with the inverse of
    the global target count (a batch with every target ignored contributes
    nothing).

    ```mlir
    %dsum = tpc.inverse_count %total
    ```
  }];
  let arguments = (ins Tpc_ScalarI64:$count);
  let results = (outs Tpc_ScalarF32:$result);
  let assemblyFormat = "$count attr-dict";
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Tpc_PadOp : Tpc_Op<"pad", [Pure, InferTypeOpAdaptor, Tpc_Sharding]> {
  let summary = "Places a tensor in a larger one of zeros (gradient of slice)";
  let description = [{
    The result has the input's shape except dimension `dim`, of size `size`;
    the input occupies indices `[offset, offset + input size)` there and the
    rest is zero.

    ```mlir
    %dwpe = tpc.pad %dpos dim 0 offset 0 to 1024 : tensor<32x64xf32>
    // %dwpe : tensor<1024x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, I64Attr:$dim, I64Attr:$offset,
                       I64Attr:$size);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `offset` $offset `to` $size attr-dict `:` type($input)
  }];
}

def Tpc_SumGroupsOp : Tpc_Op<"sum_groups",
    [Pure, InferTypeOpAdaptor, Tpc_ShardingAdapts]> {
  let summary = "Sums consecutive groups of one dimension (gradient of repeat)";
  let description = [{
    Index `i` of the result along `dim` is the sum of input indices
    `[i * repeats, (i + 1) * repeats)`: the transpose of `tpc.repeat`.

    ```mlir
    %dk = tpc.sum_groups %dk8 dim 1 times 2 : tensor<4x8x32x16xf32>
    // %dk : tensor<4x4x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, I64Attr:$dim, I64Attr:$repeats);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `times` $repeats attr-dict `:` type($input)
  }];
}

#endif // DIALECTS_TPC_IR_TPCGRADOPS_TD
