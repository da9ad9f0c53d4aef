//===- safetensors_fuzzer.cpp - libFuzzer target: the safetensors reader --===//
//
// Feeds the input to SafetensorsFile::fromBytes as a whole file image (the
// 8-byte header length, the JSON header, the data), then reads what it
// accepted the way the runtime does: every tensor by name, converted to
// float32 and int64 (each conversion refuses the dtypes it does not take).
// A refused file must come back as an error Status; anything else (a crash,
// a sanitizer report, an exception) is a bug in src/Safetensors.cpp.
// See test/fuzz/README.md.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace tpcrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile file;
  Status status =
      SafetensorsFile::fromBytes("fuzz.safetensors", data, size, file);
  if (!status) {
    // A refused file leaves `out` empty and says why.
    if (file.size() != 0 || status.message().empty())
      std::abort();
    return 0;
  }
  std::vector<float> floats;
  std::vector<int64_t> ints;
  uint64_t total = 0;
  for (const std::string &name : file.names()) {
    TensorView view;
    if (!file.get(name, view))
      std::abort();
    // The views lie inside the image and their sizes agree with the shape.
    total += view.numBytes;
    if (view.numBytes && !view.data)
      std::abort();
    (void)toFloat32(view, floats);
    (void)toInt64(view, ints);
  }
  if (total > size)
    std::abort();
  for (const auto &entry : file.metadata())
    (void)entry.second.size();
  // Moving keeps the views valid (they point into the moved heap).
  SafetensorsFile moved = std::move(file);
  for (const auto &entry : moved.tensors())
    if (entry.second.numBytes)
      (void)toFloat32(entry.second, floats);
  return 0;
}
