//===- Inputs.h - the token batch an executable reads -----------*- C++ -*-===//
//
// Inputs (`input_ids`, `labels`: i64 [batch, seq]) are read from safetensors
// or drawn deterministically, checked against their value_bound, and kept on
// the host: they are copied into the arena before every step, since the plan
// may reuse an input's bytes after its last read.
//
// On a mesh every rank produces the global batch (the buffer shape times the
// sizes of the axes splitting each dimension: Program::globalShapeOf) exactly
// as a one-rank run does, checks it whole, and keeps its block. An input in a
// by_microbatch pool holds the batch's microbatches one per slot: the global
// batch is its slots' microbatches one after another along dimension 0, and
// slot i gets the rank's block of microbatch i.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_INPUTS_H
#define TPCRT_INPUTS_H

#include "tpcrt/Interpreter.h"
#include "tpcrt/Layout.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// The label value the loss ignores (CrossEntropy's ignore index).
constexpr int64_t kIgnoreLabel = -100;

/// Every input of a program, in its buffer's dtype and layout.
struct HostInputs {
  struct Entry {
    uint32_t buffer = 0;
    /// The rank's block of the global tensor (all of it off a mesh); of a
    /// pooled input, its block of microbatch 0.
    Block block;
    /// The slots to fill (a by_microbatch pool's, else 1) and the rows of
    /// one microbatch of the global tensor (its dimension 0): slot i holds
    /// `block` moved i * microbatchRows rows down.
    uint32_t slots = 1;
    int64_t microbatchRows = 0;
    /// The blocks, slot after slot, as the buffer holds them (slots x the
    /// buffer's bytes).
    std::vector<uint8_t> bytes;

    /// An entry for `input` on the program's rank, bytes sized.
    static Status create(const Program &program, const BindingRef &input,
                         Entry &out);
    /// Cuts every slot's block out of the whole global tensor (i64,
    /// Program::globalShapeOf) into `bytes`. Allocates nothing.
    void fill(const int64_t *global, const std::vector<int64_t> &globalShape);
  };
  std::vector<Entry> entries;
  /// Elements of the global `input_ids` (batch x seq), for tokens per
  /// second; 0 without it.
  int64_t tokens = 0;

  /// Copies every input into the interpreter's arena, every slot of a
  /// pooled one (on a pipeline, those its stage owns: a stage that reads no
  /// labels ignores them).
  Status copyTo(Interpreter &interpreter) const;
};

/// How the `labels` of a batch file line up with its `input_ids`.
enum class LabelShift {
  /// labels[b, i] is the target of position i (the next token), as the
  /// executable reads them and as token data (--data) builds them.
  Shifted,
  /// Hugging Face's convention: labels are aligned with input_ids (often
  /// equal to them) and the model shifts them: the target of position i is
  /// labels[b, i + 1]; the last position has none.
  Unshifted,
};

/// "shifted" or "unshifted"; else an error "--labels 'x': expected shifted
/// or unshifted".
Status parseLabelShift(const std::string &text, LabelShift &out);

/// Turns Hugging Face labels into shifted ones in place: each row (along
/// the last dimension of `shape`) moves left by one and its last position
/// becomes the ignore index -100; -100s already there move with the rest.
void shiftLabels(std::vector<int64_t> &values,
                 const std::vector<int64_t> &shape);

/// Reads every input of `program` but the runtime's own (isRuntimeInput:
/// `step`) from the safetensors file `path`, by name;
/// other tensors are ignored. Integer inputs are i64 buffers and accept I64
/// or I32 tensors of exactly the global shape; with a value_bound, every
/// value must lie in [0, value_bound), or be -100 for `labels`. Errors name
/// the file, the tensor and, for a value, its position:
/// "B.safetensors: input_ids[1, 7] is 50257, outside [0, 50257)".
/// With LabelShift::Unshifted the file's labels (checked as they are in the
/// file) are converted by shiftLabels. `labelsEqualIds`, when given, is set
/// to whether the file's labels equal its input_ids element for element
/// (Hugging Face's labels = input_ids, which read as shifted labels teach
/// the model to copy its input).
Status readInputs(const std::string &path, const Program &program,
                  HostInputs &out, LabelShift labels = LabelShift::Shifted,
                  bool *labelsEqualIds = nullptr);

/// Draws every input of `program` but the runtime's own uniformly in
/// [0, value_bound) from the
/// stream namedStreamKey(seed, name) (tpcrt/Random.h): value i of the global
/// tensor is uniformBelow(key, i, value_bound). An input without a bound is
/// an error.
Status syntheticInputs(uint64_t seed, const Program &program, HostInputs &out);

} // namespace tpcrt

#endif // TPCRT_INPUTS_H
