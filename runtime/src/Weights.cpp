//===- Weights.cpp - filling an executable's params -----------------------===//
//
// Tensors are converted and copied into the arena in chunks, so loading a
// multi-gigabyte checkpoint needs no full-size host copy of any tensor.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Weights.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <vector>

using namespace tpcrt;

namespace {

constexpr int64_t kChunkElements = 1 << 16;
const std::string kPrefix = "transformer.";

cpu::FloatType floatTypeOf(fb::DType dtype) {
  return dtype == fb::DType::BF16  ? cpu::FloatType::BF16
         : dtype == fb::DType::F16 ? cpu::FloatType::F16
                                   : cpu::FloatType::F32;
}

/// Writes `count` fp32 values as elements [first, first + count) of a param
/// buffer, converted to its dtype.
class BufferWriter {
public:
  BufferWriter(Interpreter &interpreter, const TensorRef &buffer)
      : interpreter(interpreter), buffer(buffer),
        elementSize(executableDTypeSize(buffer.dtype)) {}

  Status write(int64_t first, const float *values, int64_t count) {
    bytes.resize(static_cast<size_t>(count) * elementSize);
    if (Status s = cpu::cast(values, cpu::FloatType::F32, count,
                             floatTypeOf(buffer.dtype), bytes.data());
        !s)
      return s;
    return interpreter.device().copyToArena(
        buffer.offset + static_cast<uint64_t>(first) * elementSize,
        bytes.data(), bytes.size());
  }

private:
  Interpreter &interpreter;
  const TensorRef &buffer;
  uint64_t elementSize;
  std::vector<uint8_t> bytes;
};

/// The checkpoint's tensor for a param name, trying the name as is, then
/// without or with the "transformer." prefix.
const TensorView *findTensor(const ShardedSafetensors &weights,
                             const std::string &name) {
  if (const TensorView *t = weights.find(name))
    return t;
  if (name.compare(0, kPrefix.size(), kPrefix) == 0)
    return weights.find(name.substr(kPrefix.size()));
  return weights.find(kPrefix + name);
}

bool sameStorage(DType source, fb::DType target) {
  return (source == DType::F32 && target == fb::DType::F32) ||
         (source == DType::BF16 && target == fb::DType::BF16) ||
         (source == DType::F16 && target == fb::DType::F16);
}

Status loadParam(const std::string &path, const ShardedSafetensors &weights,
                 const ParamRef &param, Interpreter &interpreter) {
  const TensorView *tensor = findTensor(weights, param.hfName);
  if (!tensor)
    return Status::error(path + ": missing tensor '" + param.hfName + "'");
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
  const TensorRef &buffer = interpreter.program().buffers[param.buffer];
  if (sameStorage(tensor->dtype, buffer.dtype))
    return interpreter.device().copyToArena(buffer.offset, tensor->data,
                                            tensor->numBytes);
  BufferWriter writer(interpreter, buffer);
  std::vector<float> chunk;
  uint64_t sourceSize = dtypeSize(tensor->dtype);
  for (int64_t first = 0; first < tensor->numElements;
       first += kChunkElements) {
    TensorView piece = *tensor;
    piece.numElements = std::min(kChunkElements, tensor->numElements - first);
    piece.data = tensor->data + static_cast<uint64_t>(first) * sourceSize;
    piece.numBytes = static_cast<uint64_t>(piece.numElements) * sourceSize;
    if (Status s = toFloat32(piece, chunk); !s)
      return s.withContext(path);
    if (Status s = writer.write(first, chunk.data(), piece.numElements); !s)
      return s.withContext(what);
  }
  return Status::ok();
}

} // namespace

Status tpcrt::loadWeights(const std::string &path, Interpreter &interpreter) {
  ShardedSafetensors weights;
  if (Status s = ShardedSafetensors::open(path, weights); !s)
    return s;
  for (const ParamRef &param : interpreter.program().params)
    if (Status s = loadParam(path, weights, param, interpreter); !s)
      return s;
  return Status::ok();
}

Status tpcrt::initWeights(uint64_t seed, Interpreter &interpreter) {
  std::vector<float> chunk;
  for (const ParamRef &param : interpreter.program().params) {
    const TensorRef &buffer = interpreter.program().buffers[param.buffer];
    BufferWriter writer(interpreter, buffer);
    uint64_t key = namedStreamKey(seed, param.hfName);
    for (int64_t first = 0; first < buffer.elements; first += kChunkElements) {
      int64_t count = std::min(kChunkElements, buffer.elements - first);
      chunk.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        switch (param.init) {
        case fb::ParamInit::Normal:
          chunk[i] = static_cast<float>(
              param.initStd *
              standardNormal(key, static_cast<uint64_t>(first + i)));
          break;
        case fb::ParamInit::Zeros:
          chunk[i] = 0.0f;
          break;
        case fb::ParamInit::Ones:
          chunk[i] = 1.0f;
          break;
        }
      }
      if (Status s = writer.write(first, chunk.data(), count); !s)
        return s.withContext("param '" + param.hfName + "'");
    }
  }
  return Status::ok();
}
