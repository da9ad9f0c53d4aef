//===- TokenData.h - training batches from a flat token file ----*- C++ -*-===//
//
// `tpc-run --data TOKENS.bin` trains on a flat file of token ids as nanoGPT's
// prepare.py writes it (numpy's tofile of a uint16 array; uint32 for
// vocabularies above 65536): no header, little-endian ids one after the
// other. Batches are drawn deterministically: draw d of a stream keyed by a
// seed and the stream's name picks, for each row r of the batch, a start
// i = uniformBelow(key, d * batch + r, tokens - seq), and the row is
// input_ids = tokens[i, i + seq), labels = tokens[i + 1, i + seq + 1) (the
// targets already shifted, as the executable expects). A batch is a pure
// function of (seed, stream, draw), so a run resumed at draw d continues
// exactly as an uninterrupted one. On a mesh `batch` and `seq` are the
// global batch's: every rank draws the same global batch and keeps its
// block, so the draws do not depend on the layout.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TOKENDATA_H
#define TPCRT_TOKENDATA_H

#include "tpcrt/Inputs.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// The element type of a token file.
enum class TokenDType { U16, U32 };

/// "uint16" / "uint32" (also "u16", "u32").
Status parseTokenDType(const std::string &text, TokenDType &out);
const char *tokenDTypeName(TokenDType dtype);

/// What a file of `vocab` ids is, absent --data-dtype: uint16 when every id
/// fits (vocab <= 65536, as nanoGPT writes GPT-2 data), else uint32.
TokenDType defaultTokenDType(int64_t vocab);

/// A token file, mapped read-only. Move-only.
class TokenFile {
public:
  TokenFile() = default;
  ~TokenFile();
  TokenFile(TokenFile &&other) noexcept;
  TokenFile &operator=(TokenFile &&other) noexcept;
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  /// Opens `path`; its size must be a whole number of tokens.
  static Status open(const std::string &path, TokenDType dtype, TokenFile &out);

  const std::string &path() const { return path_; }
  TokenDType dtype() const { return dtype_; }
  /// Number of tokens.
  uint64_t size() const { return size_; }
  /// Token i (i < size()).
  int64_t token(uint64_t i) const;

private:
  void reset();

  std::string path_;
  TokenDType dtype_ = TokenDType::U16;
  const uint8_t *data_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t size_ = 0;
};

/// Draws batches of `input_ids` and `labels` for a program from a token
/// file: the stream is namedStreamKey(seed, name) (tpcrt/Random.h), e.g.
/// name "data" for training and "eval" for evaluation.
class TokenSampler {
public:
  /// Checks that the program has i64 [batch, seq] input_ids and labels
  /// (global shapes) and that the file holds at least seq + 1 tokens; sizes
  /// `inputs` and the global batch once.
  static Status create(const TokenFile &file, uint64_t seed,
                       const std::string &name, const Program &program,
                       TokenSampler &out);

  /// Fills the rank's block of the global batch of draw `draw` into
  /// inputs() (no allocation). A token outside [0, value_bound) of
  /// input_ids is an error naming the file and its position.
  Status sample(uint64_t draw);

  const HostInputs &inputs() const { return inputs_; }

private:
  const TokenFile *file_ = nullptr;
  uint64_t key_ = 0;
  int64_t batch_ = 0, seq_ = 0, bound_ = 0;
  std::vector<int64_t> shape_;
  /// The global batch.
  std::vector<int64_t> ids_, labels_;
  HostInputs inputs_;
};

} // namespace tpcrt

#endif // TPCRT_TOKENDATA_H
