//===- RtOps.td - rt dialect operations --------------------*- tablegen -*-===//

#ifndef DIALECTS_RT_IR_RTOPS_TD
#define DIALECTS_RT_IR_RTOPS_TD

include "dialects/Rt/IR/RtBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

//===----------------------------------------------------------------------===//
// Program
//===----------------------------------------------------------------------===//

def Rt_ProgramOp : Rt_Op<"program", [Symbol, IsolatedFromAbove, SingleBlock,
                                     NoTerminator]> {
  let summary = "A straight-line program of buffers and kernel calls";
  let description = [{
    Holds the buffer definitions, kernel calls and output bindings of one
    executable; kernels run in op order. Only `rt` ops may appear in it.
    A distributed program carries its device `mesh`; the `splits` of its
    params, inputs and dropout kernels name that mesh's axes, and its
    buffers are one rank's: every rank runs the same program on its own
    blocks.
    A training step run by actions (`tpc-lower-to-rt actions=true`) also
    carries, as attributes: `functions` (each `{name, first, count}`, a
    range of the program's kernels), the action list (`actions`, an
    `array<i64: function, microbatch, slot, ...>`, three integers per
    action, without stages; `stage_actions`, an array of one such list per
    pipeline stage) and `pools` (each
    `{slots}`, and `stride` once memory is planned) that pooled `rt.alloc`s
    name. An action addresses slot `slot mod slots` of each pool its
    kernels touch (`tpc-lower-to-rt` makes an action's slot its microbatch:
    a pool of S slots holds microbatch `i` in slot `i mod S`).
    Parameter, input, output and gradient names are unique, and so is each
    state's (name, parameter) pair. Kernels write only `rt.alloc` buffers
    (inputs are read-only), except that `adamw_update` and `sgd_update`
    update their parameter and state operands in place; params and state are
    written by nothing else. An `rt.alloc` buffer is written by a kernel
    before any kernel reads it or an output or gradient binds it. Outputs
    are whole on every rank: an output never binds a split param or input.

    ```mlir
    rt.program @forward {
      %x = rt.input "input_ids" bound 256 : memref<4x32xi64>
      ...
    }
    rt.program @forward mesh [dp = 2, tp = 2] {
      %x = rt.input "input_ids" bound 256 splits [[dp], []] : memref<2x32xi64>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<Rt_MeshAttr>:$mesh);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`mesh` $mesh^)? attr-dict-with-keyword $body
  }];
  // verify(): what the body holds (rt ops, no nested program);
  // verifyRegions(): the checks that read its ops' attributes, which run
  // after those ops' own verifiers, never on an op that lacks one.
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Rt_ParamOp : Rt_Op<"param"> {
  let summary = "A parameter buffer, loaded from a Hugging Face tensor";
  let description = [{
    The buffer holds the safetensors tensor `hf_name`, of shape `hf_shape`,
    viewed as the buffer's shape (a row-major reshape: the element counts
    are equal) and converted to the buffer's element type. Without a weights
    file `tpc-run --init-seed` initializes it by `init`: `normal` draws from
    N(0, `std`^2) (default 0.02), `zeros` and `ones` are constants.

    In a distributed program the view is the global tensor and the buffer
    this rank's block of it: `splits` (the program's mesh axes per view
    dimension) cut the view, padded with zeros at the end of each dimension
    to `padded` when that is given, into blocks of the buffer's shape. The
    padded shape is thus the buffer's shape times the split sizes; `view`
    (the view before padding, no larger in any dimension) is given exactly
    when `padded` is, and otherwise the view is that global shape. The
    Hugging Face tensor has as many elements as the view. An optimizer state
    and a gradient of the parameter have its buffer's shape and layout.

    ```mlir
    %w = rt.param "transformer.h.0.attn.c_attn.weight" hf_shape [64, 192]
        init normal offset 4096 : memref<64x3x4x16xf32>
    %g = rt.param "transformer.h.0.ln_1.weight" hf_shape [64] init ones
        : memref<64xf32>
    // Vocabulary-parallel over tp = 2: 50257 rows padded to 50258.
    %e = rt.param "transformer.wte.weight" hf_shape [50257, 64]
        view [50257, 64] padded [50258, 64] splits [[tp], []] init normal
        : memref<25129x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$hf_name, DenseI64ArrayAttr:$hf_shape,
                       Rt_ParamInitAttr:$init,
                       DefaultValuedAttr<F64Attr, "0.02">:$init_std,
                       OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<DenseI64ArrayAttr>:$view_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$padded_shape,
                       OptionalAttr<Rt_SplitsAttr>:$splits);
  let results = (outs Rt_Buffer:$buffer);
  let assemblyFormat = [{
    $hf_name `hf_shape` $hf_shape (`view` $view_shape^)?
      (`padded` $padded_shape^)? (`splits` $splits^)? `init` `` $init
      (`std` $init_std^)? (`offset` $offset^)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Rt_InputOp : Rt_Op<"input"> {
  let summary = "An input buffer bound by name (input_ids, labels)";
  let description = [{
    `tpc-run` fills the buffer from the input tensor `name` each step. For an
    integer input, `bound` (when non-zero) says that values lie in
    `[0, bound)` (labels may also be the ignore index); `tpc-run
    --synthetic-seed` draws inputs in that range.

    With `splits` (the program's mesh axes per dimension) the input tensor
    is global, of the buffer's shape times the split sizes: every rank reads
    all of it and keeps its block.

    With `microbatches M` (a program of functions and actions, below) the
    buffer holds one microbatch and is pooled by microbatch: M slots, slot
    `i` microbatch `i` of the global tensor (M microbatches along dimension
    0); a kernel run for microbatch `i` reads slot `i`.

    ```mlir
    %ids = rt.input "input_ids" bound 50257 offset 0 : memref<4x32xi64>
    %lbl = rt.input "labels" bound 50257 splits [[dp], []] : memref<2x32xi64>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       DefaultValuedAttr<I64Attr, "0">:$value_bound,
                       OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<Rt_SplitsAttr>:$splits,
                       OptionalAttr<I64Attr>:$microbatches);
  let results = (outs Rt_Buffer:$buffer);
  let assemblyFormat = [{
    $name (`bound` $value_bound^)? (`splits` $splits^)?
      (`microbatches` $microbatches^)? (`offset` $offset^)?
      attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Rt_AllocOp : Rt_Op<"alloc"> {
  let summary = "An intermediate buffer";
  let description = [{
    A region of the arena written by a kernel and read by later ones; the
    memory plan reuses its bytes once it is dead.

    With `pool` N the buffer is one microbatch's value in a program of
    actions (the program's `pools`, N-th entry): every slot of the pool
    holds its own copy, at `offset + slot * stride`, the slot given by the
    action that runs the kernel (its slot modulo the pool's slots): a stash
    that a chunk's F hands to its B, a received activation. `offset` is the
    copy of slot 0.

    ```mlir
    %x = rt.alloc offset 8192 : memref<4x32x64xf32>
    %s = rt.alloc pool 0 offset 16384 : memref<4x32x64xf32>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<I64Attr>:$pool);
  let results = (outs Rt_Buffer:$buffer);
  let assemblyFormat =
      "(`pool` $pool^)? (`offset` $offset^)? attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Rt_StateOp : Rt_Op<"state"> {
  let summary = "A persistent optimizer state buffer of one parameter";
  let description = [{
    State `name` (`exp_avg`, `exp_avg_sq`, `momentum`) of the parameter
    `param` (its Hugging Face name): an f32 buffer of the parameter's buffer
    shape (its view, or in a distributed program its block of the view, in
    the same layout), zero when the run starts, kept across steps, written only by the
    optimizer kernel that updates it in place, and saved in checkpoints as
    `<param>.<name>`. It lives for the whole program, like a parameter.

    ```mlir
    %m = rt.state "exp_avg" of "transformer.wte.weight" offset 8192
        : memref<256x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$param,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs Rt_Buffer:$buffer);
  let assemblyFormat = [{
    $name `of` $param (`offset` $offset^)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernels and outputs
//===----------------------------------------------------------------------===//

def Rt_KernelOp : Rt_Op<"kernel", [AttrSizedOperandSegments]> {
  let summary = "Calls one runtime kernel on buffers (destination passing)";
  let description = [{
    Runs kernel `opcode` reading the `operands` buffers and writing the
    `results` buffers. `ints`, `floats` and `flags` are the kernel's
    attributes exactly as the executable stores them. What each opcode takes
    and what its attributes mean is one row of the kernel table
    (`runtime/include/tpcrt/Kernels.def`), which this verifier, the lowering
    and the runtime's loader and decoder are built from; the reference is
    generated from it: docs/runtime/opcodes.md. Past the counts, attribute
    lengths, flags and in-place results of its row, the verifier runs the
    runtime's decoder itself (`tpcrt::decodeKernel`), so it accepts exactly
    the kernels the loader accepts, with the loader's messages.

    `dropout`, `attention`, `dropout_mask` and `attention_grad` take an
    optional second int, the first index: where this piece (a microbatch)
    starts in the op's full tensor, so that its dropout mask is the one the
    whole batch draws. `rotary` with flag 1 rotates backwards (its gradient).

    The collectives (`all_reduce` to `shard_pad`) run over a group of
    ranks: the `axes` ending their `ints` are indices into the program's
    mesh (at least one, none twice, major first), and the group is the
    ranks whose coordinates agree off those axes; a rank's position in it
    is the row-major combination of its coordinates on them, and `g` the
    group size. `all_reduce` sums (f32 or i64) or takes the maximum (f32)
    over the group, same type in and out; `all_gather` concatenates the
    group's inputs along `dim` in position order (the result's `dim` is `g`
    times the input's); `reduce_scatter` keeps block `position` along `dim`
    of the f32 sum; `shard_slice` keeps block `position` along `dim` of its
    own input, without communication; `all_to_all` cuts its input along the
    split dim into `g` blocks, sends block `j` to position `j` and
    concatenates what it receives along the concat dim; `shard_pad` writes
    zeros with its input as block `position` along `dim` (`g` times the
    input's), without communication: a partial sum over the group. The
    divided dimension must be divisible by `g`.

    In a distributed program `dropout`, `dropout_mask`, `attention` and
    `attention_grad` may carry `splits`: how the global tensor of their
    first result is split (the program's mesh axes per dimension). Each
    element then draws its dropout bit at its global index, and the first
    index counts global elements, so every layout draws the single-device
    mask.

    In a pipeline-parallel program (a mesh axis `pp`) `stage` is the
    pipeline stage (the rank's coordinate on `pp`) that runs the kernel: a
    rank runs exactly its stage's kernels, in program order, and the
    kernels of each stage are contiguous, stages in increasing order.
    `send` and `recv` move a buffer between stages: their `ints` are the
    peer's position in the group over the axes that follow (`pp`).

    The verifier checks the operand and result counts, the attribute lengths
    and flag bits, and the shapes and element types the kernel relies on. A
    kernel does not run in place (no result is also an operand), except the
    optimizer updates: the results of `adamw_update` are exactly its
    operands 0, 2 and 3, those of `sgd_update` its operands 0 and 2; and
    two that may: an `add` whose result is its lhs (a sum over the
    microbatches), and an `all_reduce` whose result is its operand (such a
    sum reduced where it is, `rt-issue-reductions-early`).

    ```mlir
    rt.kernel all_reduce(%p) -> (%r) ints [1]
        : memref<2x8xf32> -> memref<2x8xf32>
    rt.kernel linear(%x, %w, %b) -> (%y) flags 1
        : memref<4x32x64xf32>, memref<256x64xf32>, memref<256xf32>
          -> memref<4x32x256xf32>
    rt.kernel dropout(%y) -> (%z) ints [3] floats [1.000000e-01]
        : memref<4x32x256xf32> -> memref<4x32x256xf32>
    rt.kernel adamw_update(%w, %dw, %m, %v, %lr, %step) -> (%w, %m, %v)
        floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02]
        : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>,
          memref<f32>, memref<i64> -> memref<64xf32>, memref<64xf32>,
          memref<64xf32>
    ```
  }];
  let arguments = (ins Rt_OpCodeAttr:$opcode,
                       Variadic<Rt_Buffer>:$inputs,
                       Variadic<Rt_Buffer>:$outputs,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$ints,
                       DefaultValuedAttr<DenseF64ArrayAttr, "{}">:$floats,
                       DefaultValuedAttr<UI32Attr, "0">:$flags,
                       OptionalAttr<Rt_SplitsAttr>:$splits,
                       OptionalAttr<UI32Attr>:$stage);
  let assemblyFormat = [{
    `` $opcode `(` $inputs `)` `->` `(` $outputs `)` (`ints` $ints^)?
      (`floats` $floats^)? (`flags` $flags^)? (`splits` $splits^)? attr-dict
      `:` custom<OperandTypes>(type($inputs)) `->`
      custom<OperandTypes>(type($outputs))
  }];
  let hasVerifier = 1;
}

def Rt_GradOp : Rt_Op<"grad"> {
  let summary = "Binds a buffer as the gradient of a parameter";
  let description = [{
    After the last kernel, the buffer holds the gradient of the parameter
    `name` (its Hugging Face name) for the step, before clipping: f32, of
    the parameter's buffer shape and layout (in a distributed program its
    block; `tpc-run --dump-grads` gathers and writes the whole tensor). The
    buffer lives to the end of the program.

    ```mlir
    rt.grad "transformer.wte.weight" %dwte : memref<256x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Rt_Buffer:$buffer);
  let assemblyFormat = "$name $buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Rt_OutputOp : Rt_Op<"output"> {
  let summary = "Binds a buffer to a named output (loss, logits, grad_norm, lr)";
  let description = [{
    After the last kernel, `tpc-run` reads output `name` from the buffer.

    ```mlir
    rt.output "loss" %loss : memref<f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Rt_Buffer:$buffer);
  let assemblyFormat = "$name $buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

#endif // DIALECTS_RT_IR_RTOPS_TD
