//===- Weights.h - filling an executable's params ---------------*- C++ -*-===//
//
// Params are full Hugging Face tensors, whatever the layout the executable
// runs: loaded from safetensors by name, or made up deterministically. On a
// mesh each rank keeps its block: the tensor is viewed row-major as the
// param's view_shape, zero-padded at the end of each dimension to its
// padded_shape and split by its splits (TensorPlacement). On a pipeline a
// rank fills only the params its stage owns (Program::ownsBuffer).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_WEIGHTS_H
#define TPCRT_WEIGHTS_H

#include "tpcrt/Interpreter.h"
#include "tpcrt/Layout.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/Status.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpcrt {

/// Where a whole tensor's elements lie in one rank's buffer: the tensor,
/// viewed row-major as `viewShape`, zero-padded at the end of each dimension
/// to `paddedShape`, of which the rank holds `block` as a dense row-major
/// buffer.
struct TensorPlacement {
  std::vector<int64_t> viewShape;
  std::vector<int64_t> paddedShape;
  Block block;

  /// The placement on the rank at `coords` of `mesh`; an empty
  /// `paddedShape` means no padding. An error when the shapes disagree in
  /// rank, the padding is negative or the splits do not fit (blockOf).
  static Status create(const Mesh &mesh, const std::vector<int64_t> &coords,
                       const std::vector<int64_t> &viewShape,
                       const std::vector<int64_t> &paddedShape,
                       const Splits &splits, TensorPlacement &out);

  /// Elements of the block.
  int64_t blockElements() const;

  /// Calls run(local, source, count) for the pieces of the block in local
  /// order, each as long as possible: `count` elements starting at element
  /// `local` of the block come from the whole (unpadded) tensor's row-major
  /// elements [source, source + count), or are padding when source is -1.
  template <typename RunFn> void forEachRun(RunFn run) const;
};

/// Copies the rank's block out of a whole tensor (`whole`, row-major, the
/// placement's viewShape) into `local` (the block, padding zero-filled).
void extractPlaced(const TensorPlacement &placement, const void *whole,
                   void *local, std::size_t elementBytes);
/// The inverse: writes the block's unpadded elements into the whole tensor.
void insertPlaced(const TensorPlacement &placement, const void *local,
                  void *whole, std::size_t elementBytes);

/// The placement of a param's buffer (or of a state or grad buffer laid out
/// like it) on the interpreter's rank.
Status paramPlacement(const Interpreter &interpreter, const ParamRef &param,
                      TensorPlacement &out);

/// Writes the rank's block of `tensor` (a whole F32, BF16, F16 or F64
/// tensor of the placement's element count) into `buffer`, converted to the
/// buffer's dtype (rounding to nearest even); padding is zero.
Status scatterTensor(Interpreter &interpreter, const TensorPlacement &placement,
                     const TensorView &tensor, uint32_t buffer);

/// Loads every param of the interpreter's program from `path`, a
/// .safetensors file or a sharded checkpoint's model.safetensors.index.json.
/// A param's hf_name is looked up as is; else, when it starts with
/// "transformer." or "model.", without that prefix (a base model's file:
/// GPT2Model, LlamaModel, Qwen2Model and MistralModel save their tensors
/// without it); else with either prefix added. Tensors no param asks for
/// (attn.bias, a tied lm_head.weight) are ignored. The tensor must have the
/// param's hf_shape exactly; F32, BF16, F16 and F64 sources are converted to
/// the buffer's dtype (rounding to nearest even). Errors name the file and
/// the tensor, e.g. "W.safetensors: missing tensor
/// 'transformer.h.0.ln_1.weight'"; a missing untied 'lm_head.weight' says
/// that the file is a base model and what to use instead.
Status loadWeights(const std::string &path, Interpreter &interpreter);

struct LoadWeightsOptions {
  /// Draws each param the file lacks as initWeights(*initSeed) would,
  /// instead of refusing the file (a base model without its LM head).
  std::optional<uint64_t> initSeed;
};

/// loadWeights with options; `drawn`, when given, receives the names of the
/// params drawn because the file lacks them, in the program's order.
Status loadWeights(const std::string &path, Interpreter &interpreter,
                   const LoadWeightsOptions &options,
                   std::vector<std::string> *drawn = nullptr);

/// The weights file `path` stands for: a Hugging Face model directory's
/// model.safetensors.index.json (sharded) when it exists, else its
/// model.safetensors; any other path as it is. A directory with neither is
/// an error "DIR: no model.safetensors or model.safetensors.index.json in
/// it".
Status resolveWeightsPath(const std::string &path, std::string &out);

/// Initializes every param by its init kind: Normal draws element i of the
/// Hugging Face tensor as init_std * standardNormal(key, i) with key =
/// namedStreamKey(seed, hf_name) (tpcrt/Random.h), so a param's values
/// depend on the seed and its name only; Zeros and Ones fill.
/// On a mesh every rank draws the same whole tensor and keeps its block, so
/// the values do not depend on the layout; padding is zero.
Status initWeights(uint64_t seed, Interpreter &interpreter);

template <typename RunFn> void TensorPlacement::forEachRun(RunFn run) const {
  size_t rank = viewShape.size();
  if (rank == 0) {
    run(int64_t(0), int64_t(0), int64_t(1));
    return;
  }
  for (int64_t extent : block.shape)
    if (extent == 0)
      return;
  // Runs that continue one another (unsplit inner dimensions) are merged.
  int64_t pendingLocal = 0, pendingSource = 0, pendingCount = 0;
  auto emit = [&](int64_t local, int64_t source, int64_t count) {
    if (count == 0)
      return;
    if (pendingCount > 0 && pendingLocal + pendingCount == local &&
        ((pendingSource < 0 && source < 0) ||
         (pendingSource >= 0 && source == pendingSource + pendingCount))) {
      pendingCount += count;
      return;
    }
    if (pendingCount > 0)
      run(pendingLocal, pendingSource, pendingCount);
    pendingLocal = local;
    pendingSource = source;
    pendingCount = count;
  };
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * viewShape[d + 1];
  int64_t rowLength = block.shape[rank - 1];
  int64_t first = block.offset[rank - 1];
  int64_t inside =
      std::min(rowLength, std::max<int64_t>(0, viewShape[rank - 1] - first));
  std::vector<int64_t> index(rank, 0); // over the block's outer dims
  for (int64_t local = 0;; local += rowLength) {
    bool padding = false;
    int64_t source = first;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t global = block.offset[d] + index[d];
      padding |= global >= viewShape[d];
      source += global * strides[d];
    }
    if (padding) {
      emit(local, -1, rowLength);
    } else {
      emit(local, source, inside);
      emit(local + inside, -1, rowLength - inside);
    }
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < block.shape[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      break;
  }
  if (pendingCount > 0)
    run(pendingLocal, pendingSource, pendingCount);
}

} // namespace tpcrt

#endif // TPCRT_WEIGHTS_H
