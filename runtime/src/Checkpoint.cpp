//===- Checkpoint.cpp - training checkpoints and gradient dumps -----------===//

#include "tpcrt/Checkpoint.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/Weights.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

using namespace tpcrt;
using Json = nlohmann::json;

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
    add(name, {floatDTypeOf(t.dtype), param.hfShape, bytes.data(),
               bytes.size()});
    return Status::ok();
  }

  void addScalar(const std::string &name, DType dtype, uint64_t bits) {
    std::vector<uint8_t> &bytes = storage_.emplace_back(sizeof(bits));
    std::memcpy(bytes.data(), &bits, sizeof(bits));
    add(name, {dtype, {}, bytes.data(), bytes.size()});
  }

  /// The tensors by name, and their names in the order they were added.
  const std::map<std::string, TensorToWrite> &tensors() const {
    return tensors_;
  }
  const std::vector<std::string> &order() const { return order_; }

  /// Rank 0 writes; the others have nothing to.
  Status write(const Interpreter &interpreter, const std::string &path,
               const std::map<std::string, std::string> &metadata) const {
    if (interpreter.rank() != 0)
      return Status::ok();
    return writeSafetensors(path, tensors_, metadata);
  }

private:
  void add(const std::string &name, TensorToWrite tensor) {
    if (tensors_.insert_or_assign(name, std::move(tensor)).second)
      order_.push_back(name);
  }

  std::list<std::vector<uint8_t>> storage_;
  std::map<std::string, TensorToWrite> tensors_;
  std::vector<std::string> order_;
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

namespace {

constexpr char kTrainingStateKind[] = "tpc-training-state";

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// A shard's name as save_pretrained writes it: model-00001-of-00003.safetensors.
std::string shardFileName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors",
                index + 1, count);
  return name;
}

/// Whether `name` is a shard of some save (model-NNNNN-of-NNNNN.safetensors).
bool isShardFileName(const std::string &name) {
  const std::string prefix = "model-", middle = "-of-",
                    suffix = ".safetensors";
  if (name.size() != prefix.size() + 5 + middle.size() + 5 + suffix.size())
    return false;
  auto digits = [&](size_t at) {
    for (size_t i = at; i < at + 5; ++i)
      if (name[i] < '0' || name[i] > '9')
        return false;
    return true;
  };
  return name.compare(0, prefix.size(), prefix) == 0 && digits(6) &&
         name.compare(11, middle.size(), middle) == 0 && digits(15) &&
         name.compare(20, suffix.size(), suffix) == 0;
}

/// The executable's hf_config as a JSON object, or an error saying why a
/// directory cannot be written without it.
Status parseHfConfig(const std::string &path, const std::string &hfConfig,
                     Json &config) {
  if (hfConfig.empty())
    return Status::error(
        path + ": the executable records no Hugging Face config (it was "
               "compiled before executables carried one): recompile it "
               "(tpc-import, tpc-compile) to save a checkpoint directory, or "
               "save a single file with a path ending in .safetensors");
  config = Json::parse(hfConfig, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object())
    return Status::error(path + ": the executable's Hugging Face config is "
                                "not a JSON object");
  return Status::ok();
}

/// Writes `text` to `path` atomically.
Status writeText(const std::string &path, const std::string &text) {
  return writeFileAtomically(path, {{text.data(), text.size()}});
}

/// Whether `name` is a file a checkpoint directory's save writes (and so
/// replaces): the config, the weights (one file, or shards and their
/// index), the training state.
bool isCheckpointFileName(const std::string &name) {
  return name == kCheckpointConfigFile || name == kCheckpointWeightsFile ||
         name == kCheckpointIndexFile || name == kCheckpointStateFile ||
         isShardFileName(name);
}

/// Removes what saves to `path` left behind when they were killed:
/// `path.saving.<pid>` directories of processes that no longer run.
void removeAbandonedSaves(const std::string &path) {
  std::string parent = ".", base = path;
  if (size_t slash = path.find_last_of('/'); slash != std::string::npos) {
    parent = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
  std::string prefix = base + ".saving.";
  DIR *dir = ::opendir(parent.c_str());
  if (!dir)
    return;
  std::vector<std::string> abandoned;
  while (const dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
      abandoned.push_back(joinPath(parent, name));
  }
  ::closedir(dir);
  for (const std::string &name : abandoned)
    (void)removeTree(name);
}

/// Writes the files of a checkpoint directory into `dir` (new and empty):
/// the params, sharded as save_pretrained shards them, the config, the
/// training state.
Status writeCheckpointFiles(const std::string &dir, const Json &config,
                            const TensorSet &params, const TensorSet &state,
                            const std::map<std::string, std::string> &seeds,
                            const CheckpointOptions &options) {
  std::vector<uint64_t> sizes;
  uint64_t totalSize = 0;
  for (const std::string &name : params.order()) {
    sizes.push_back(params.tensors().at(name).numBytes);
    totalSize += sizes.back();
  }
  std::vector<std::string> files =
      shardCheckpointFiles(sizes, options.maxShardBytes);
  std::map<std::string, std::map<std::string, TensorToWrite>> byFile;
  Json weightMap = Json::object();
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string &name = params.order()[i];
    byFile[files[i]][name] = params.tensors().at(name);
    weightMap[name] = files[i];
  }
  // An executable without params still has a (empty) model.safetensors.
  if (byFile.empty())
    byFile[kCheckpointWeightsFile];
  for (const auto &[file, tensors] : byFile)
    if (Status s = writeSafetensors(joinPath(dir, file), tensors,
                                    {{"format", "pt"}});
        !s)
      return s;
  if (byFile.size() > 1) {
    Json index = {{"metadata", {{"total_size", totalSize}}},
                  {"weight_map", weightMap}};
    if (Status s = writeText(joinPath(dir, kCheckpointIndexFile),
                             index.dump(2) + "\n");
        !s)
      return s;
  }
  if (Status s = writeText(joinPath(dir, kCheckpointConfigFile),
                           config.dump(2) + "\n");
      !s)
    return s;
  std::map<std::string, std::string> metadata = seeds;
  metadata["format"] = "pt";
  metadata["tpc.format"] = kTrainingStateKind;
  metadata["tpc.version"] = "1";
  return writeSafetensors(joinPath(dir, kCheckpointStateFile), state.tensors(),
                          metadata);
}

/// Writes a checkpoint directory (rank 0, after gathering) so that `path`
/// is at every moment either the previous checkpoint, whole, or the new
/// one, whole (issue 18: an interrupted or failed save, a full disk, never
/// leaves half of one): the new one is written into `path.saving.<pid>`
/// beside it, the files of `path` a save does not write (a tokenizer, a
/// README) are linked into it, and the two directories are exchanged in
/// one rename (renameat2 RENAME_EXCHANGE); the previous one is removed
/// after. On an error the new directory is removed and `path` is untouched.
Status writeCheckpointDirectory(const std::string &path,
                                const Program &program, const TensorSet &params,
                                const TensorSet &state,
                                const std::map<std::string, std::string> &seeds,
                                const CheckpointOptions &options) {
  Json config;
  if (Status s = parseHfConfig(path, program.hfConfig, config); !s)
    return s;
  bool previous = false;
  if (struct stat info; ::stat(path.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      return Status::error(path + ": exists and is not a directory (a "
                                  "checkpoint directory; a single-file "
                                  "checkpoint takes a path ending in "
                                  ".safetensors)");
    previous = true;
  }
  removeAbandonedSaves(path);
  std::string saving = path + ".saving." + std::to_string(::getpid());
  if (Status s = removeTree(saving); !s)
    return s;
  if (::mkdir(saving.c_str(), 0777) != 0)
    return Status::error(saving + ": cannot create the checkpoint's "
                                  "directory: " +
                         std::strerror(errno));
  auto abandon = [&](Status status) {
    (void)removeTree(saving);
    return status;
  };
  if (Status s = writeCheckpointFiles(saving, config, params, state, seeds,
                                      options);
      !s)
    return abandon(s);
  if (!previous) {
    if (::rename(saving.c_str(), path.c_str()) != 0)
      return abandon(Status::error(path + ": cannot rename " + saving +
                                   " to it: " + std::strerror(errno)));
  } else {
    // Keep what the user put beside the previous checkpoint.
    if (DIR *dir = ::opendir(path.c_str())) {
      std::vector<std::string> kept;
      while (const dirent *entry = ::readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != ".." && !isCheckpointFileName(name))
          kept.push_back(name);
      }
      ::closedir(dir);
      for (const std::string &name : kept) {
        std::string from = joinPath(path, name), to = joinPath(saving, name);
        if (!isDirectory(from) && ::link(from.c_str(), to.c_str()) != 0)
          return abandon(Status::error(from + ": cannot keep it in the new "
                                              "checkpoint: " +
                                       std::strerror(errno)));
      }
    } else {
      return abandon(Status::error(path + ": cannot list: " +
                                   std::strerror(errno)));
    }
    if (::renameat2(AT_FDCWD, saving.c_str(), AT_FDCWD, path.c_str(),
                    RENAME_EXCHANGE) != 0)
      return abandon(Status::error(path + ": cannot exchange it with " +
                                   saving + ": " + std::strerror(errno)));
    // `saving` now holds the previous checkpoint.
    if (Status s = removeTree(saving); !s)
      std::fprintf(stderr, "tpc-run: warning: the previous checkpoint stays "
                           "at %s: %s\n",
                   saving.c_str(), s.message().c_str());
  }
  syncParentDirectory(path);
  return Status::ok();
}

/// Reads the optimizer state of the executable from `file` (a single-file
/// checkpoint or a directory's training state) into the interpreter.
Status loadState(const SafetensorsFile &file, Interpreter &interpreter) {
  const std::string &path = file.path();
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
  return Status::ok();
}

/// A 64-bit unsigned value of the training state's metadata (a decimal
/// string: safetensors has no U64 that torch reads).
Status readMetadataCounter(const SafetensorsFile &file, const std::string &key,
                           uint64_t &value) {
  auto found = file.metadata().find(key);
  if (found == file.metadata().end())
    return Status::error(file.path() + ": no '" + key + "' in its metadata");
  const std::string &text = found->second;
  bool good = !text.empty() && text.size() <= 20;
  value = 0;
  for (char c : text)
    good = good && c >= '0' && c <= '9' &&
           !__builtin_mul_overflow(value, 10, &value) &&
           !__builtin_add_overflow(value, static_cast<uint64_t>(c - '0'),
                                   &value);
  if (!good)
    return Status::error(file.path() + ": metadata '" + key + "' is '" + text +
                         "', expected a decimal integer below 2^64");
  return Status::ok();
}

Status checkSeed(const std::string &path, uint64_t seed,
                 const Program &program) {
  if (seed != program.seed)
    return Status::error(path + ": the checkpoint's dropout seed " +
                         std::to_string(seed) + " is not the executable's " +
                         std::to_string(program.seed) +
                         " (tpc-compile --seed): resuming would not continue "
                         "the same run");
  return Status::ok();
}

/// The I64 counters that both formats hold as scalars.
Status readPositions(const SafetensorsFile &file, uint64_t &step,
                     RunCounters &loaded) {
  if (Status s = readCounter(file, "step", DType::I64, step); !s)
    return s;
  if (Status s =
          readCounter(file, "data.position", DType::I64, loaded.dataPosition);
      !s)
    return s;
  return readCounter(file, "eval.position", DType::I64, loaded.evalPosition);
}

Status loadCheckpointFile(const std::string &path, Interpreter &interpreter,
                          RunCounters &counters) {
  if (Status s = loadWeights(path, interpreter); !s)
    return s;
  SafetensorsFile file;
  if (Status s = SafetensorsFile::open(path, file); !s)
    return s;
  const Program &program = interpreter.program();
  if (Status s = loadState(file, interpreter); !s)
    return s;
  uint64_t step, seed;
  RunCounters loaded;
  if (Status s = readCounter(file, "random.seed", DType::U64, seed); !s)
    return s;
  if (Status s = checkSeed(path, seed, program); !s)
    return s;
  if (Status s = readCounter(file, "data.seed", DType::U64, loaded.dataSeed);
      !s)
    return s;
  if (Status s = readPositions(file, step, loaded); !s)
    return s;
  interpreter.setStep(step);
  counters = loaded;
  return Status::ok();
}

Status loadCheckpointDirectory(const std::string &path,
                               Interpreter &interpreter,
                               RunCounters &counters) {
  std::string statePath = joinPath(path, kCheckpointStateFile);
  if (!exists(statePath))
    return Status::error(
        path + ": no " + kCheckpointStateFile +
        " in it (tpc's training state: optimizer state, step, seeds, data "
        "positions; a save that did not finish, or a Hugging Face model "
        "directory: --weights " + path + " loads its weights alone)");
  std::string weightsPath;
  if (Status s = resolveWeightsPath(path, weightsPath); !s)
    return s;
  SafetensorsFile file;
  if (Status s = SafetensorsFile::open(statePath, file); !s)
    return s;
  auto kind = file.metadata().find("tpc.format");
  if (kind == file.metadata().end() || kind->second != kTrainingStateKind)
    return Status::error(statePath + ": not a tpc training state (its "
                                     "metadata has no \"tpc.format\": \"" +
                         std::string(kTrainingStateKind) + "\")");
  const Program &program = interpreter.program();
  uint64_t step, seed;
  RunCounters loaded;
  if (Status s = readMetadataCounter(file, "random.seed", seed); !s)
    return s;
  if (Status s = checkSeed(statePath, seed, program); !s)
    return s;
  if (Status s = readMetadataCounter(file, "data.seed", loaded.dataSeed); !s)
    return s;
  if (Status s = readPositions(file, step, loaded); !s)
    return s;
  if (Status s = loadWeights(weightsPath, interpreter); !s)
    return s;
  if (Status s = loadState(file, interpreter); !s)
    return s;
  interpreter.setStep(step);
  counters = loaded;
  return Status::ok();
}

} // namespace

CheckpointFormat tpcrt::checkpointFormatOf(const std::string &path) {
  const std::string suffix = ".safetensors";
  bool file = path.size() >= suffix.size() &&
              path.compare(path.size() - suffix.size(), suffix.size(),
                           suffix) == 0;
  return file ? CheckpointFormat::File : CheckpointFormat::Directory;
}

std::vector<std::string>
tpcrt::shardCheckpointFiles(const std::vector<uint64_t> &tensorBytes,
                            uint64_t maxShardBytes) {
  // huggingface_hub's split_state_dict_into_shards_factory, which
  // save_pretrained calls: in order, a tensor above the limit alone in a
  // shard (appended when met), else a new shard when the current one would
  // go above the limit.
  std::vector<size_t> shardOf(tensorBytes.size());
  size_t shards = 0;
  std::vector<size_t> current;
  uint64_t currentBytes = 0;
  for (size_t i = 0; i < tensorBytes.size(); ++i) {
    uint64_t bytes = tensorBytes[i];
    if (bytes > maxShardBytes) {
      shardOf[i] = shards++;
      continue;
    }
    if (currentBytes + bytes > maxShardBytes) {
      for (size_t t : current)
        shardOf[t] = shards;
      ++shards;
      current.clear();
      currentBytes = 0;
    }
    current.push_back(i);
    currentBytes += bytes;
  }
  if (!current.empty()) {
    for (size_t t : current)
      shardOf[t] = shards;
    ++shards;
  }
  std::vector<std::string> files(tensorBytes.size());
  for (size_t i = 0; i < files.size(); ++i)
    files[i] = shards == 1 ? std::string(kCheckpointWeightsFile)
                           : shardFileName(shardOf[i], shards);
  return files;
}

Status tpcrt::checkCheckpointTarget(const std::string &path,
                                    const std::string &hfConfig) {
  if (checkpointFormatOf(path) == CheckpointFormat::File)
    return Status::ok();
  Json config;
  if (Status s = parseHfConfig(path, hfConfig, config); !s)
    return s;
  if (exists(path) && !isDirectory(path))
    return Status::error(path + ": exists and is not a directory (a "
                                "checkpoint directory; a single-file "
                                "checkpoint takes a path ending in "
                                ".safetensors)");
  return Status::ok();
}

Status tpcrt::saveCheckpoint(const std::string &path, Interpreter &interpreter,
                             const RunCounters &counters,
                             const CheckpointOptions &options) {
  const Program &program = interpreter.program();
  bool directory = checkpointFormatOf(path) == CheckpointFormat::Directory;
  // A directory keeps the params apart from the training state.
  TensorSet params, stateSet;
  TensorSet &state = directory ? stateSet : params;
  for (const ParamRef &param : program.params)
    if (Status s =
            params.addGathered(interpreter, param.hfName, param, param.buffer);
        !s)
      return s;
  for (const StateRef &ref : program.state)
    if (Status s = state.addGathered(interpreter, stateName(program, ref),
                                     program.params[ref.param], ref.buffer);
        !s)
      return s;
  state.addScalar("step", DType::I64, interpreter.step());
  if (!directory) {
    state.addScalar("random.seed", DType::U64, program.seed);
    state.addScalar("data.seed", DType::U64, counters.dataSeed);
  }
  state.addScalar("data.position", DType::I64, counters.dataPosition);
  state.addScalar("eval.position", DType::I64, counters.evalPosition);
  if (!directory)
    return params.write(interpreter, path,
                        {{"format", "tpc-checkpoint"}, {"version", "1"}});
  if (interpreter.rank() != 0)
    return Status::ok();
  return writeCheckpointDirectory(
      path, program, params, stateSet,
      {{"random.seed", std::to_string(program.seed)},
       {"data.seed", std::to_string(counters.dataSeed)}},
      options);
}

Status tpcrt::loadCheckpoint(const std::string &path, Interpreter &interpreter,
                             RunCounters &counters) {
  if (isDirectory(path))
    return loadCheckpointDirectory(path, interpreter, counters);
  if (!exists(path) && checkpointFormatOf(path) == CheckpointFormat::Directory)
    return Status::error(path + ": no such checkpoint directory");
  return loadCheckpointFile(path, interpreter, counters);
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
