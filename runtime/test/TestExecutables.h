//===- TestExecutables.h - small executables built in tests -----*- C++ -*-===//
//
// Executables built through the FlatBuffers object API, for the loader,
// interpreter, weights and tpc-run tests: the pieces (buffers, kernels,
// bindings), a builder that lays buffers out one after the other, and a tiny
// GPT-2-like model.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_TESTEXECUTABLES_H
#define TPCRT_TEST_TESTEXECUTABLES_H

#include "tpcrt/Executable.h"

#include <memory>
#include <string>
#include <vector>

namespace tpcrt {
namespace test {

inline std::unique_ptr<fb::BufferT> makeBuffer(uint64_t offset, fb::DType dtype,
                                               std::vector<int64_t> shape) {
  auto buffer = std::make_unique<fb::BufferT>();
  uint64_t elements = 1;
  for (int64_t d : shape)
    elements *= static_cast<uint64_t>(d);
  buffer->offset = offset;
  buffer->size = elements * executableDTypeSize(dtype);
  buffer->dtype = dtype;
  buffer->shape = std::move(shape);
  return buffer;
}

inline std::unique_ptr<fb::KernelT> makeKernel(fb::OpCode op,
                                               std::vector<uint32_t> operands,
                                               std::vector<uint32_t> results) {
  auto kernel = std::make_unique<fb::KernelT>();
  kernel->op = op;
  kernel->operands = std::move(operands);
  kernel->results = std::move(results);
  return kernel;
}

inline std::unique_ptr<fb::BindingT>
makeBinding(const std::string &name, uint32_t buffer, int64_t bound = 0) {
  auto binding = std::make_unique<fb::BindingT>();
  binding->name = name;
  binding->buffer = buffer;
  binding->value_bound = bound;
  return binding;
}

/// The FlatBuffer payload of `exe`.
inline std::vector<uint8_t> pack(const fb::ExecutableT &exe) {
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Executable::Pack(builder, &exe),
                 fb::ExecutableIdentifier());
  return std::vector<uint8_t>(builder.GetBufferPointer(),
                              builder.GetBufferPointer() + builder.GetSize());
}

/// The .tpcx file image of `exe`.
inline std::vector<uint8_t> fileImage(const fb::ExecutableT &exe) {
  std::vector<uint8_t> payload = pack(exe);
  return serializeExecutable(payload.data(), payload.size());
}

/// Lays every buffer out after the previous one, 64-byte aligned, so no two
/// buffers share bytes; the planned peak is then the whole arena.
class ExecutableBuilder {
public:
  ExecutableBuilder() { exe.schema_version = kExecutableSchemaVersion; }

  uint32_t buffer(fb::DType dtype, std::vector<int64_t> shape) {
    exe.buffers.push_back(makeBuffer(end, dtype, std::move(shape)));
    end += (exe.buffers.back()->size + 63) / 64 * 64;
    return static_cast<uint32_t>(exe.buffers.size() - 1);
  }

  /// A param whose Hugging Face shape is its view unless `hfShape` says.
  uint32_t param(const std::string &name, fb::DType dtype,
                 std::vector<int64_t> shape,
                 fb::ParamInit init = fb::ParamInit::Normal,
                 std::vector<int64_t> hfShape = {}) {
    auto p = std::make_unique<fb::ParamT>();
    p->hf_name = name;
    p->view_shape = shape;
    p->hf_shape = hfShape.empty() ? shape : hfShape;
    p->buffer = buffer(dtype, std::move(shape));
    p->init = init;
    p->init_std = 0.02;
    exe.params.push_back(std::move(p));
    return exe.params.back()->buffer;
  }

  uint32_t input(const std::string &name, std::vector<int64_t> shape,
                 int64_t bound) {
    uint32_t id = buffer(fb::DType::I64, std::move(shape));
    exe.inputs.push_back(makeBinding(name, id, bound));
    return id;
  }

  void output(const std::string &name, uint32_t id) {
    exe.outputs.push_back(makeBinding(name, id));
  }

  /// Optimizer state `name` of param `paramIndex` (f32, its view shape).
  uint32_t state(const std::string &name, uint32_t paramIndex) {
    uint32_t id = buffer(fb::DType::F32, exe.params[paramIndex]->view_shape);
    auto st = std::make_unique<fb::StateT>();
    st->name = name;
    st->param = paramIndex;
    st->buffer = id;
    exe.state.push_back(std::move(st));
    return id;
  }

  /// The gradient of the param called `name`.
  void grad(const std::string &name, uint32_t id) {
    exe.grads.push_back(makeBinding(name, id));
  }

  void kernel(fb::OpCode op, std::vector<uint32_t> operands,
              std::vector<uint32_t> results, std::vector<int64_t> ints = {},
              std::vector<double> floats = {}, uint32_t flags = 0) {
    exe.kernels.push_back(
        makeKernel(op, std::move(operands), std::move(results)));
    exe.kernels.back()->int_attrs = std::move(ints);
    exe.kernels.back()->float_attrs = std::move(floats);
    exe.kernels.back()->flags = flags;
  }

  fb::ExecutableT finish() {
    exe.arena_bytes = end;
    exe.planned_peak_bytes = end;
    return std::move(exe);
  }

  fb::ExecutableT exe;

private:
  uint64_t end = 0;
};

/// Sizes of the tiny model.
struct TinySizes {
  int64_t batch = 2, seq = 4, hidden = 8, vocab = 16, positions = 8;
};

/// A GPT-2-like block without attention, in the executable contract's terms:
/// token + position embedding, dropout, layer norm, an MLP (in_out weights
/// with biases, tanh gelu) with a residual, a head tied to the token
/// embedding (out_in), cross-entropy and its mean. Outputs loss and logits.
/// `dtype` is the storage of the params and activations (the loss is f32).
inline fb::ExecutableT tinyModel(fb::DType dtype = fb::DType::F32,
                                 double dropout = 0.1, TinySizes z = {}) {
  ExecutableBuilder b;
  using Op = fb::OpCode;
  int64_t B = z.batch, S = z.seq, H = z.hidden, V = z.vocab;
  uint32_t wte = b.param("transformer.wte.weight", dtype, {V, H});
  uint32_t wpe = b.param("transformer.wpe.weight", dtype, {z.positions, H});
  uint32_t lnW =
      b.param("transformer.ln_f.weight", dtype, {H}, fb::ParamInit::Ones);
  uint32_t lnB =
      b.param("transformer.ln_f.bias", dtype, {H}, fb::ParamInit::Zeros);
  uint32_t fcW = b.param("transformer.h.0.mlp.c_fc.weight", dtype, {H, 4 * H});
  uint32_t fcB = b.param("transformer.h.0.mlp.c_fc.bias", dtype, {4 * H},
                         fb::ParamInit::Zeros);
  uint32_t projW =
      b.param("transformer.h.0.mlp.c_proj.weight", dtype, {4 * H, H});
  uint32_t projB = b.param("transformer.h.0.mlp.c_proj.bias", dtype, {H},
                           fb::ParamInit::Zeros);
  uint32_t ids = b.input("input_ids", {B, S}, V);
  uint32_t labels = b.input("labels", {B, S}, V);

  uint32_t tok = b.buffer(dtype, {B, S, H});
  b.kernel(Op::Embedding, {wte, ids}, {tok});
  uint32_t pos = b.buffer(dtype, {S, H});
  b.kernel(Op::Slice, {wpe}, {pos}, {0, 0, S});
  uint32_t x = b.buffer(dtype, {B, S, H});
  b.kernel(Op::Add, {tok, pos}, {x});
  uint32_t xd = b.buffer(dtype, {B, S, H});
  b.kernel(Op::Dropout, {x}, {xd}, {1}, {dropout});
  uint32_t ln = b.buffer(dtype, {B, S, H});
  b.kernel(Op::LayerNorm, {xd, lnW, lnB}, {ln}, {}, {1e-5});
  uint32_t fc = b.buffer(dtype, {B, S, 4 * H});
  b.kernel(Op::Linear, {ln, fcW, fcB}, {fc});
  uint32_t act = b.buffer(dtype, {B, S, 4 * H});
  b.kernel(Op::Gelu, {fc}, {act}, {}, {}, 1);
  uint32_t proj = b.buffer(dtype, {B, S, H});
  b.kernel(Op::Linear, {act, projW, projB}, {proj});
  uint32_t res = b.buffer(dtype, {B, S, H});
  b.kernel(Op::Add, {xd, proj}, {res});
  uint32_t logits = b.buffer(dtype, {B, S, V});
  b.kernel(Op::Linear, {res, wte}, {logits}, {}, {}, 1);
  uint32_t sum = b.buffer(fb::DType::F32, {});
  uint32_t count = b.buffer(fb::DType::I64, {});
  b.kernel(Op::CrossEntropy, {logits, labels}, {sum, count}, {-100});
  uint32_t loss = b.buffer(fb::DType::F32, {});
  b.kernel(Op::LossMean, {sum, count}, {loss});
  b.output("loss", loss);
  b.output("logits", logits);
  fb::ExecutableT exe = b.finish();
  exe.seed = 1234;
  return exe;
}

/// How tinyTrainingModel trains.
struct TrainingOptions {
  /// AdamWUpdate or SgdUpdate.
  fb::OpCode optimizer = fb::OpCode::AdamWUpdate;
  /// The batch is split into this many microbatches (dividing batch).
  int64_t microbatches = 1;
  double dropout = 0.0;
  /// Global-norm clipping; 0 = none.
  double maxNorm = 0.0;
  /// Warm-up (2 steps) then cosine to 1e-3 at step 6; else constant.
  bool cosine = false;
  double lr = 1e-2;
  int64_t batch = 4, seq = 4, hidden = 8, vocab = 16;
};

/// One training step of a small GPT-2-like model, written the way the
/// compiler lowers training (docs/design/training.md): per microbatch a
/// forward (embedding, dropout as mask + apply_mask, layer norm, an MLP whose
/// first weight has two output dims, a residual, a head tied to the
/// embedding, cross-entropy sum) and its backward, gradients accumulated in
/// place over microbatches and scaled by 1 / (targets of the whole batch);
/// then the learning rate, the global gradient norm, clipping and the
/// optimizer's in-place update of every param. Inputs input_ids, labels and
/// step; outputs loss, grad_norm and lr; a grad binding per param. Biases
/// and norm weights get no weight decay (--decay-exclude bias,norm).
inline fb::ExecutableT tinyTrainingModel(const TrainingOptions &o = {}) {
  ExecutableBuilder b;
  using Op = fb::OpCode;
  const fb::DType F32 = fb::DType::F32;
  int64_t B = o.batch, S = o.seq, H = o.hidden, V = o.vocab, F = 4 * H;
  int64_t mb = B / o.microbatches;
  struct P {
    uint32_t index, buffer;
    bool decay;
  };
  auto param = [&](const std::string &name, std::vector<int64_t> view,
                   fb::ParamInit init, std::vector<int64_t> hf, bool decay) {
    uint32_t buffer = b.param(name, F32, std::move(view), init, std::move(hf));
    return P{static_cast<uint32_t>(b.exe.params.size() - 1), buffer, decay};
  };
  P wte =
      param("transformer.wte.weight", {V, H}, fb::ParamInit::Normal, {}, true);
  P lnW = param("transformer.ln_f.weight", {H}, fb::ParamInit::Ones, {}, false);
  P lnB = param("transformer.ln_f.bias", {H}, fb::ParamInit::Zeros, {}, false);
  P fcW = param("transformer.h.0.mlp.c_fc.weight", {H, 4, H},
                fb::ParamInit::Normal, {H, F}, true);
  P fcB = param("transformer.h.0.mlp.c_fc.bias", {4, H}, fb::ParamInit::Zeros,
                {F}, false);
  P downW = param("transformer.h.0.mlp.down.weight", {H, F},
                  fb::ParamInit::Normal, {}, true);
  P downB = param("transformer.h.0.mlp.down.bias", {H}, fb::ParamInit::Zeros,
                  {}, false);
  std::vector<P> params = {wte, lnW, lnB, fcW, fcB, downW, downB};

  uint32_t ids = b.input("input_ids", {B, S}, V);
  uint32_t labels = b.input("labels", {B, S}, V);
  uint32_t step = b.input("step", {}, 0);

  uint32_t total = b.buffer(fb::DType::I64, {});
  b.kernel(Op::CountTargets, {labels}, {total}, {-100});
  uint32_t dsum = b.buffer(F32, {});
  b.kernel(Op::InverseCount, {total}, {dsum});

  std::vector<uint32_t> grads(params.size());
  uint32_t lossSum = 0;
  for (int64_t j = 0; j < o.microbatches; ++j) {
    uint32_t idsJ = ids, labelsJ = labels;
    if (o.microbatches > 1) {
      idsJ = b.buffer(fb::DType::I64, {mb, S});
      b.kernel(Op::Slice, {ids}, {idsJ}, {0, j * mb, mb});
      labelsJ = b.buffer(fb::DType::I64, {mb, S});
      b.kernel(Op::Slice, {labels}, {labelsJ}, {0, j * mb, mb});
    }
    // Forward.
    uint32_t tok = b.buffer(F32, {mb, S, H});
    b.kernel(Op::Embedding, {wte.buffer, idsJ}, {tok});
    uint32_t x = tok, mask = 0;
    if (o.dropout > 0) {
      mask = b.buffer(fb::DType::U8, {mb, S, H});
      b.kernel(Op::DropoutMask, {}, {mask}, {1, j * mb * S * H}, {o.dropout});
      x = b.buffer(F32, {mb, S, H});
      b.kernel(Op::ApplyMask, {tok, mask}, {x}, {}, {o.dropout});
    }
    uint32_t ln = b.buffer(F32, {mb, S, H});
    b.kernel(Op::LayerNorm, {x, lnW.buffer, lnB.buffer}, {ln}, {}, {1e-5});
    uint32_t fc = b.buffer(F32, {mb, S, 4, H});
    b.kernel(Op::Linear, {ln, fcW.buffer, fcB.buffer}, {fc});
    uint32_t fcFlat = b.buffer(F32, {mb, S, F});
    b.kernel(Op::Copy, {fc}, {fcFlat});
    uint32_t act = b.buffer(F32, {mb, S, F});
    b.kernel(Op::Gelu, {fcFlat}, {act}, {}, {}, 1);
    uint32_t proj = b.buffer(F32, {mb, S, H});
    b.kernel(Op::Linear, {act, downW.buffer, downB.buffer}, {proj}, {}, {}, 1);
    uint32_t res = b.buffer(F32, {mb, S, H});
    b.kernel(Op::Add, {x, proj}, {res});
    uint32_t logits = b.buffer(F32, {mb, S, V});
    b.kernel(Op::Linear, {res, wte.buffer}, {logits}, {}, {}, 1);
    uint32_t sum = b.buffer(F32, {});
    uint32_t count = b.buffer(fb::DType::I64, {});
    b.kernel(Op::CrossEntropy, {logits, labelsJ}, {sum, count}, {-100});
    if (j == 0) {
      lossSum = sum;
    } else {
      b.kernel(Op::Add, {lossSum, sum}, {lossSum});
    }

    // Backward: input gradients, then weight gradients.
    uint32_t dLogits = b.buffer(F32, {mb, S, V});
    b.kernel(Op::CrossEntropyGrad, {logits, labelsJ, dsum}, {dLogits}, {-100});
    uint32_t dRes = b.buffer(F32, {mb, S, H});
    b.kernel(Op::LinearInputGrad, {dLogits, wte.buffer}, {dRes}, {}, {}, 1);
    uint32_t dAct = b.buffer(F32, {mb, S, F});
    b.kernel(Op::LinearInputGrad, {dRes, downW.buffer}, {dAct}, {}, {}, 1);
    uint32_t dFcFlat = b.buffer(F32, {mb, S, F});
    b.kernel(Op::GeluGrad, {dAct, fcFlat}, {dFcFlat}, {}, {}, 1);
    uint32_t dFc = b.buffer(F32, {mb, S, 4, H});
    b.kernel(Op::Copy, {dFcFlat}, {dFc});
    uint32_t dLn = b.buffer(F32, {mb, S, H});
    b.kernel(Op::LinearInputGrad, {dFc, fcW.buffer}, {dLn});
    uint32_t dXLn = b.buffer(F32, {mb, S, H});
    b.kernel(Op::LayerNormInputGrad, {dLn, x, lnW.buffer}, {dXLn}, {}, {1e-5});
    uint32_t dX = b.buffer(F32, {mb, S, H});
    b.kernel(Op::Add, {dRes, dXLn}, {dX});
    uint32_t dTok = dX;
    if (o.dropout > 0) {
      dTok = b.buffer(F32, {mb, S, H});
      b.kernel(Op::ApplyMask, {dX, mask}, {dTok}, {}, {o.dropout});
    }

    std::vector<uint32_t> g(params.size());
    auto gradOf = [&](const P &p) {
      return b.buffer(F32, b.exe.params[p.index]->view_shape);
    };
    for (size_t i = 0; i < params.size(); ++i)
      g[i] = gradOf(params[i]);
    uint32_t headGrad = b.buffer(F32, {V, H});
    b.kernel(Op::LinearWeightGrad, {res, dLogits}, {headGrad}, {}, {}, 1);
    uint32_t embGrad = b.buffer(F32, {V, H});
    b.kernel(Op::EmbeddingGrad, {dTok, idsJ}, {embGrad});
    b.kernel(Op::Add, {headGrad, embGrad}, {g[0]});
    b.kernel(Op::LayerNormParamGrad, {dLn, x}, {g[1], g[2]}, {}, {1e-5});
    b.kernel(Op::LinearWeightGrad, {ln, dFc}, {g[3]});
    b.kernel(Op::SumTo, {dFc}, {g[4]});
    b.kernel(Op::LinearWeightGrad, {act, dRes}, {g[5]}, {}, {}, 1);
    b.kernel(Op::SumTo, {dRes}, {g[6]});
    for (size_t i = 0; i < params.size(); ++i) {
      if (j == 0)
        grads[i] = g[i];
      else
        b.kernel(Op::Add, {grads[i], g[i]}, {grads[i]});
    }
  }
  uint32_t loss = b.buffer(F32, {});
  b.kernel(Op::LossMean, {lossSum, total}, {loss});

  // Optimizer.
  uint32_t lr = b.buffer(F32, {});
  b.kernel(Op::LrSchedule, {step}, {lr}, {o.cosine ? 2 : 0, o.cosine ? 6 : 0},
           {o.lr, o.cosine ? 1e-3 : 0.0}, o.cosine ? 1 : 0);
  uint32_t sumSq = b.buffer(F32, {});
  b.kernel(Op::SumSquares, grads, {sumSq});
  uint32_t norm = b.buffer(F32, {}), coefficient = b.buffer(F32, {});
  b.kernel(Op::ClipCoefficient, {sumSq}, {norm, coefficient}, {}, {o.maxNorm});
  bool adamw = o.optimizer == Op::AdamWUpdate;
  for (size_t i = 0; i < params.size(); ++i) {
    const P &p = params[i];
    if (adamw) {
      uint32_t m = b.state("exp_avg", p.index);
      uint32_t v = b.state("exp_avg_sq", p.index);
      b.kernel(Op::AdamWUpdate,
               {p.buffer, grads[i], m, v, lr, step, coefficient},
               {p.buffer, m, v}, {}, {0.9, 0.95, 1e-8, p.decay ? 0.1 : 0.0});
    } else {
      uint32_t m = b.state("momentum", p.index);
      b.kernel(Op::SgdUpdate, {p.buffer, grads[i], m, lr, coefficient},
               {p.buffer, m}, {}, {0.9, p.decay ? 0.01 : 0.0});
    }
    b.grad(b.exe.params[p.index]->hf_name, grads[i]);
  }
  b.output("loss", loss);
  b.output("grad_norm", norm);
  b.output("lr", lr);
  fb::ExecutableT exe = b.finish();
  exe.seed = 77;
  return exe;
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_TESTEXECUTABLES_H
