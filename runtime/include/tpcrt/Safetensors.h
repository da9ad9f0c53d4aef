//===- Safetensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// Weights, inputs, outputs, gradients and checkpoints are safetensors files:
// an 8-byte little-endian header length N, N bytes of JSON describing every
// tensor (dtype, shape, byte range), then the raw little-endian data.
//
// The reader trusts nothing in the file: every field is checked before use and
// every failure is a Status naming the file and, where there is one, the
// tensor. See docs/runtime/safetensors.md for what is accepted and refused.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_SAFETENSORS_H
#define TPCRT_SAFETENSORS_H

#include "tpcrt/Shape.h"
#include "tpcrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tpcrt {

/// Element types of the safetensors format. The sub-byte types of the format
/// (F4, F6_*) are not supported: their tensors have no whole byte size per
/// element, and nothing in tpc produces or consumes them.
enum class DType {
  Bool,
  U8,
  I8,
  U16,
  I16,
  U32,
  I32,
  U64,
  I64,
  F16,
  BF16,
  F32,
  F64,
  F8E4M3,
  F8E5M2,
  F8E8M0,
  C64,
};

/// The spelling in a safetensors header, e.g. "BF16", "F8_E4M3".
const char *dtypeName(DType dtype);

/// Parses a header spelling; false when it is not one of the supported types.
bool parseDType(const std::string &name, DType &dtype);

/// Bytes per element.
uint64_t dtypeSize(DType dtype);

/// IEEE binary16 and bfloat16 conversions. The narrowing ones round to
/// nearest, ties to even (as PyTorch's `.to(torch.float16 / torch.bfloat16)`),
/// overflow to infinity and keep NaN a NaN.
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
uint16_t floatToBFloat16(float value);

/// One tensor of an open file: its bytes point into the file's memory, which
/// lives as long as the SafetensorsFile (or ShardedSafetensors) it came from.
/// The data is not necessarily aligned for its element type: read it with
/// memcpy or through toFloat32 / toInt64.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements = 0;
  const uint8_t *data = nullptr;
  uint64_t numBytes = 0;
};

/// Converts F32, F16, BF16 or F64 elements to float32; any other dtype is an
/// error naming the tensor.
Status toFloat32(const TensorView &tensor, std::vector<float> &out);

/// Converts integer or BOOL elements to int64; floating-point dtypes, and U64
/// values above the int64 range, are errors naming the tensor.
Status toInt64(const TensorView &tensor, std::vector<int64_t> &out);

/// A validated safetensors file, read into memory. Move-only: the tensor
/// views point into its memory.
///
/// The file is read whole with read(), not mapped: a mapping faults (SIGBUS)
/// when the file is truncated or rewritten in place while it is open, and
/// no check at open can rule that out. Reading costs the file's size in
/// memory for as long as the SafetensorsFile lives; a file that shrinks
/// while it is read, or is shorter than its header says, is an error.
class SafetensorsFile {
public:
  SafetensorsFile();
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile &&other) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  /// Opens and validates `path`; on error `out` is left empty and the message
  /// starts with the path.
  static Status open(const std::string &path, SafetensorsFile &out);

  /// Validates an in-memory image of a file; `displayName` stands for the file
  /// in messages. The bytes are copied.
  static Status fromBytes(const std::string &displayName, const void *bytes,
                          size_t size, SafetensorsFile &out);

  const std::string &path() const { return path_; }

  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  bool contains(const std::string &name) const {
    return tensors_.count(name) != 0;
  }

  /// The tensor called `name`, or nullptr.
  const TensorView *find(const std::string &name) const;

  /// Like find, but a missing name is an error naming the file and tensor.
  Status get(const std::string &name, TensorView &out) const;

  /// The header's `__metadata__` (empty when absent).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

  const std::map<std::string, TensorView> &tensors() const { return tensors_; }

private:
  Status parse();
  void reset();

  std::string path_;
  /// The file's bytes: base_ points into heap_.
  const uint8_t *base_ = nullptr;
  size_t fileSize_ = 0;
  std::vector<uint8_t> heap_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A checkpoint split into several files by a Hugging Face
/// `model.safetensors.index.json` (`{"weight_map": {name: file}}`), seen as one
/// set of tensors. A single .safetensors file can be opened the same way, so
/// callers need not care which one they were given.
class ShardedSafetensors {
public:
  /// Opens an index file and every file it references, relative to the
  /// index's directory. Every name of the weight map must be in the file it
  /// is mapped to; tensors of those files that the map does not mention are
  /// not visible.
  static Status openIndex(const std::string &indexPath, ShardedSafetensors &out);

  /// Opens `path` as an index when it ends in ".json", else as one file.
  static Status open(const std::string &path, ShardedSafetensors &out);

  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  const TensorView *find(const std::string &name) const;
  Status get(const std::string &name, TensorView &out) const;

  /// The path of the file that holds `name`, or "" when there is none.
  std::string fileOf(const std::string &name) const;

  /// The metadata of the index (its `metadata` object, values printed as
  /// JSON when they are not strings) or of the single file.
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

private:
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  /// Name -> (index into files_, view into that file).
  std::map<std::string, std::pair<size_t, const TensorView *>> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// One tensor to write. The bytes are not copied: they must stay valid until
/// writeSafetensors returns.
struct TensorToWrite {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  uint64_t numBytes = 0;
};

/// Writes `tensors` and `metadata` to `path` atomically: the file is written
/// as `path.tmp.<pid>`, flushed to disk and renamed over `path`, so a reader
/// (or a crash) never sees a half-written file. Tensors are laid out in name
/// order with contiguous offsets and the header is padded with spaces to a
/// multiple of 8 bytes, as the reference implementation does.
Status writeSafetensors(const std::string &path,
                        const std::map<std::string, TensorToWrite> &tensors,
                        const std::map<std::string, std::string> &metadata = {});

/// Serializes to memory instead of a file (same layout as writeSafetensors).
Status serializeSafetensors(const std::map<std::string, TensorToWrite> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::vector<uint8_t> &out);

} // namespace tpcrt

#endif // TPCRT_SAFETENSORS_H
