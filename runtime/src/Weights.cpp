//===- Weights.cpp - filling an executable's params -----------------------===//
//
// Tensors are converted and copied into the arena in chunks, so loading a
// multi-gigabyte checkpoint needs no full-size host copy of any tensor. On a
// mesh a rank converts only the elements of its block.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Weights.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <sys/stat.h>

using namespace tpcrt;

namespace {

constexpr int64_t kChunkElements = 1 << 16;

/// The prefixes a base model's checkpoint lacks: GPT2Model saves
/// "h.0.attn.c_attn.weight" for GPT2LMHeadModel's "transformer.h.0...",
/// LlamaModel (and Qwen2Model, MistralModel) "layers.0.self_attn.q_proj.weight"
/// for LlamaForCausalLM's "model.layers.0...".
const char *const kPrefixes[] = {"transformer.", "model."};

/// The head a base model is saved without.
const char kLmHead[] = "lm_head.weight";

cpu::FloatType floatTypeOf(fb::DType dtype) {
  return dtype == fb::DType::BF16  ? cpu::FloatType::BF16
         : dtype == fb::DType::F16 ? cpu::FloatType::F16
                                   : cpu::FloatType::F32;
}

/// Writes a buffer's elements in order, in its dtype, through a staging
/// chunk: appended elements are copied to the arena a chunk at a time.
class BlockWriter {
public:
  BlockWriter(Interpreter &interpreter, const TensorRef &buffer)
      : interpreter(interpreter), buffer(buffer),
        elementSize(executableDTypeSize(buffer.dtype)) {
    staged.reserve(kChunkElements * elementSize);
  }

  /// Appends `count` elements already in the buffer's dtype.
  Status appendRaw(const void *data, int64_t count) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    return appendWith(count, [&](int64_t done, int64_t n, uint8_t *out) {
      std::memcpy(out, bytes + done * elementSize, n * elementSize);
      return Status::ok();
    });
  }

  /// Appends `count` fp32 values, converted to the buffer's dtype.
  Status appendFloats(const float *values, int64_t count) {
    return appendWith(count, [&](int64_t done, int64_t n, uint8_t *out) {
      return cpu::cast(values + done, cpu::FloatType::F32, n,
                       floatTypeOf(buffer.dtype), out);
    });
  }

  /// Appends `count` zeros (all-zero bits are 0.0 in every float dtype).
  Status appendZeros(int64_t count) {
    return appendWith(count, [&](int64_t, int64_t n, uint8_t *out) {
      std::memset(out, 0, n * elementSize);
      return Status::ok();
    });
  }

  /// Copies what is staged to the arena.
  Status flush() {
    if (staged.empty())
      return Status::ok();
    Status s = interpreter.device().copyToArena(buffer.offset + written,
                                                staged.data(), staged.size());
    written += staged.size();
    staged.clear();
    return s;
  }

private:
  /// fill(done, n, out) writes elements [done, done + n) of the `count`
  /// appended to `out`, at most a chunk at a time.
  template <typename FillFn> Status appendWith(int64_t count, FillFn fill) {
    for (int64_t done = 0; done < count;) {
      int64_t room =
          kChunkElements - static_cast<int64_t>(staged.size() / elementSize);
      int64_t n = std::min(room, count - done);
      size_t at = staged.size();
      staged.resize(at + n * elementSize);
      if (Status s = fill(done, n, staged.data() + at); !s)
        return s;
      done += n;
      if (staged.size() == kChunkElements * elementSize)
        if (Status s = flush(); !s)
          return s;
    }
    return Status::ok();
  }

  Interpreter &interpreter;
  const TensorRef &buffer;
  uint64_t elementSize;
  uint64_t written = 0;
  std::vector<uint8_t> staged;
};

/// The checkpoint's tensor for a param name: the name as is; else, for a
/// name with a known prefix, the name without it (a base model's file);
/// else the name with a prefix added.
const TensorView *findTensor(const ShardedSafetensors &weights,
                             const std::string &name) {
  if (const TensorView *t = weights.find(name))
    return t;
  for (const char *prefix : kPrefixes) {
    size_t length = std::strlen(prefix);
    if (name.compare(0, length, prefix) == 0)
      return weights.find(name.substr(length));
  }
  for (const char *prefix : kPrefixes)
    if (const TensorView *t = weights.find(prefix + name))
      return t;
  return nullptr;
}

bool sameStorage(DType source, fb::DType target) {
  return (source == DType::F32 && target == fb::DType::F32) ||
         (source == DType::BF16 && target == fb::DType::BF16) ||
         (source == DType::F16 && target == fb::DType::F16);
}

/// Draws `param` as initWeights does: element i of the whole tensor is a
/// function of the seed, the param's name and i only.
Status drawParam(uint64_t seed, const ParamRef &param, Interpreter &interpreter,
                 std::vector<float> &chunk) {
  if (!interpreter.program().ownsBuffer(param.buffer))
    return Status::ok();
  std::string what = "param '" + param.hfName + "'";
  TensorPlacement placement;
  if (Status s = paramPlacement(interpreter, param, placement); !s)
    return s.withContext(what);
  BlockWriter writer(interpreter, interpreter.program().buffers[param.buffer]);
  uint64_t key = namedStreamKey(seed, param.hfName);
  Status status = Status::ok();
  // Element i of the whole tensor is the same on every rank and layout.
  placement.forEachRun([&](int64_t, int64_t source, int64_t count) {
    if (!status)
      return;
    if (source < 0) {
      status = writer.appendZeros(count);
      return;
    }
    for (int64_t first = 0; first < count && status; first += kChunkElements) {
      int64_t n = std::min(kChunkElements, count - first);
      chunk.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        auto index = static_cast<uint64_t>(source + first + i);
        switch (param.init) {
        case fb::ParamInit::Normal:
          chunk[i] =
              static_cast<float>(param.initStd * standardNormal(key, index));
          break;
        case fb::ParamInit::Zeros:
          chunk[i] = 0.0f;
          break;
        case fb::ParamInit::Ones:
          chunk[i] = 1.0f;
          break;
        }
      }
      status = writer.appendFloats(chunk.data(), n);
    }
  });
  if (status)
    status = writer.flush();
  if (!status)
    return status.withContext(what);
  return Status::ok();
}

/// A param the file lacks: an error that says what to do.
Status missingTensor(const std::string &path, const std::string &name) {
  std::string message = path + ": missing tensor '" + name + "'";
  if (name == kLmHead)
    message += " (a base model without its LM head, as "
               "LlamaModel.save_pretrained writes): use the ...ForCausalLM "
               "checkpoint (LlamaForCausalLM, Qwen2ForCausalLM, "
               "MistralForCausalLM), or add --init-seed S to draw the "
               "tensors the file lacks";
  return Status::error(message);
}

Status loadParam(const std::string &path, const TensorView *tensor,
                 const ParamRef &param, Interpreter &interpreter) {
  std::string what = path + ": tensor '" + tensor->name + "'";
  if (tensor->name != param.hfName)
    what += " (param '" + param.hfName + "')";
  if (tensor->shape != param.hfShape)
    return Status::error(what + " has shape " + formatShape(tensor->shape) +
                         ", expected " + formatShape(param.hfShape));
  if (tensor->dtype != DType::F32 && tensor->dtype != DType::BF16 &&
      tensor->dtype != DType::F16 && tensor->dtype != DType::F64)
    return Status::error(what + " is " + dtypeName(tensor->dtype) +
                         ", expected F32, BF16, F16 or F64");
  // Checked on every rank, so that a bad file fails them alike; written only
  // where the rank's pipeline stage owns the param.
  if (!interpreter.program().ownsBuffer(param.buffer))
    return Status::ok();
  TensorPlacement placement;
  if (Status s = paramPlacement(interpreter, param, placement); !s)
    return s.withContext(what);
  if (Status s = scatterTensor(interpreter, placement, *tensor, param.buffer);
      !s)
    return s.withContext(what);
  return Status::ok();
}

} // namespace

Status TensorPlacement::create(const Mesh &mesh,
                               const std::vector<int64_t> &coords,
                               const std::vector<int64_t> &viewShape,
                               const std::vector<int64_t> &paddedShape,
                               const Splits &splits, TensorPlacement &out) {
  TensorPlacement placement;
  placement.viewShape = viewShape;
  placement.paddedShape = paddedShape.empty() ? viewShape : paddedShape;
  if (placement.paddedShape.size() != viewShape.size())
    return Status::error("padded shape " + formatShape(paddedShape) +
                         " and view shape " + formatShape(viewShape) +
                         " differ in rank");
  for (size_t d = 0; d < viewShape.size(); ++d)
    if (placement.paddedShape[d] < viewShape[d])
      return Status::error("padded shape " + formatShape(paddedShape) +
                           " is smaller than the view shape " +
                           formatShape(viewShape));
  if (Status s =
          blockOf(mesh, coords, placement.paddedShape, splits, placement.block);
      !s)
    return s;
  out = std::move(placement);
  return Status::ok();
}

int64_t TensorPlacement::blockElements() const {
  int64_t elements = 1;
  for (int64_t extent : block.shape)
    elements *= extent;
  return elements;
}

void tpcrt::extractPlaced(const TensorPlacement &placement, const void *whole,
                          void *local, std::size_t elementBytes) {
  placement.forEachRun([&](int64_t at, int64_t source, int64_t count) {
    char *out = static_cast<char *>(local) + at * elementBytes;
    if (source < 0)
      std::memset(out, 0, count * elementBytes);
    else
      std::memcpy(out, static_cast<const char *>(whole) + source * elementBytes,
                  count * elementBytes);
  });
}

void tpcrt::insertPlaced(const TensorPlacement &placement, const void *local,
                         void *whole, std::size_t elementBytes) {
  placement.forEachRun([&](int64_t at, int64_t source, int64_t count) {
    if (source >= 0)
      std::memcpy(static_cast<char *>(whole) + source * elementBytes,
                  static_cast<const char *>(local) + at * elementBytes,
                  count * elementBytes);
  });
}

Status tpcrt::paramPlacement(const Interpreter &interpreter,
                             const ParamRef &param, TensorPlacement &out) {
  return TensorPlacement::create(interpreter.mesh(), interpreter.coordinates(),
                                 param.viewShape, param.paddedShape,
                                 param.splits, out);
}

Status tpcrt::scatterTensor(Interpreter &interpreter,
                            const TensorPlacement &placement,
                            const TensorView &tensor, uint32_t buffer) {
  const TensorRef &ref = interpreter.program().buffers[buffer];
  if (placement.blockElements() != ref.elements)
    return Status::error("the block " + formatShape(placement.block.shape) +
                         " does not fill the buffer " + formatShape(ref.shape));
  BlockWriter writer(interpreter, ref);
  bool raw = sameStorage(tensor.dtype, ref.dtype);
  uint64_t sourceSize = dtypeSize(tensor.dtype);
  std::vector<float> chunk;
  Status status = Status::ok();
  placement.forEachRun([&](int64_t, int64_t source, int64_t count) {
    if (!status)
      return;
    if (source < 0) {
      status = writer.appendZeros(count);
      return;
    }
    const uint8_t *data =
        tensor.data + static_cast<uint64_t>(source) * sourceSize;
    if (raw) {
      status = writer.appendRaw(data, count);
      return;
    }
    for (int64_t first = 0; first < count && status; first += kChunkElements) {
      TensorView piece = tensor;
      piece.numElements = std::min(kChunkElements, count - first);
      piece.data = data + static_cast<uint64_t>(first) * sourceSize;
      piece.numBytes = static_cast<uint64_t>(piece.numElements) * sourceSize;
      status = toFloat32(piece, chunk);
      if (status)
        status = writer.appendFloats(chunk.data(), piece.numElements);
    }
  });
  if (!status)
    return status;
  return writer.flush();
}

Status tpcrt::loadWeights(const std::string &path, Interpreter &interpreter) {
  return loadWeights(path, interpreter, LoadWeightsOptions());
}

Status tpcrt::loadWeights(const std::string &path, Interpreter &interpreter,
                          const LoadWeightsOptions &options,
                          std::vector<std::string> *drawn) {
  if (drawn)
    drawn->clear();
  ShardedSafetensors weights;
  if (Status s = ShardedSafetensors::open(path, weights); !s)
    return s;
  std::vector<float> chunk;
  for (const ParamRef &param : interpreter.program().params) {
    if (const TensorView *tensor = findTensor(weights, param.hfName)) {
      if (Status s = loadParam(path, tensor, param, interpreter); !s)
        return s;
      continue;
    }
    if (!options.initSeed)
      return missingTensor(path, param.hfName);
    if (Status s = drawParam(*options.initSeed, param, interpreter, chunk); !s)
      return s;
    if (drawn)
      drawn->push_back(param.hfName);
  }
  return Status::ok();
}

Status tpcrt::initWeights(uint64_t seed, Interpreter &interpreter) {
  std::vector<float> chunk;
  for (const ParamRef &param : interpreter.program().params)
    if (Status s = drawParam(seed, param, interpreter, chunk); !s)
      return s;
  return Status::ok();
}

Status tpcrt::resolveWeightsPath(const std::string &path, std::string &out) {
  if (!isDirectory(path)) {
    out = path; // A file, or an error opening it says what is wrong.
    return Status::ok();
  }
  // An index names every shard; a directory that has both is sharded (the
  // single file may be a leftover of another save).
  struct stat info;
  for (const char *name :
       {"model.safetensors.index.json", "model.safetensors"}) {
    std::string candidate = joinPath(path, name);
    if (::stat(candidate.c_str(), &info) == 0) {
      out = candidate;
      return Status::ok();
    }
  }
  return Status::error(path + ": no model.safetensors or "
                              "model.safetensors.index.json in it");
}
