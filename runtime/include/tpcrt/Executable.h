//===- Executable.h - the .tpcx format and its loader ----------*- C++ -*-===//
//
// A .tpcx file is a fixed 32-byte little-endian framing header followed by a
// FlatBuffer of runtime/schema/tpcx.fbs:
//
//   offset  size  field
//        0     8  magic "TPCX\0\0\0\0"
//        8     4  format version (kExecutableFormatVersion)
//       12     4  reserved, zero
//       16     8  payload length in bytes (== file size - 32)
//       24     8  CRC-64/XZ of the payload
//       32     n  payload: FlatBuffer, file identifier "TPCX"
//
// The framing lets a damaged or foreign file be refused before FlatBuffers
// reads a byte of it; the loader then runs the FlatBuffers verifier and checks
// what the payload means (buffers inside the arena, operand ids in range,
// operand counts per opcode, ...). A file is either fully valid or refused
// with a message naming the file and the offending item: never half-run.
// See docs/runtime/executable-format.md.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_EXECUTABLE_H
#define TPCRT_EXECUTABLE_H

#include "tpcrt/ExecutableDType.h"
#include "tpcrt/Status.h"
#include "tpcx_generated.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// Version of the framing (the 32-byte header). A reader refuses any other.
constexpr uint32_t kExecutableFormatVersion = 1;

/// Version of the meaning of the payload (Executable.schema_version). Bump it
/// when the meaning of an existing field changes; appending fields does not
/// require it.
constexpr uint32_t kExecutableSchemaVersion = 1;

/// The FlatBuffers verifier's bounds, for the loader and for the compiler's
/// own check of what it writes. Executable -> Param -> ParamSlice is three
/// tables deep; anything far deeper is hostile, and bounding it bounds the
/// verifier's recursion. Every table is at least a few bytes, so the
/// payload size already bounds the count; this bound only caps the
/// verifier's work on a hostile file (a large pipeline executable holds
/// millions of tables).
constexpr uint32_t kMaxVerifierDepth = 16;
constexpr uint32_t kMaxVerifierTables = 1u << 26;

constexpr size_t kExecutableHeaderBytes = 32;
constexpr char kExecutableMagic[8] = {'T', 'P', 'C', 'X', 0, 0, 0, 0};

/// CRC-64/XZ (ECMA-182 polynomial, reflected, init and xorout all ones); the
/// check value of "123456789" is 0x995DC9BBDF1939FA. A CRC, unlike a plain
/// hash, is guaranteed to detect every single-bit flip and every burst of up
/// to 64 bits. `crc` continues a previous result (0 to start).
uint64_t crc64(const void *data, size_t size, uint64_t crc = 0);

/// The tpc dialect mnemonic of an opcode ("linear", "batch_matmul"), or
/// nullptr for a value this runtime does not know.
const char *opCodeName(fb::OpCode op);

/// Frames a FlatBuffer payload as a .tpcx file image (header + payload).
std::vector<uint8_t> serializeExecutable(const uint8_t *payload, size_t size);

/// Writes the framed payload to `path` atomically: written to
/// `path.tmp.<pid>`, flushed to disk, then renamed over `path`.
Status writeExecutableFile(const std::string &path, const uint8_t *payload,
                           size_t size);

/// A validated executable. Owns the file's bytes; the FlatBuffers tables it
/// hands out point into them and live as long as this object. Move-only.
class LoadedExecutable {
public:
  LoadedExecutable() = default;
  LoadedExecutable(LoadedExecutable &&) noexcept = default;
  LoadedExecutable &operator=(LoadedExecutable &&) noexcept = default;
  LoadedExecutable(const LoadedExecutable &) = delete;
  LoadedExecutable &operator=(const LoadedExecutable &) = delete;

  /// The path (or display name) it was loaded from.
  const std::string &path() const { return path_; }
  bool empty() const { return bytes_.empty(); }

  /// The verified root table; only valid when !empty().
  const fb::Executable &executable() const {
    return *fb::GetExecutable(bytes_.data() + kExecutableHeaderBytes);
  }
  const uint8_t *payload() const {
    return bytes_.data() + kExecutableHeaderBytes;
  }
  size_t payloadSize() const { return bytes_.size() - kExecutableHeaderBytes; }

private:
  friend Status loadExecutable(const std::string &, LoadedExecutable &);
  friend Status loadExecutableFromBytes(const std::string &, const void *,
                                        size_t, LoadedExecutable &);
  std::string path_;
  /// The whole file image; heap storage keeps the payload 8-byte aligned (the
  /// header is 32 bytes), as FlatBuffers' aligned scalar reads expect.
  std::vector<uint8_t> bytes_;
};

/// Reads and validates `path`. On error `out` is left empty and the message
/// starts with the path.
Status loadExecutable(const std::string &path, LoadedExecutable &out);

/// Validates an in-memory file image (copied); `displayName` stands for the
/// file in messages.
Status loadExecutableFromBytes(const std::string &displayName,
                               const void *bytes, size_t size,
                               LoadedExecutable &out);

/// Checks only the payload's meaning (no framing, no FlatBuffers verifier:
/// `executable` must already be verified). Exposed so the compiler can check
/// what it is about to write.
Status checkExecutable(const fb::Executable &executable);

} // namespace tpcrt

#endif // TPCRT_EXECUTABLE_H
