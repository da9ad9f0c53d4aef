//===- Checkpoint.cpp - training checkpoints and gradient dumps -----------===//

#include "tpcrt/Checkpoint.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/Weights.h"

#include <cstring>
#include <list>
#include <map>
#include <vector>

using namespace tpcrt;

namespace {

/// The safetensors dtype of a float buffer.
DType floatDTypeOf(fb::DType dtype) {
  return dtype == fb::DType::BF16  ? DType::BF16
         : dtype == fb::DType::F16 ? DType::F16
                                   : DType::F32;
}

/// Tensors to write and the bytes behind them (kept alive until written).
class TensorSet {
public:
  /// Reads `buffer` from the arena as tensor `name` of `shape`.
  Status addBuffer(Interpreter &interpreter, const std::string &name,
                   uint32_t buffer, const std::vector<int64_t> &shape) {
    const TensorRef &t = interpreter.program().buffers[buffer];
    std::vector<uint8_t> &bytes = storage_.emplace_back(t.bytes);
    if (Status s = interpreter.readBuffer(buffer, bytes.data(), bytes.size());
        !s)
      return s.withContext("tensor '" + name + "'");
    tensors_[name] = {floatDTypeOf(t.dtype), shape, bytes.data(), bytes.size()};
    return Status::ok();
  }

  void addScalar(const std::string &name, DType dtype, uint64_t bits) {
    std::vector<uint8_t> &bytes = storage_.emplace_back(sizeof(bits));
    std::memcpy(bytes.data(), &bits, sizeof(bits));
    tensors_[name] = {dtype, {}, bytes.data(), bytes.size()};
  }

  Status write(const std::string &path,
               const std::map<std::string, std::string> &metadata) const {
    return writeSafetensors(path, tensors_, metadata);
  }

private:
  std::list<std::vector<uint8_t>> storage_;
  std::map<std::string, TensorToWrite> tensors_;
};

std::string stateName(const Program &program, const StateRef &state) {
  return program.params[state.param].hfName + "." + state.name;
}

/// A scalar counter of the checkpoint: I64 >= 0 or U64.
Status readCounter(const SafetensorsFile &file, const std::string &name,
                   DType dtype, uint64_t &value) {
  TensorView view;
  if (Status s = file.get(name, view); !s)
    return s;
  if (view.dtype != dtype || !view.shape.empty())
    return Status::error(file.path() + ": tensor '" + name + "' is " +
                         dtypeName(view.dtype) + " " + formatShape(view.shape) +
                         ", expected a " + dtypeName(dtype) + " scalar");
  int64_t signedValue;
  std::memcpy(&value, view.data, sizeof(value));
  std::memcpy(&signedValue, view.data, sizeof(signedValue));
  if (dtype == DType::I64 && signedValue < 0)
    return Status::error(file.path() + ": tensor '" + name + "' is " +
                         std::to_string(signedValue) + ", expected >= 0");
  return Status::ok();
}

} // namespace

Status tpcrt::saveCheckpoint(const std::string &path, Interpreter &interpreter,
                             const RunCounters &counters) {
  const Program &program = interpreter.program();
  TensorSet set;
  for (const ParamRef &param : program.params)
    if (Status s = set.addBuffer(interpreter, param.hfName, param.buffer,
                                 param.hfShape);
        !s)
      return s;
  for (const StateRef &state : program.state)
    if (Status s =
            set.addBuffer(interpreter, stateName(program, state), state.buffer,
                          program.params[state.param].hfShape);
        !s)
      return s;
  set.addScalar("step", DType::I64, interpreter.step());
  set.addScalar("random.seed", DType::U64, program.seed);
  set.addScalar("data.seed", DType::U64, counters.dataSeed);
  set.addScalar("data.position", DType::I64, counters.dataPosition);
  set.addScalar("eval.position", DType::I64, counters.evalPosition);
  return set.write(path, {{"format", "tpc-checkpoint"}, {"version", "1"}});
}

Status tpcrt::loadCheckpoint(const std::string &path, Interpreter &interpreter,
                             RunCounters &counters) {
  if (Status s = loadWeights(path, interpreter); !s)
    return s;
  SafetensorsFile file;
  if (Status s = SafetensorsFile::open(path, file); !s)
    return s;
  const Program &program = interpreter.program();
  for (const StateRef &state : program.state) {
    std::string name = stateName(program, state);
    const TensorView *found = file.find(name);
    if (!found)
      return Status::error(path + ": no optimizer state '" + name +
                           "' (a checkpoint of another optimizer or "
                           "executable?)");
    const TensorView &view = *found;
    const std::vector<int64_t> &shape = program.params[state.param].hfShape;
    if (view.dtype != DType::F32 || view.shape != shape)
      return Status::error(
          path + ": tensor '" + name + "' is " + dtypeName(view.dtype) + " " +
          formatShape(view.shape) + ", expected F32 " + formatShape(shape));
    if (Status s =
            interpreter.writeBuffer(state.buffer, view.data, view.numBytes);
        !s)
      return s.withContext(path + ": tensor '" + name + "'");
  }
  uint64_t step, seed;
  RunCounters loaded;
  if (Status s = readCounter(file, "step", DType::I64, step); !s)
    return s;
  if (Status s = readCounter(file, "random.seed", DType::U64, seed); !s)
    return s;
  if (seed != program.seed)
    return Status::error(path + ": the checkpoint's dropout seed " +
                         std::to_string(seed) + " is not the executable's " +
                         std::to_string(program.seed) +
                         " (tpc-compile --seed): resuming would not continue "
                         "the same run");
  if (Status s = readCounter(file, "data.seed", DType::U64, loaded.dataSeed);
      !s)
    return s;
  if (Status s =
          readCounter(file, "data.position", DType::I64, loaded.dataPosition);
      !s)
    return s;
  if (Status s =
          readCounter(file, "eval.position", DType::I64, loaded.evalPosition);
      !s)
    return s;
  interpreter.setStep(step);
  counters = loaded;
  return Status::ok();
}

Status tpcrt::writeGrads(const std::string &path, Interpreter &interpreter) {
  const Program &program = interpreter.program();
  if (program.grads.empty())
    return Status::error("--dump-grads: the executable computes no gradients "
                         "(tpc-compile --train makes one that does)");
  std::map<std::string, const ParamRef *> params;
  for (const ParamRef &param : program.params)
    params[param.hfName] = &param;
  TensorSet set;
  for (const BindingRef &grad : program.grads)
    if (Status s = set.addBuffer(interpreter, grad.name, grad.buffer,
                                 params.at(grad.name)->hfShape);
        !s)
      return s;
  return set.write(path, {{"format", "tpc-gradients"}});
}
