//===- TpcOptimizerOps.td - tpc optimizer ops --------------*- tablegen -*-===//
//
// What tpc-optimizer appends to the training driver: the global gradient
// norm, clipping, the learning-rate schedule and the parameter updates.
// Included from TpcOps.td. The updates are value semantics here; the rt
// lowering runs them in place on the parameter and state buffers. Every op has
// a sharding rule (ShardingRulesOptimizer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_TPCOPTIMIZEROPS_TD
#define DIALECTS_TPC_IR_TPCOPTIMIZEROPS_TD

def Tpc_SumSquaresOp : Tpc_Op<"sum_squares", [Pure, Tpc_Sharding]> {
  let summary = "Sum of the squares of every element of every operand";
  let description = [{
    An f32 scalar (a tensor-parallel rank sums its shards, and an all-reduce
    adds the ranks before `tpc.clip_coefficient` takes the root).

    ```mlir
    %ss = tpc.sum_squares %dw0, %dw1 : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Variadic<Tpc_FloatTensor>:$inputs);
  let results = (outs Tpc_ScalarF32:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Tpc_ClipCoefficientOp : Tpc_Op<"clip_coefficient", [Pure, Tpc_Sharding]> {
  let summary = "Global gradient norm and its clipping factor";
  let description = [{
    From the sum of squares of every gradient (`tpc.sum_squares`, over the
    ranks when sharded): `norm = sqrt(sum_squares)` and, as
    `torch.nn.utils.clip_grad_norm_`, `coefficient = min(1, max_norm /
    (norm + 1e-6))`, the factor every gradient is multiplied by before the
    update. `max_norm` 0 means no clipping (coefficient 1), so the op also
    gives the norm alone.

    ```mlir
    %norm, %coef = tpc.clip_coefficient %ss max_norm 1.000000e+00
    ```
  }];
  let arguments = (ins Tpc_ScalarF32:$sum_squares, F64Attr:$max_norm);
  let results = (outs Tpc_ScalarF32:$norm, Tpc_ScalarF32:$coefficient);
  let assemblyFormat = "$sum_squares `max_norm` $max_norm attr-dict";
  let hasVerifier = 1;
}

def Tpc_LrScheduleOp : Tpc_Op<"lr_schedule", [Pure, Tpc_Sharding]> {
  let summary = "Learning rate of an optimizer step";
  let description = [{
    For the 1-based optimizer `step` `t` (an i64 scalar): `constant` is
    `lr` at every step (it takes no warm-up, minimum or total). `cosine`
    warms up linearly, `lr * t / warmup` for `t <= warmup` (when
    `warmup > 0`), then decays from `lr` to `min_lr` over steps
    `warmup .. total`: with `p = min(1, (t - warmup) / (total - warmup))`,
    the rate is `min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2`.

    ```mlir
    %lr = tpc.lr_schedule %step cosine lr 6.000000e-04 min_lr 6.000000e-05
        warmup 10 total 100
    ```
  }];
  let arguments = (ins Tpc_ScalarI64:$step,
                       Tpc_LrScheduleKindAttr:$schedule, F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_lr,
                       DefaultValuedAttr<I64Attr, "0">:$warmup,
                       DefaultValuedAttr<I64Attr, "0">:$total);
  let results = (outs Tpc_ScalarF32:$result);
  let assemblyFormat = [{
    $step `` $schedule `lr` $lr (`min_lr` $min_lr^)? (`warmup` $warmup^)?
      (`total` $total^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Tpc_AdamWUpdateOp : Tpc_Op<"adamw_update",
    [Pure, AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq",
                          "new_param", "new_exp_avg", "new_exp_avg_sq"]>,
     Tpc_Sharding]> {
  let summary = "One AdamW step (decoupled weight decay, bias correction)";
  let description = [{
    As `torch.optim.AdamW` (not amsgrad), with `g = grad * grad_scale`
    (the clipping factor; 1 without it), `t = step` (1-based):

    ```
    p  = param * (1 - lr * weight_decay)
    m  = beta1 * exp_avg    + (1 - beta1) * g
    v  = beta2 * exp_avg_sq + (1 - beta2) * g^2
    new_param = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    ```

    Parameter, gradient and state are f32 (master weights). Results are the
    new parameter and the new `exp_avg`, `exp_avg_sq`.

    ```mlir
    %p1, %m1, %v1 = tpc.adamw_update %p, %g, %m, %v lr %lr step %step
        beta1 9.000000e-01 beta2 9.990000e-01 eps 1.000000e-08
        weight_decay 1.000000e-02 : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Tpc_F32Tensor:$param, Tpc_F32Tensor:$grad,
                       Tpc_F32Tensor:$exp_avg, Tpc_F32Tensor:$exp_avg_sq,
                       Tpc_ScalarF32:$lr, Tpc_ScalarI64:$step,
                       Optional<Tpc_ScalarF32>:$grad_scale,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Tpc_F32Tensor:$new_param, Tpc_F32Tensor:$new_exp_avg,
                      Tpc_F32Tensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `lr` $lr `step` $step
      (`scale` $grad_scale^)? `beta1` $beta1 `beta2` $beta2 `eps` $eps
      `weight_decay` $weight_decay attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Tpc_SgdUpdateOp : Tpc_Op<"sgd_update",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor, Tpc_Sharding]> {
  let summary = "One SGD step with optional momentum and L2 weight decay";
  let description = [{
    As `torch.optim.SGD` (dampening 0, not Nesterov), with
    `g = grad * grad_scale + weight_decay * param`: with a
    `momentum_buffer` (required exactly when `momentum` is non-zero),
    `buf = momentum * momentum_buffer + g` and `new_param = param - lr * buf`,
    and the second result is `buf` (the buffer starts at zero, which gives
    torch's first step `buf = g`); without one, `new_param = param - lr * g`.

    ```mlir
    %p1, %b1 = tpc.sgd_update %p, %g momentum_buffer %b lr %lr
        momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Tpc_F32Tensor:$param, Tpc_F32Tensor:$grad,
                       Optional<Tpc_F32Tensor>:$momentum_buffer,
                       Tpc_ScalarF32:$lr,
                       Optional<Tpc_ScalarF32>:$grad_scale,
                       F64Attr:$momentum, F64Attr:$weight_decay);
  let results = (outs Tpc_F32Tensor:$new_param,
                      Optional<Tpc_F32Tensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad (`momentum_buffer` $momentum_buffer^)? `lr` $lr
      (`scale` $grad_scale^)? `momentum` $momentum
      `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($grad)
      (`,` type($momentum_buffer)^)?
  }];
  let hasVerifier = 1;
}

#endif // DIALECTS_TPC_IR_TPCOPTIMIZEROPS_TD
