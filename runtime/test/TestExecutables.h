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

inline std::unique_ptr<fb::BufferT>
makeBuffer(uint64_t offset, fb::DType dtype, std::vector<int64_t> shape) {
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

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_TESTEXECUTABLES_H
