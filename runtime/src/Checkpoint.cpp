//===- Checkpoint.cpp - training checkpoints and gradient dumps -----------===//

#include "tpcrt/Checkpoint.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/Weights.h"

#include <algorithm>
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

constexpr std::size_t kMessageBytes = std::size_t(1) << 30;
constexpr int kGatherTag = 7301;
constexpr int kOutputTag = 7302;

/// Point-to-point transfers of any size, as messages of at most
/// kMessageBytes (MPI counts are ints).
Status sendTagged(Communicator &world, const std::vector<uint8_t> &bytes,
                  int peer, int tag) {
  for (std::size_t at = 0; at < bytes.size(); at += kMessageBytes)
    if (Status s =
            world.send(bytes.data() + at,
                       std::min(kMessageBytes, bytes.size() - at), peer, tag);
        !s)
      return s;
  return Status::ok();
}

Status recvTagged(Communicator &world, std::vector<uint8_t> &bytes, int peer,
                  int tag) {
  for (std::size_t at = 0; at < bytes.size(); at += kMessageBytes)
    if (Status s =
            world.recv(bytes.data() + at,
                       std::min(kMessageBytes, bytes.size() - at), peer, tag);
        !s)
      return s;
  return Status::ok();
}

Status sendAll(Communicator &world, const std::vector<uint8_t> &bytes,
               int peer) {
  return sendTagged(world, bytes, peer, kGatherTag);
}

Status recvAll(Communicator &world, std::vector<uint8_t> &bytes, int peer) {
  return recvTagged(world, bytes, peer, kGatherTag);
}

/// True when the rank at `coords` is the first of the ranks of pipeline
/// stage `stage` holding its block of a tensor split by `splits`: its
/// coordinate on the "pp" axis (`stageAxis`, -1 for none) is `stage`, and
/// those on every other axis that splits nothing are zero.
bool holdsFirstCopy(const Mesh &mesh, const std::vector<int64_t> &coords,
                    const Splits &splits, int32_t stageAxis, uint32_t stage) {
  std::vector<bool> splitting(mesh.sizes.size(), false);
  for (const std::vector<uint32_t> &axes : splits)
    for (uint32_t a : axes)
      splitting[a] = true;
  for (size_t a = 0; a < coords.size(); ++a) {
    if (static_cast<int32_t>(a) == stageAxis) {
      if (coords[a] != static_cast<int64_t>(stage))
        return false;
    } else if (!splitting[a] && coords[a] != 0) {
      return false;
    }
  }
  return true;
}

/// Tensors to write and the bytes behind them (kept alive until written).
class TensorSet {
public:
  /// Gathers `buffer`, laid out as `param` is, into tensor `name` (the
  /// param's Hugging Face shape) on rank 0. Collective.
  Status addGathered(Interpreter &interpreter, const std::string &name,
                     const ParamRef &param, uint32_t buffer) {
    const TensorRef &t = interpreter.program().buffers[buffer];
    std::vector<uint8_t> whole;
    if (Status s = gatherParamBuffer(interpreter, param, buffer, whole); !s)
      return s.withContext("tensor '" + name + "'");
    if (interpreter.rank() != 0)
      return Status::ok();
    std::vector<uint8_t> &bytes = storage_.emplace_back(std::move(whole));
    tensors_[name] = {floatDTypeOf(t.dtype), param.hfShape, bytes.data(),
                      bytes.size()};
    return Status::ok();
  }

  void addScalar(const std::string &name, DType dtype, uint64_t bits) {
    std::vector<uint8_t> &bytes = storage_.emplace_back(sizeof(bits));
    std::memcpy(bytes.data(), &bits, sizeof(bits));
    tensors_[name] = {dtype, {}, bytes.data(), bytes.size()};
  }

  /// Rank 0 writes; the others have nothing to.
  Status write(const Interpreter &interpreter, const std::string &path,
               const std::map<std::string, std::string> &metadata) const {
    if (interpreter.rank() != 0)
      return Status::ok();
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

Status tpcrt::gatherParamBuffer(Interpreter &interpreter, const ParamRef &param,
                                uint32_t buffer, std::vector<uint8_t> &whole) {
  const Program &program = interpreter.program();
  const TensorRef &t = program.buffers[buffer];
  uint64_t elementBytes = executableDTypeSize(t.dtype);
  whole.clear();
  TensorPlacement own;
  if (Status s = paramPlacement(interpreter, param, own); !s)
    return s;
  if (own.blockElements() != t.elements)
    return Status::error("buffer " + std::to_string(buffer) + " " +
                         formatShape(t.shape) + " is not the block " +
                         formatShape(own.block.shape) + " of param '" +
                         param.hfName + "'");
  const Mesh &mesh = program.mesh;
  int64_t self = interpreter.rank();
  Communicator *world = interpreter.world();
  // The copy of the lowest pipeline stage owning the buffer (a param of
  // several stages, a tied embedding, is alike on each), and there only the
  // first rank holding each distinct block sends it to rank 0.
  uint32_t stage = program.bufferStages[buffer].front();
  auto holds = [&](const std::vector<int64_t> &coords) {
    return holdsFirstCopy(mesh, coords, param.splits, program.stageAxis, stage);
  };
  bool mine = holds(program.coordinates);
  if (self != 0 && !mine)
    return Status::ok();
  std::vector<uint8_t> local(t.bytes);
  if (mine)
    if (Status s = interpreter.readBuffer(buffer, local.data(), local.size());
        !s)
      return s;
  if (self != 0)
    return sendAll(*world, local, 0);
  int64_t elements = 1;
  for (int64_t d : param.viewShape)
    elements *= d;
  whole.assign(static_cast<size_t>(elements) * elementBytes, 0);
  for (int64_t r = 0, ranks = mesh.worldSize(); r < ranks; ++r) {
    std::vector<int64_t> coords = mesh.coordinates(r);
    if (!holds(coords))
      continue;
    TensorPlacement placement;
    if (Status s =
            TensorPlacement::create(mesh, coords, param.viewShape,
                                    param.paddedShape, param.splits, placement);
        !s)
      return s;
    if (r != 0)
      if (Status s = recvAll(*world, local, static_cast<int>(r)); !s)
        return s.withContext("gathering from rank " + std::to_string(r));
    insertPlaced(placement, local.data(), whole.data(), elementBytes);
  }
  return Status::ok();
}

Status tpcrt::readOnRankZero(Interpreter &interpreter, uint32_t buffer,
                             void *data, uint64_t bytes) {
  const Program &program = interpreter.program();
  if (buffer >= program.buffers.size())
    return Status::error("buffer " + std::to_string(buffer) +
                         " does not exist (the executable has " +
                         std::to_string(program.buffers.size()) + ")");
  // The first rank owning it: the lowest stage's, 0 on every other axis.
  std::vector<int64_t> coords(program.mesh.sizes.size(), 0);
  if (program.stageAxis >= 0)
    coords[program.stageAxis] = program.bufferStages[buffer].front();
  int64_t source = program.mesh.rankAt(coords);
  int64_t self = interpreter.rank();
  if (source == 0) {
    if (self != 0)
      return Status::ok();
    return interpreter.readBuffer(buffer, data, bytes);
  }
  if (self != 0 && self != source)
    return Status::ok();
  std::vector<uint8_t> staged(bytes);
  if (self == source) {
    if (Status s = interpreter.readBuffer(buffer, staged.data(), bytes); !s)
      return s;
    return sendTagged(*interpreter.world(), staged, 0, kOutputTag);
  }
  if (Status s = recvTagged(*interpreter.world(), staged,
                            static_cast<int>(source), kOutputTag);
      !s)
    return s.withContext("receiving buffer " + std::to_string(buffer) +
                         " from rank " + std::to_string(source));
  if (bytes)
    std::memcpy(data, staged.data(), bytes);
  return Status::ok();
}

Status tpcrt::saveCheckpoint(const std::string &path, Interpreter &interpreter,
                             const RunCounters &counters) {
  const Program &program = interpreter.program();
  TensorSet set;
  for (const ParamRef &param : program.params)
    if (Status s =
            set.addGathered(interpreter, param.hfName, param, param.buffer);
        !s)
      return s;
  for (const StateRef &state : program.state)
    if (Status s = set.addGathered(interpreter, stateName(program, state),
                                   program.params[state.param], state.buffer);
        !s)
      return s;
  set.addScalar("step", DType::I64, interpreter.step());
  set.addScalar("random.seed", DType::U64, program.seed);
  set.addScalar("data.seed", DType::U64, counters.dataSeed);
  set.addScalar("data.position", DType::I64, counters.dataPosition);
  set.addScalar("eval.position", DType::I64, counters.evalPosition);
  return set.write(interpreter, path,
                   {{"format", "tpc-checkpoint"}, {"version", "1"}});
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
    if (!program.ownsBuffer(state.buffer))
      continue;
    TensorPlacement placement;
    Status s =
        paramPlacement(interpreter, program.params[state.param], placement);
    if (s)
      s = scatterTensor(interpreter, placement, view, state.buffer);
    if (!s)
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
    if (Status s = set.addGathered(interpreter, grad.name,
                                   *params.at(grad.name), grad.buffer);
        !s)
      return s;
  return set.write(interpreter, path, {{"format", "tpc-gradients"}});
}
