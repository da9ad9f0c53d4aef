//===- Checkpoint.h - training checkpoints and gradient dumps ---*- C++ -*-===//
//
// A checkpoint holds everything a run needs to continue bit-identically:
// every param under its Hugging Face name and shape (in its buffer's dtype),
// every optimizer state as "<hf_name>.<state name>" (f32, the Hugging Face
// shape), and the run's counters: `step` (optimizer steps done, which is
// also the dropout step counter), the executable's dropout seed, the data
// seed, and `data.position` and `eval.position` (batches drawn from --data
// and --eval-data). Dropout masks and data batches are pure functions of
// these counters, so nothing else is saved. It comes in two formats, by the
// path (checkpointFormatOf):
//
// - A directory (any path not ending in ".safetensors"): a Hugging Face
//   model directory that `from_pretrained` loads: `config.json` (the
//   executable's hf_config), the params in `model.safetensors` (metadata
//   {"format": "pt"}), sharded above CheckpointOptions::maxShardBytes as
//   save_pretrained shards (`model-0000i-of-0000N.safetensors` and
//   `model.safetensors.index.json`); and tpc's training state in
//   `training_state.safetensors`: the optimizer state, `step`,
//   `data.position` and `eval.position` (I64 scalars) and the two 64-bit
//   seeds as decimal strings in its metadata (`random.seed`, `data.seed`),
//   so that torch and safetensors read it (no U64). Each file is written
//   atomically; the training state is removed first and written last, so a
//   directory with one is complete.
// - One safetensors file (a path ending in ".safetensors"): the params, the
//   state and the counters as scalars, the seeds U64 (the format before
//   directories; such files still load).
//
// On a mesh the files are the same as a one-rank run's: loading scatters
// each whole tensor to the ranks' blocks (Weights.h), saving gathers the
// blocks (point-to-point to rank 0, one copy of each distinct block), drops
// the padding, and rank 0 alone writes. Saving and dumping are collective:
// every rank of the world must call them. On a pipeline a param (its state,
// its gradient) comes from the ranks of the lowest stage owning it, once: a
// tied embedding held by the first and the last stage is saved once.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CHECKPOINT_H
#define TPCRT_CHECKPOINT_H

#include "tpcrt/Interpreter.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// The counters of a run besides the interpreter's step.
struct RunCounters {
  uint64_t dataSeed = 0;
  /// Training batches drawn from --data so far.
  uint64_t dataPosition = 0;
  /// Evaluation batches drawn from --eval-data so far.
  uint64_t evalPosition = 0;
};

/// The two checkpoint formats (see the file comment).
enum class CheckpointFormat { File, Directory };

/// File for a path ending in ".safetensors", else Directory.
CheckpointFormat checkpointFormatOf(const std::string &path);

/// What a checkpoint directory's files are called.
constexpr char kCheckpointConfigFile[] = "config.json";
constexpr char kCheckpointWeightsFile[] = "model.safetensors";
constexpr char kCheckpointIndexFile[] = "model.safetensors.index.json";
constexpr char kCheckpointStateFile[] = "training_state.safetensors";

/// save_pretrained's default max_shard_size, "5GB": 5 * 10^9 bytes.
constexpr uint64_t kDefaultMaxShardBytes = 5000000000ull;

struct CheckpointOptions {
  /// A directory's params go to one model.safetensors while their bytes sum
  /// to at most this; above it, into shards as save_pretrained splits them:
  /// in the program's param order, a new shard when the next tensor would
  /// take the current one above the limit, a tensor larger than the limit
  /// in a shard of its own.
  uint64_t maxShardBytes = kDefaultMaxShardBytes;
};

/// Whether `path` can take a checkpoint of an executable whose hf_config is
/// `hfConfig` (Program::hfConfig), checked before anything runs: a
/// directory needs a config (an executable compiled before executables
/// carried one is refused, saying to recompile it or to save a single file)
/// and must not be an existing file. Errors start with `path`.
Status checkCheckpointTarget(const std::string &path,
                             const std::string &hfConfig);

/// Writes the interpreter's params, state and step and `counters` to `path`,
/// a directory or a file by checkpointFormatOf (rank 0 writes).
Status saveCheckpoint(const std::string &path, Interpreter &interpreter,
                      const RunCounters &counters,
                      const CheckpointOptions &options = {});

/// Reads what saveCheckpoint wrote into the interpreter (params, state, the
/// step counter) and `counters`: from a directory when `path` is one, else
/// from a single file. Every param and state of the executable must be
/// there with its shape; the dropout seed must be the executable's. Errors
/// name the file and the tensor; a directory without its weights or its
/// training state says which file is missing.
Status loadCheckpoint(const std::string &path, Interpreter &interpreter,
                      RunCounters &counters);

/// The files save_pretrained would shard tensors of `tensorBytes` bytes (in
/// this order) into with max_shard_size `maxShardBytes`, one per tensor:
/// model.safetensors when they make one shard, else
/// model-0000i-of-0000N.safetensors (see CheckpointOptions).
std::vector<std::string>
shardCheckpointFiles(const std::vector<uint64_t> &tensorBytes,
                     uint64_t maxShardBytes);

/// Writes the executable's grads (after the last step) under their params'
/// Hugging Face names and shapes, f32 (atomically; rank 0 writes). An
/// executable without grads is an error.
Status writeGrads(const std::string &path, Interpreter &interpreter);

/// Gathers `buffer`, laid out as `param`'s buffer is (the param itself, its
/// optimizer state or its gradient), into the whole tensor of the param's
/// view shape without padding, in the buffer's dtype: `whole` on rank 0,
/// empty on the other ranks. On a pipeline, from the ranks of the lowest
/// stage owning `buffer`. Collective over the interpreter's world.
Status gatherParamBuffer(Interpreter &interpreter, const ParamRef &param,
                         uint32_t buffer, std::vector<uint8_t> &whole);

/// Reads `buffer` (`bytes` long), whole on the ranks owning it (an output:
/// the loss on the last pipeline stage), into `data` on rank 0: from rank
/// 0's own arena where its stage owns it, else sent to it by the first rank
/// whose stage does. Collective over the interpreter's world (every rank
/// calls it, in the same order); `data` is untouched on the other ranks.
Status readOnRankZero(Interpreter &interpreter, uint32_t buffer, void *data,
                      uint64_t bytes);

} // namespace tpcrt

#endif // TPCRT_CHECKPOINT_H
