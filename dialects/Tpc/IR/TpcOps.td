//===- TpcOps.td - tpc dialect operations ------------------*- tablegen -*-===//

#ifndef DIALECTS_TPC_IR_TPCOPS_TD
#define DIALECTS_TPC_IR_TPCOPS_TD

include "dialects/Tpc/IR/TpcBase.td"
include "dialects/Tpc/IR/TpcInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Every forward op has a derivative rule (DerivativeRules*.cpp). The stashing
// variants declare the forward values their backward reads.
def Tpc_Derivative : DeclareOpInterfaceMethods<Tpc_DerivativeOpInterface>;
def Tpc_StashingDerivative : DeclareOpInterfaceMethods<
    Tpc_DerivativeOpInterface, ["getStashedOperands"]>;
def Tpc_ResultStashingDerivative : DeclareOpInterfaceMethods<
    Tpc_DerivativeOpInterface, ["getStashedResults"]>;
def Tpc_BothStashingDerivative : DeclareOpInterfaceMethods<
    Tpc_DerivativeOpInterface, ["getStashedOperands", "getStashedResults"]>;
// Every forward op has a sharding rule (ShardingRules*.cpp).
def Tpc_Sharding : DeclareOpInterfaceMethods<Tpc_ShardingOpInterface>;
// ... whose attributes count something of the whole tensors.
def Tpc_ShardingAdapts : DeclareOpInterfaceMethods<Tpc_ShardingOpInterface,
                                                   ["adaptToShard"]>;
def Tpc_DrawsDropout : DeclareOpInterfaceMethods<Tpc_DropoutDrawOpInterface>;

//===----------------------------------------------------------------------===//
// Embedding and matrix products
//===----------------------------------------------------------------------===//

def Tpc_EmbeddingOp : Tpc_Op<"embedding", [Pure, InferTypeOpAdaptor,
    Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Looks up rows of a table by token id";
  let description = [{
    Gathers row `ids[...]` of `table` (`[vocab, hidden]`). The result has the
    shape of `ids` followed by `hidden`. An id outside `[0, vocab)` is a
    run-time error of the backend.

    ```mlir
    %x = tpc.embedding %wte[%ids] : tensor<256x64xf32>, tensor<4x32xi64>
    // %x : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$table, Tpc_IndexTensor:$ids);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids)
  }];
}

def Tpc_LinearOp : Tpc_Op<"linear", [Pure, InferTypeOpAdaptor,
    Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Affine map of the last dimension: x·W (+ bias)";
  let description = [{
    Contracts the last dimension of `input` (`[..., in]`) with the input
    dimension of `weight`. The weight may have several output dimensions, so
    that structure such as attention heads stays visible: with layout `in_out`
    (GPT-2's `Conv1D`) the weight is `[in, out...]`, with `out_in`
    (`torch.nn.Linear`, Llama) it is `[out..., in]`. The result is
    `[..., out...]`; the optional `bias` has shape `[out...]`.

    ```mlir
    // GPT-2 c_attn viewed as [hidden, 3, heads, head_dim].
    %qkv = tpc.linear %x, %w, %b layout in_out
        : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
    // %qkv : tensor<4x32x3x4x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, Tpc_FloatTensor:$weight,
                       Optional<Tpc_FloatTensor>:$bias,
                       DefaultValuedAttr<Tpc_WeightLayoutAttr,
                         "::mlir::tpc::WeightLayout::InOut">:$layout);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `layout` `` $layout attr-dict
      `:` type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// The number of output dimensions of the weight.
    int64_t getNumOutputDims() {
      return getWeight().getType().getRank() - 1;
    }
  }];
}

def Tpc_BatchMatmulOp : Tpc_Op<"batch_matmul", [Pure, InferTypeOpAdaptor,
    Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Batched matrix product with an optional folded scale";
  let description = [{
    `result[..., m, n] = scale * sum_k lhs[..., m, k] * rhs[..., k, n]` over
    identical leading batch dimensions. `transpose_lhs` / `transpose_rhs` read
    the operand with its two last dimensions swapped. Folding the attention
    scale into the product avoids a separate scale op whose backward would
    stash another `[b, heads, s, s]` tensor.

    ```mlir
    %scores = tpc.batch_matmul %q, %k transpose_rhs scale 2.500000e-01
        : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
    // %scores : tensor<4x4x32x32xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$lhs, Tpc_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
      (`transpose_rhs` $transpose_rhs^)? (`scale` $scale^)? attr-dict
      `:` type($lhs) `,` type($rhs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations and activations
//===----------------------------------------------------------------------===//

def Tpc_LayerNormOp : Tpc_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>,
     Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * weight + bias`, with mean and biased
    variance over the last dimension; `weight` and `bias` have its size.

    ```mlir
    %y = tpc.layer_norm %x, %g, %b eps 1.000000e-05
        : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, Tpc_FloatTensor:$weight,
                       Tpc_FloatTensor:$bias, F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $epsilon attr-dict
      `:` type($input) `,` type($weight) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Tpc_RmsNormOp : Tpc_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>,
     Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * weight` over the last dimension (Llama).

    ```mlir
    %y = tpc.rms_norm %x, %g eps 9.999999e-07
        : tensor<4x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, Tpc_FloatTensor:$weight,
                       F64Attr:$epsilon);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $epsilon attr-dict
      `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

class Tpc_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Tpc_Op<mnemonic, !listconcat(traits,
        [Pure, AllTypesMatch<["input", "result"]>])> {
  let results = (outs Tpc_FloatTensor:$result);
}

def Tpc_GeluOp : Tpc_UnaryOp<"gelu",
    [Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Gaussian error linear unit (erf or tanh form)";
  let description = [{
    `erf`: `x/2 * (1 + erf(x/sqrt(2)))`; `tanh` (GPT-2's `gelu_new`):
    `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`.

    ```mlir
    %y = tpc.gelu %x tanh : tensor<4x32x256xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input,
                       Tpc_GeluApproximationAttr:$approximation);
  // The enum attribute prints its own leading space.
  let assemblyFormat = "$input `` $approximation attr-dict `:` type($input)";
}

def Tpc_SiluOp : Tpc_UnaryOp<"silu",
    [Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Sigmoid linear unit: x * sigmoid(x)";
  let description = [{
    ```mlir
    %y = tpc.silu %x : tensor<4x32x176xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tpc_DropoutOp : Tpc_UnaryOp<"dropout", [Tpc_Derivative, Tpc_Sharding,
                                            Tpc_DrawsDropout]> {
  let summary = "Dropout driven by a counter-based random stream";
  let description = [{
    Zeroes each element with probability `rate` and scales the others by
    `1 / (1 - rate)`. The keep decision for the element at global row-major
    index `i` is a pure function of `(seed, stream, step, i)`: `seed` is the
    run's dropout seed, `stream` identifies the op (unique in the module),
    `step` is the training step. A mask can therefore be regenerated
    (recomputation) and is the same whatever the parallel layout: a shard
    evaluates the function at the global indices of its elements.

    ```mlir
    %y = tpc.dropout %x rate 1.000000e-01 stream 3 : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, F64Attr:$rate,
                       I64Attr:$stream);
  let assemblyFormat = [{
    $input `rate` $rate `stream` $stream attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Tpc_SoftmaxOp : Tpc_UnaryOp<"softmax",
    [Tpc_ResultStashingDerivative, Tpc_Sharding]> {
  let summary = "Softmax over the last dimension, optionally causal";
  let description = [{
    With `causal`, for an input `[..., q, k]` the element `(i, j)` with
    `j > i + (k - q)` is masked (takes no probability) inside the op, so no
    separate mask op or `[s, s]` constant exists. A causal input needs
    `k >= q`, since otherwise the first rows would have every key masked.

    ```mlir
    %p = tpc.softmax %scores causal : tensor<4x4x32x32xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, UnitAttr:$causal);
  let assemblyFormat = "$input (`causal` $causal^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

class Tpc_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Tpc_Op<mnemonic, !listconcat(traits,
        [Pure, AllTypesMatch<["lhs", "result"]>])> {
  let arguments = (ins Tpc_FloatTensor:$lhs, Tpc_FloatTensor:$rhs);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let hasVerifier = 1;
}

// Not `Commutative`: only rhs broadcasts, so swapping the operands (as the
// folder does to move a constant to the right) could make the op invalid.
def Tpc_AddOp : Tpc_BinaryOp<"add", [Tpc_Derivative, Tpc_Sharding]> {
  let summary = "Elementwise sum, broadcasting rhs over leading dimensions";
  let description = [{
    `rhs` has the shape of `lhs` or a suffix of it (it is then broadcast over
    the leading dimensions, e.g. position embeddings over the batch). Adding
    a zero splat constant of the result's type folds away (the training
    driver's accumulators start at zero).

    ```mlir
    %y = tpc.add %tok, %pos : tensor<4x32x64xf32>, tensor<32x64xf32>
    ```
  }];
  let hasFolder = 1;
}

def Tpc_MulOp : Tpc_BinaryOp<"mul", [Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Elementwise product, broadcasting rhs over leading dimensions";
  let description = [{
    ```mlir
    %y = tpc.mul %gate, %up : tensor<4x32x176xf32>, tensor<4x32x176xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tpc_AttentionOp : Tpc_Op<"attention", [Pure, InferTypeOpAdaptor,
    Tpc_BothStashingDerivative, Tpc_Sharding, Tpc_DrawsDropout]> {
  let summary = "Fused scaled-dot-product attention with grouped KV heads";
  let description = [{
    `softmax(scale * q k^T [+ causal mask]) v` per head, with optional dropout
    on the probabilities (same random stream as `tpc.dropout`). Operands are
    `q: [b, heads, s_q, d]`, `k: [b, kv_heads, s_k, d]`,
    `v: [b, kv_heads, s_k, d_v]`; `heads` must be a multiple of `kv_heads`
    (grouped-query attention: query head `h` reads kv head
    `h / (heads / kv_heads)`). The result is `[b, heads, s_q, d_v]`. The
    causal mask is aligned as in `tpc.softmax`, so it needs `s_k >= s_q`.
    `dropout_stream` is only meaningful (and only accepted non-zero) with a
    non-zero `dropout_rate`. The optional `block` (an i64 scalar `n`) says the
    op computes block `n` along the leading (batch) dimension of a larger
    attention: the dropout draws the element at index `n * N + i` of the
    probability tensor, `N` being its element count here, so that a
    microbatch draws the mask the whole batch would (see
    `tpc.dropout_mask`). It needs dropout.

    With `seq_major`, every tensor (operands and result) is laid out
    `[b, s, heads, d]` instead: the same values, the middle dimensions
    swapped (tpc-fold-attention-transposes makes it out of the transposes
    around a head-major attention). The dropout still draws probability
    `(b, h, i, j)` of the `[b, heads, s_q, s_k]` tensor.

    With `lse`, a second result holds each query row's log-sum-exp,
    `log(sum_j exp(scale * q_i . k_j))` over the keys the row sees (before
    dropout), f32 `[b, heads, s_q]` in either layout: what
    `tpc.attention_grad` reads (with the result) instead of recomputing the
    probabilities' statistics. `tpc-autodiff` asks for it.

    ```mlir
    %o = tpc.attention %q, %k, %v causal scale 2.500000e-01
        : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
    %p = tpc.attention %qs, %ks, %vs causal seq_major scale 2.500000e-01
        : tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
    %r, %lse = tpc.attention %q, %k, %v causal lse scale 2.500000e-01
        : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$query, Tpc_FloatTensor:$key,
                       Tpc_FloatTensor:$value, UnitAttr:$causal, F64Attr:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_stream,
                       Optional<Tpc_ScalarI64>:$block, UnitAttr:$seq_major,
                       UnitAttr:$with_lse);
  let results = (outs Tpc_FloatTensor:$result,
                      Optional<Tpc_FloatTensor>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? (`seq_major` $seq_major^)?
      (`lse` $with_lse^)? `scale` $scale
      (`dropout` $dropout_rate^ `stream` $dropout_stream)?
      (`block` $block^)? attr-dict
      `:` type($query) `,` type($key) `,` type($value)
  }];
  // The head-major form without a dropout block, as before either existed.
  let builders = [
    OpBuilder<(ins "Value":$query, "Value":$key, "Value":$value,
                   "UnitAttr":$causal, "FloatAttr":$scale,
                   "FloatAttr":$dropout_rate, "IntegerAttr":$dropout_stream), [{
      build($_builder, $_state, query, key, value, causal, scale, dropout_rate,
            dropout_stream, /*block=*/Value(), /*seq_major=*/UnitAttr(),
            /*with_lse=*/UnitAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The dimensions of the heads and of the sequence in every tensor.
    unsigned getHeadsDim() { return attentionHeadsDim(getSeqMajor()); }
    unsigned getSeqDim() { return attentionSeqDim(getSeqMajor()); }
    int64_t getNumHeads() {
      return getQuery().getType().getDimSize(getHeadsDim());
    }
    int64_t getNumKvHeads() {
      return getKey().getType().getDimSize(getHeadsDim());
    }
  }];
  let hasVerifier = 1;
}

def Tpc_RotaryOp : Tpc_Op<"rotary",
    [Pure, AllTypesMatch<["input", "result"]>, Tpc_Derivative,
     Tpc_Sharding]> {
  let summary = "Rotary position embedding (rotate-half convention)";
  let description = [{
    For `x: [b, heads, s, d]` and position `p = offset + s_index`, with
    `inv_freq[i] = theta^(-2i/d)` for `i < d/2` and angle `p * inv_freq[i]`
    (repeated for both halves): `x * cos + rotate_half(x) * sin`, where
    `rotate_half([x1, x2]) = [-x2, x1]` (Hugging Face convention). Angles are
    computed, never stored as a table.

    With `scaling`, the frequencies are scaled as Hugging Face's
    `rope_scaling` does: `[factor]` (`linear`: each `inv_freq / factor`) or
    `[factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings]` (`llama3`: the low frequencies
    divided by `factor`, the high ones kept, a smooth blend between).

    With `seq_major`, `x` is `[b, s, heads, d]` (the position is the index
    of dim 1), as `tpc.attention`'s `seq_major`.

    ```mlir
    %qr = tpc.rotary %q theta 1.000000e+04 : tensor<4x8x32x16xf32>
    %qm = tpc.rotary %q seq_major theta 1.000000e+04 : tensor<4x32x8x16xf32>
    %qs = tpc.rotary %q theta 5.000000e+05 scaling [8.0, 1.0, 4.0, 8192.0]
        : tensor<4x8x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, F64Attr:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       OptionalAttr<DenseF64ArrayAttr>:$scaling,
                       UnitAttr:$seq_major);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`seq_major` $seq_major^)? `theta` $theta (`offset` $offset^)?
      (`scaling` $scaling^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Tpc_CrossEntropyOp : Tpc_Op<"cross_entropy", [Pure,
    Tpc_StashingDerivative, Tpc_ShardingAdapts]> {
  let summary = "Summed softmax cross-entropy and the count of targets";
  let description = [{
    For `logits: [..., vocab]` and integer `labels: [...]`, yields the sum over
    positions whose label is not `ignore_index` of
    `logsumexp(logits) - logits[label]` (f32), and the number of such
    positions (i64). A mean over a global batch divides the global sum by the
    global count (`tpc.loss_mean`), so it does not depend on how the batch is
    split.

    `vocab`, when given, is the number of real classes: the logits' columns
    from `vocab` on are padding (a vocabulary padded to a multiple of the
    tensor-parallel size) and take no probability mass.

    `blocks`, when given, says that the logits' columns are one of that many
    equal blocks of the (padded) vocabulary, the others held elsewhere (the
    split a vocabulary-parallel LM head makes; `dist-partition` sets it).
    `vocab` still counts the whole vocabulary: at most columns x blocks.

    ```mlir
    %sum, %count = tpc.cross_entropy %logits, %labels
        : tensor<4x32x256xf32>, tensor<4x32xi64>
    %sum, %count = tpc.cross_entropy %logits, %labels vocab 250
        : tensor<4x32x256xf32>, tensor<4x32xi64>
    %sum, %count = tpc.cross_entropy %logits, %labels vocab 250 blocks 4
        : tensor<4x32x64xf32>, tensor<4x32xi64>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$logits, Tpc_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       OptionalAttr<I64Attr>:$vocab,
                       OptionalAttr<I64Attr>:$vocab_blocks);
  let results = (outs Tpc_ScalarF32:$loss_sum, Tpc_ScalarI64:$count);
  let assemblyFormat = [{
    $logits `,` $labels (`ignore` $ignore_index^)? (`vocab` $vocab^)?
      (`blocks` $vocab_blocks^)?
      attr-dict `:` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Tpc_LossMeanOp : Tpc_Op<"loss_mean", [Pure,
    Tpc_StashingDerivative, Tpc_Sharding]> {
  let summary = "Mean loss: a loss sum divided by a target count";
  let description = [{
    `sum / count`; a count of zero gives 0 (a batch with every target ignored
    contributes nothing).

    ```mlir
    %loss = tpc.loss_mean %sum, %count
    ```
  }];
  let arguments = (ins Tpc_ScalarF32:$sum, Tpc_ScalarI64:$count);
  let results = (outs Tpc_ScalarF32:$result);
  let assemblyFormat = "$sum `,` $count attr-dict";
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Tpc_ReshapeOp : Tpc_Op<"reshape", [Pure, Tpc_Derivative, Tpc_Sharding]> {
  let summary = "Row-major reshape to a shape with the same element count";
  let description = [{
    ```mlir
    %y = tpc.reshape %x : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tpc_TransposeOp : Tpc_Op<"transpose", [Pure, InferTypeOpAdaptor,
    Tpc_Derivative, Tpc_Sharding]> {
  let summary = "Permutes dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    ```mlir
    %y = tpc.transpose %x [0, 2, 1, 3] : tensor<4x32x8x16xf32>
    // %y : tensor<4x8x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input)";
}

def Tpc_SliceOp : Tpc_Op<"slice", [Pure, InferTypeOpAdaptor,
    Tpc_Derivative, Tpc_Sharding]> {
  let summary = "Contiguous slice of one dimension";
  let description = [{
    Keeps indices `[offset, offset + size)` of dimension `dim`.

    ```mlir
    %pos = tpc.slice %wpe dim 0 [0 : 32] : tensor<1024x64xf32>
    // %pos : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, I64Attr:$dim, I64Attr:$offset,
                       I64Attr:$size);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim ` ` `[` $offset `:` $size `]` attr-dict `:` type($input)
  }];
}

def Tpc_RepeatOp : Tpc_Op<"repeat", [Pure, InferTypeOpAdaptor,
    Tpc_Derivative, Tpc_ShardingAdapts]> {
  let summary = "Repeats each index of one dimension consecutively";
  let description = [{
    `torch.repeat_interleave(x, repeats, dim)`: index `i` of the result along
    `dim` reads index `i / repeats` of the input. Unfused grouped-query
    attention uses it to give each query head its kv head.

    ```mlir
    %k8 = tpc.repeat %k dim 1 times 2 : tensor<4x4x32x16xf32>
    // %k8 : tensor<4x8x32x16xf32>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input, I64Attr:$dim, I64Attr:$repeats);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `times` $repeats attr-dict `:` type($input)
  }];
}

def Tpc_CastOp : Tpc_Op<"cast", [Pure, Tpc_Derivative, Tpc_Sharding]> {
  let summary = "Converts between f32, bf16 and f16 (round to nearest even)";
  let description = [{
    ```mlir
    %y = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
    ```
  }];
  let arguments = (ins Tpc_FloatTensor:$input);
  let results = (outs Tpc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

include "dialects/Tpc/IR/TpcGradOps.td"
include "dialects/Tpc/IR/TpcOptimizerOps.td"

#endif // DIALECTS_TPC_IR_TPCOPS_TD
