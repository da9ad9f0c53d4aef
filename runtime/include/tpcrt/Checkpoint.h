//===- Checkpoint.h - training checkpoints and gradient dumps ---*- C++ -*-===//
//
// A checkpoint is one safetensors file holding everything a run needs to
// continue bit-identically: every param under its Hugging Face name and
// shape (in its buffer's dtype), every optimizer state as
// "<hf_name>.<state name>" (f32, the Hugging Face shape), and the run's
// counters as scalars: `step` (optimizer steps done, which is also the
// dropout step counter), `random.seed` (the executable's dropout seed, U64),
// `data.seed` (U64), `data.position` and `eval.position` (batches drawn from
// --data and --eval-data). Dropout masks and data batches are pure functions
// of these counters, so nothing else is saved. Written atomically.
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

/// Writes the interpreter's params, state and step and `counters` to `path`
/// (atomically; rank 0 writes).
Status saveCheckpoint(const std::string &path, Interpreter &interpreter,
                      const RunCounters &counters);

/// Reads what saveCheckpoint wrote into the interpreter (params, state, the
/// step counter) and `counters`. Every param and state of the executable
/// must be there with its shape; the dropout seed must be the executable's.
/// Errors name the file and the tensor.
Status loadCheckpoint(const std::string &path, Interpreter &interpreter,
                      RunCounters &counters);

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
