//===- Executable.cpp - the .tpcx executable format and its loader --------===//
//
// Loading is a sequence of gates, cheapest and least trusting first: the
// framing header (size, magic, version, length) and the CRC are checked before
// FlatBuffers reads a byte, the FlatBuffers verifier before any accessor is
// called, and the meaning of every table before the executable is handed out.
// Each gate turns a bad file into a Status naming the file and the item.
//
// Layering: the loader lies above the decoder. Its last gate is
// decodeProgram (tpcrt/Program.h), the per-kernel meaning; the decoder and
// the program level include nothing of Executable.h.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/KernelTable.h"
#include "tpcrt/Program.h"
#include "tpcrt/Shape.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .tpcx header is little-endian; tpcrt assumes a little-endian host"
#endif

using namespace tpcrt;

namespace {

/// Messages quote names from the file; keep them readable.
constexpr size_t kMaxQuotedChars = 200;

/// CRC-64/XZ table for the reflected ECMA-182 polynomial, built once.
/// CRC-64/XZ (reflected, polynomial 0xC96C5795D7870F42), sliced by eight:
/// entries[k][b] is the CRC of byte b followed by k zero bytes, so eight
/// bytes take eight lookups and no loop-carried byte shifts (the executable's
/// checksum is computed when it is written and when it is read: 3 MB for
/// GPT-3 175B at 512 microbatches).
struct Crc64Table {
  uint64_t entries[8][256];
  Crc64Table() {
    constexpr uint64_t kPoly = 0xC96C5795D7870F42ull;
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t crc = i;
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
      entries[0][i] = crc;
    }
    for (int k = 1; k < 8; ++k)
      for (int i = 0; i < 256; ++i)
        entries[k][i] = (entries[k - 1][i] >> 8) ^
                        entries[0][entries[k - 1][i] & 0xff];
  }
};

uint64_t readLE64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t readLE32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string quote(const flatbuffers::String *text) {
  if (!text)
    return "''";
  std::string s = text->str();
  if (s.size() > kMaxQuotedChars)
    s = s.substr(0, kMaxQuotedChars) + "...";
  return "'" + s + "'";
}

std::string plural(uint64_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// FlatBuffers 2.0.8's verifier checks that a vector's length word is 4-byte
/// aligned but not that 8-byte elements are 8-byte aligned: a crafted payload
/// could make every later read of the vector misaligned (undefined
/// behaviour). A FlatBufferBuilder always aligns them, so refuse the rest.
template <typename T> bool isAligned(const flatbuffers::Vector<T> *v) {
  return !v || reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

Status checkAligned(const flatbuffers::Vector<int64_t> *v,
                    const std::string &what) {
  if (!isAligned(v))
    return Status::error(what + " is not 8-byte aligned");
  return Status::ok();
}

std::vector<int64_t> shapeOf(const flatbuffers::Vector<int64_t> *v) {
  if (!v)
    return {};
  return std::vector<int64_t>(v->begin(), v->end());
}

/// The element count of `shape`, or an error naming `what`.
Status countElements(const std::vector<int64_t> &shape, const std::string &what,
                     int64_t &count) {
  if (!numElementsOf(shape, count))
    return Status::error(what + " " + formatShape(shape) +
                         " has a negative dimension or too many elements");
  return Status::ok();
}

template <typename T> uint32_t sizeOf(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

/// Sets `what` to "<kind> <i> ('<name>')" for diagnostics; an error when the
/// item's `field` (its name) is missing or empty.
Status nameItem(const std::string &kind, uint32_t i,
                const flatbuffers::String *name, const char *field,
                std::string &what) {
  what = kind + " " + std::to_string(i);
  if (!name || name->size() == 0)
    return Status::error(what + " has no " + field);
  what += " (" + quote(name) + ")";
  return Status::ok();
}

Status checkMesh(const fb::Executable &exe) {
  std::set<std::string> names;
  int64_t worldSize = 1;
  for (uint32_t i = 0, e = sizeOf(exe.mesh()); i < e; ++i) {
    const fb::MeshAxis *axis = exe.mesh()->Get(i);
    std::string what;
    if (Status s = nameItem("mesh axis", i, axis->name(), "name", what); !s)
      return s;
    if (!names.insert(axis->name()->str()).second)
      return Status::error(what + ": duplicate axis name");
    if (axis->size() <= 0)
      return Status::error(what + ": size " + std::to_string(axis->size()) +
                           " is not positive");
    // Ranks are ints (MPI); a larger world cannot run.
    if (axis->size() > INT_MAX / worldSize)
      return Status::error(what + ": size " + std::to_string(axis->size()) +
                           " makes the world larger than " +
                           std::to_string(INT_MAX) + " ranks");
    worldSize *= axis->size();
  }
  return Status::ok();
}

/// The splits of a tensor of `rank` dimensions as `what` names them. The
/// "pp" axis splits nothing: its coordinate is a rank's pipeline stage, and
/// a stage holds whole what it owns.
Status checkTensorSplits(const Mesh &mesh, const Splits &splits, size_t rank,
                         const std::string &what) {
  if (Status s = checkSplits(mesh, splits, rank); !s)
    return s.withContext(what);
  int32_t stageAxis = stageAxisOf(mesh);
  for (size_t d = 0; d < splits.size(); ++d)
    for (uint32_t axis : splits[d])
      if (static_cast<int32_t>(axis) == stageAxis)
        return Status::error(what + ": dimension " + std::to_string(d) +
                             " is split over mesh axis \"pp\", whose "
                             "coordinate is a rank's pipeline stage");
  return Status::ok();
}

/// A param's layout: padded_shape (empty, or the view's rank and at least
/// the view per dimension), splits (empty, or one per dimension dividing the
/// padded shape) and a buffer holding exactly one block.
Status checkParamLayout(const Mesh &mesh, const fb::Param &param,
                        const fb::Buffer &buffer, const std::string &what) {
  if (Status s = checkAligned(param.padded_shape(), "padded_shape"); !s)
    return s.withContext(what);
  std::vector<int64_t> view = shapeOf(param.view_shape());
  std::vector<int64_t> padded = shapeOf(param.padded_shape());
  if (padded.empty())
    padded = view;
  if (padded.size() != view.size())
    return Status::error(what + ": padded_shape " + formatShape(padded) +
                         " and view_shape " + formatShape(view) +
                         " have different ranks");
  for (size_t d = 0; d < view.size(); ++d)
    if (padded[d] < view[d])
      return Status::error(what + ": padded_shape " + formatShape(padded) +
                           " is smaller than view_shape " + formatShape(view) +
                           " in dimension " + std::to_string(d));
  Splits splits = splitsOf(param.splits());
  if (Status s = checkTensorSplits(mesh, splits, padded.size(), what); !s)
    return s;
  Block block;
  std::vector<int64_t> origin(mesh.sizes.size(), 0);
  if (Status s = blockOf(mesh, origin, padded, splits, block); !s)
    return s.withContext(what + ": padded_shape " + formatShape(padded));
  std::vector<int64_t> shape = shapeOf(buffer.shape());
  if (shape != block.shape)
    return Status::error(
        what + ": buffer " + std::to_string(param.buffer()) + " is " +
        formatShape(shape) + ", expected " + formatShape(block.shape) +
        (!splits.empty() ? " (the block of padded_shape " +
                               formatShape(padded) + " a rank holds)"
         : padded != view ? std::string(" (its padded_shape)")
                          : std::string(" (its view_shape)")));
  return Status::ok();
}

Status checkBuffers(const fb::Executable &exe,
                    std::vector<int64_t> &bufferElements) {
  uint64_t arena = exe.arena_bytes();
  for (uint32_t i = 0, e = sizeOf(exe.buffers()); i < e; ++i) {
    const fb::Buffer *buffer = exe.buffers()->Get(i);
    std::string what = "buffer " + std::to_string(i);
    uint64_t elementSize = executableDTypeSize(buffer->dtype());
    if (elementSize == 0)
      return Status::error(what + ": unknown dtype " +
                           std::to_string(static_cast<int>(buffer->dtype())));
    uint64_t offset = buffer->offset(), size = buffer->size();
    // Written so that no sum can overflow: offset + size <= arena.
    if (size > arena || offset > arena - size)
      return Status::error(what + ": bytes [" + std::to_string(offset) + ", +" +
                           std::to_string(size) +
                           ") lie outside the arena of " +
                           std::to_string(arena) + " bytes");
    // Kernels read elements in place, so each must be naturally aligned
    // (the arena itself is 64-byte aligned).
    if (offset % elementSize != 0)
      return Status::error(what + ": offset " + std::to_string(offset) +
                           " is not a multiple of " +
                           std::to_string(elementSize) + " (the size of " +
                           executableDTypeName(buffer->dtype()) + ")");
    if (Status s = checkAligned(buffer->shape(), "shape"); !s)
      return s.withContext(what);
    int64_t elements;
    std::vector<int64_t> shape = shapeOf(buffer->shape());
    if (Status s = countElements(shape, "shape", elements); !s)
      return s.withContext(what);
    uint64_t needed = 0;
    bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(elements),
                                           elementSize, &needed);
    if (overflow || needed != size)
      return Status::error(
          what + ": size is " + std::to_string(size) + " bytes but shape " +
          formatShape(shape) + " of " + executableDTypeName(buffer->dtype()) +
          " needs " +
          (overflow ? std::string("more than 2^64") : std::to_string(needed)));
    bufferElements.push_back(elements);
  }
  return Status::ok();
}

std::string bufferRangeError(const std::string &what, uint32_t id,
                             size_t numBuffers) {
  return what + " is buffer " + std::to_string(id) +
         " but the executable has " + plural(numBuffers, "buffer");
}

Status checkParams(const fb::Executable &exe, const Mesh &mesh,
                   const std::vector<int64_t> &bufferElements) {
  std::set<std::string> names;
  for (uint32_t i = 0, e = sizeOf(exe.params()); i < e; ++i) {
    const fb::Param *param = exe.params()->Get(i);
    std::string what;
    if (Status s = nameItem("param", i, param->hf_name(), "hf_name", what); !s)
      return s;
    if (!names.insert(param->hf_name()->str()).second)
      return Status::error(what + ": duplicate parameter name");
    if (param->buffer() >= bufferElements.size())
      return Status::error(bufferRangeError(
          what + ": its view", param->buffer(), bufferElements.size()));
    if (Status s = checkAligned(param->hf_shape(), "hf_shape"); !s)
      return s.withContext(what);
    if (Status s = checkAligned(param->view_shape(), "view_shape"); !s)
      return s.withContext(what);
    std::vector<int64_t> hfShape = shapeOf(param->hf_shape());
    std::vector<int64_t> viewShape = shapeOf(param->view_shape());
    int64_t hfElements, viewElements;
    if (Status s = countElements(hfShape, "hf_shape", hfElements); !s)
      return s.withContext(what);
    if (Status s = countElements(viewShape, "view_shape", viewElements); !s)
      return s.withContext(what);
    if (viewElements != hfElements)
      return Status::error(what + ": view_shape " + formatShape(viewShape) +
                           " has " + plural(viewElements, "element") +
                           " but hf_shape " + formatShape(hfShape) + " has " +
                           std::to_string(hfElements));
    const fb::Buffer *buffer = exe.buffers()->Get(param->buffer());
    if (!isFloatDType(buffer->dtype()))
      return Status::error(
          what + ": buffer " + std::to_string(param->buffer()) + " is " +
          executableDTypeName(buffer->dtype()) + ", expected f32, bf16 or f16");
    if (param->init() > fb::ParamInit::MAX)
      return Status::error(what + ": unknown init kind " +
                           std::to_string(static_cast<int>(param->init())));
    if (!std::isfinite(param->init_std()) || param->init_std() < 0)
      return Status::error(what + ": init_std " +
                           std::to_string(param->init_std()) +
                           " is not a finite value >= 0");
    if (Status s = checkParamLayout(mesh, *param, *buffer, what); !s)
      return s;
  }
  return Status::ok();
}

/// What the contract says of the bindings it names: the token inputs are
/// [batch, seq] i64, the step an i64 scalar, the loss, grad_norm and lr f32
/// scalars, the logits floats.
Status checkKnownBinding(const fb::Binding &binding, const fb::Buffer &buffer,
                         const std::string &what) {
  std::string name = binding.name()->str();
  std::vector<int64_t> shape = shapeOf(buffer.shape());
  std::string found = std::string(executableDTypeName(buffer.dtype())) + " " +
                      formatShape(shape);
  bool tokens = name == "input_ids" || name == "labels";
  if (tokens && (buffer.dtype() != fb::DType::I64 || shape.size() != 2))
    return Status::error(what + ": buffer " + std::to_string(binding.buffer()) +
                         " is " + found + ", expected i64 [batch, seq]");
  if (name == "step" && (buffer.dtype() != fb::DType::I64 || !shape.empty()))
    return Status::error(what + ": buffer " + std::to_string(binding.buffer()) +
                         " is " + found + ", expected an i64 scalar");
  bool scalar = name == "loss" || name == "grad_norm" || name == "lr";
  if (scalar && (buffer.dtype() != fb::DType::F32 || !shape.empty()))
    return Status::error(what + ": buffer " + std::to_string(binding.buffer()) +
                         " is " + found + ", expected an f32 scalar");
  if (name == "logits" && !isFloatDType(buffer.dtype()))
    return Status::error(what + ": buffer " + std::to_string(binding.buffer()) +
                         " is " + found + ", expected f32, bf16 or f16");
  return Status::ok();
}

/// Names, buffers and bounds of a binding list; `contractNames` checks the
/// names INTERFACE.md gives a type to (inputs and outputs, not grads).
Status checkBindings(
    const fb::Executable &exe, const Mesh &mesh,
    const flatbuffers::Vector<flatbuffers::Offset<fb::Binding>> *bindings,
    const char *kind, size_t numBuffers, bool contractNames = true) {
  std::set<std::string> names;
  for (uint32_t i = 0, e = sizeOf(bindings); i < e; ++i) {
    const fb::Binding *binding = bindings->Get(i);
    std::string what;
    if (Status s = nameItem(kind, i, binding->name(), "name", what); !s)
      return s;
    if (!names.insert(binding->name()->str()).second)
      return Status::error(what + ": duplicate " + kind + " name");
    if (binding->buffer() >= numBuffers)
      return Status::error(
          bufferRangeError(what + ": it", binding->buffer(), numBuffers));
    if (binding->value_bound() < 0)
      return Status::error(what + ": value_bound " +
                           std::to_string(binding->value_bound()) +
                           " is negative");
    if (contractNames)
      if (Status s = checkKnownBinding(
              *binding, *exe.buffers()->Get(binding->buffer()), what);
          !s)
        return s;
    // Only inputs are split; outputs and grads are whole on every rank.
    Splits splits = splitsOf(binding->splits());
    if (!splits.empty() && std::string(kind) != "input")
      return Status::error(what + ": has splits, but " + kind +
                           "s are whole on every rank");
    size_t rank = sizeOf(exe.buffers()->Get(binding->buffer())->shape());
    if (Status s = checkTensorSplits(mesh, splits, rank, what); !s)
      return s;
  }
  return Status::ok();
}

/// A state or grad buffer: f32 with the shape of its param's buffer (the
/// param's view, or on a mesh the rank's block of it).
Status checkLikeParam(const fb::Executable &exe, const fb::Param &param,
                      uint32_t id, const std::string &what) {
  const fb::Buffer *buffer = exe.buffers()->Get(id);
  std::vector<int64_t> shape = shapeOf(buffer->shape());
  std::vector<int64_t> expected =
      shapeOf(exe.buffers()->Get(param.buffer())->shape());
  if (buffer->dtype() != fb::DType::F32 || shape != expected)
    return Status::error(what + ": buffer " + std::to_string(id) + " is " +
                         executableDTypeName(buffer->dtype()) + " " +
                         formatShape(shape) + ", expected f32 " +
                         formatShape(expected) + " (the param's layout)");
  return Status::ok();
}

/// Optimizer state: named, unique per param, an f32 buffer of the param's
/// layout.
Status checkState(const fb::Executable &exe, size_t numBuffers) {
  std::set<std::pair<uint32_t, std::string>> seen;
  uint32_t numParams = sizeOf(exe.params());
  for (uint32_t i = 0, e = sizeOf(exe.state()); i < e; ++i) {
    const fb::State *state = exe.state()->Get(i);
    std::string what;
    if (Status s = nameItem("state", i, state->name(), "name", what); !s)
      return s;
    if (state->param() >= numParams)
      return Status::error(what + ": param " + std::to_string(state->param()) +
                           " but the executable has " +
                           plural(numParams, "param"));
    const fb::Param *param = exe.params()->Get(state->param());
    what += " of param " + quote(param->hf_name());
    if (!seen.insert({state->param(), state->name()->str()}).second)
      return Status::error(what + ": duplicate state name for this param");
    if (state->buffer() >= numBuffers)
      return Status::error(
          bufferRangeError(what + ": it", state->buffer(), numBuffers));
    if (Status s = checkLikeParam(exe, *param, state->buffer(), what); !s)
      return s;
  }
  return Status::ok();
}

/// Gradient bindings: each names a param, at most once, and is an f32 buffer
/// of that param's layout.
Status checkGrads(const fb::Executable &exe, const Mesh &mesh,
                  size_t numBuffers) {
  if (Status s = checkBindings(exe, mesh, exe.grads(), "grad", numBuffers,
                               /*contractNames=*/false);
      !s)
    return s;
  // The params by name (the first of a name first): each grad's is found
  // by a search, not by comparing it with every param's.
  auto nameOf = [](const flatbuffers::String *name) {
    return std::string_view(name->c_str(), name->size());
  };
  std::vector<std::pair<std::string_view, uint32_t>> byName;
  byName.reserve(sizeOf(exe.params()));
  for (uint32_t p = 0, n = sizeOf(exe.params()); p < n; ++p)
    byName.emplace_back(nameOf(exe.params()->Get(p)->hf_name()), p);
  std::sort(byName.begin(), byName.end());
  for (uint32_t i = 0, e = sizeOf(exe.grads()); i < e; ++i) {
    const fb::Binding *grad = exe.grads()->Get(i);
    std::string what =
        "grad " + std::to_string(i) + " (" + quote(grad->name()) + ")";
    const fb::Param *param = nullptr;
    auto it = std::lower_bound(byName.begin(), byName.end(),
                               std::make_pair(nameOf(grad->name()), 0u));
    if (it != byName.end() && it->first == nameOf(grad->name()))
      param = exe.params()->Get(it->second);
    if (!param)
      return Status::error(what + ": no param has this name");
    if (Status s = checkLikeParam(exe, *param, grad->buffer(), what); !s)
      return s;
  }
  return Status::ok();
}

/// Pools and pooled buffers: a pool has slots and a stride that is a
/// multiple of 64 and holds each of its buffers; every slot of a pooled
/// buffer lies in the arena; params, state, outputs and grads are not
/// pooled, an input only in a by_microbatch pool (slot i: microbatch i).
/// Pools need stage_actions (Actions.cpp checks them and the functions).
Status checkPools(const fb::Executable &exe) {
  uint32_t numPools = sizeOf(exe.pools());
  for (uint32_t p = 0; p < numPools; ++p)
    if (Status s = checkPool(*exe.pools()->Get(p), p); !s)
      return s;
  uint64_t arena = exe.arena_bytes();
  std::vector<int32_t> poolOf(sizeOf(exe.buffers()), -1);
  for (uint32_t b = 0, e = sizeOf(exe.buffers()); b < e; ++b) {
    const fb::Buffer *buffer = exe.buffers()->Get(b);
    int32_t index = buffer->pool();
    if (index == -1)
      continue;
    std::string what = "buffer " + std::to_string(b);
    if (index < 0 || static_cast<uint32_t>(index) >= numPools)
      return Status::error(
          what + ": pool " + std::to_string(index) +
          " but the executable has " + plural(numPools, "pool") +
          (sizeOf(exe.stage_actions()) ? ""
                                       : " (pools come with stage_actions)"));
    const fb::Pool *pool = exe.pools()->Get(index);
    if (buffer->size() > pool->stride())
      return Status::error(what + ": " + plural(buffer->size(), "byte") +
                           ", more than the stride " +
                           std::to_string(pool->stride()) + " of its pool " +
                           std::to_string(index) +
                           " (its slots would overlap)");
    // offset + (slots - 1) * stride + size <= arena, without overflow
    // (checkBuffers checked offset + size <= arena).
    uint64_t last = pool->slots() - 1, span = 0;
    if (__builtin_mul_overflow(last, pool->stride(), &span) ||
        span > arena - buffer->offset() - buffer->size())
      return Status::error(what + ": slot " + std::to_string(last) +
                           " of pool " + std::to_string(index) +
                           " (stride " + std::to_string(pool->stride()) +
                           ") lies outside the arena of " +
                           std::to_string(arena) + " bytes");
    poolOf[b] = index;
  }
  auto notPooled = [&](const std::string &what, uint32_t buffer,
                       const char *kinds) {
    if (poolOf[buffer] < 0)
      return Status::ok();
    return Status::error(what + ": buffer " + std::to_string(buffer) +
                         " is pooled (pool " + std::to_string(poolOf[buffer]) +
                         "); " + kinds + " are not");
  };
  for (uint32_t i = 0, e = sizeOf(exe.params()); i < e; ++i)
    if (Status s = notPooled("param " + std::to_string(i) + " (" +
                                 quote(exe.params()->Get(i)->hf_name()) + ")",
                             exe.params()->Get(i)->buffer(),
                             "params, state, outputs and grads");
        !s)
      return s;
  for (uint32_t i = 0, e = sizeOf(exe.state()); i < e; ++i)
    if (Status s = notPooled("state " + std::to_string(i) + " (" +
                                 quote(exe.state()->Get(i)->name()) + ")",
                             exe.state()->Get(i)->buffer(),
                             "params, state, outputs and grads");
        !s)
      return s;
  for (auto [list, kind] : {std::make_pair(exe.outputs(), "output"),
                            std::make_pair(exe.grads(), "grad")})
    for (uint32_t i = 0, e = sizeOf(list); i < e; ++i)
      if (Status s = notPooled(std::string(kind) + " " + std::to_string(i) +
                                   " (" + quote(list->Get(i)->name()) + ")",
                               list->Get(i)->buffer(),
                               "params, state, outputs and grads");
          !s)
        return s;
  for (uint32_t i = 0, e = sizeOf(exe.inputs()); i < e; ++i) {
    const fb::Binding *input = exe.inputs()->Get(i);
    int32_t index = poolOf[input->buffer()];
    if (index < 0)
      continue;
    std::string what = "input " + std::to_string(i) + " (" +
                       quote(input->name()) + "): buffer " +
                       std::to_string(input->buffer()) + " is in pool " +
                       std::to_string(index);
    if (!exe.pools()->Get(index)->by_microbatch())
      return Status::error(what + ", which is not by_microbatch (an input's "
                                  "slots are the microbatches of the batch)");
    if (isRuntimeInput(input->name()->str()))
      return Status::error(what + ", but the runtime writes it itself, once");
    if (sizeOf(exe.buffers()->Get(input->buffer())->shape()) == 0)
      return Status::error(what + ", but it is a scalar (the microbatches "
                                  "follow each other along dimension 0)");
  }
  return Status::ok();
}

/// The global shape of every input (its buffer's shape times the ranks
/// splitting each dimension and, in a by_microbatch pool, dimension 0 times
/// the slots) fits int64: the host fills inputs globally (Inputs.cpp,
/// TokenData.cpp). After checkBindings and checkPools.
Status checkInputShapes(const fb::Executable &exe, const Mesh &mesh) {
  for (uint32_t i = 0, e = sizeOf(exe.inputs()); i < e; ++i) {
    const fb::Binding *input = exe.inputs()->Get(i);
    const fb::Buffer *buffer = exe.buffers()->Get(input->buffer());
    uint32_t microbatches =
        buffer->pool() >= 0 ? exe.pools()->Get(buffer->pool())->slots() : 1;
    if (Status s = checkGlobalShape(mesh, shapeOf(buffer->shape()),
                                    splitsOf(input->splits()), microbatches);
        !s)
      return s.withContext("input " + std::to_string(i) + " (" +
                           quote(input->name()) + ")");
  }
  return Status::ok();
}

Status checkKernels(const fb::Executable &exe, const Mesh &mesh,
                    size_t numBuffers) {
  int32_t stageAxis = stageAxisOf(mesh);
  for (uint32_t i = 0, e = sizeOf(exe.kernels()); i < e; ++i) {
    const fb::Kernel *kernel = exe.kernels()->Get(i);
    std::string what = "kernel " + std::to_string(i);
    const KernelInfo *info = kernelInfo(kernel->op());
    if (!info)
      return Status::error(what + ": unknown opcode " +
                           std::to_string(static_cast<int>(kernel->op())));
    what += " (" + std::string(info->name) + ")";

    // A rank runs the kernels of its stage, its coordinate on "pp".
    uint32_t stage = kernel->stage();
    if (stage != 0 && stageAxis < 0)
      return Status::error(what + ": stage " + std::to_string(stage) +
                           ", but the executable has no \"pp\" mesh axis "
                           "(without one every kernel is on stage 0)");
    if (stageAxis >= 0 && stage >= mesh.sizes[stageAxis])
      return Status::error(what + ": stage " + std::to_string(stage) +
                           " is outside the " +
                           std::to_string(mesh.sizes[stageAxis]) +
                           " stages of mesh axis \"pp\"");

    if (Status s = checkAligned(kernel->int_attrs(), "int_attrs"); !s)
      return s.withContext(what);
    if (!isAligned(kernel->float_attrs()))
      return Status::error(what + ": float_attrs is not 8-byte aligned");

    uint32_t numOperands = sizeOf(kernel->operands());
    if (numOperands < info->minOperands || numOperands > info->maxOperands) {
      std::string expected = info->minOperands == info->maxOperands
                                 ? std::to_string(info->minOperands)
                                 : std::to_string(info->minOperands) + " to " +
                                       std::to_string(info->maxOperands);
      return Status::error(what + ": has " + plural(numOperands, "operand") +
                           ", expected " + expected);
    }
    uint32_t numResults = sizeOf(kernel->results());
    if (numResults != info->numResults)
      return Status::error(what + ": has " + plural(numResults, "result") +
                           ", expected " + std::to_string(info->numResults));
    for (uint32_t j = 0; j < numOperands; ++j)
      if (kernel->operands()->Get(j) >= numBuffers)
        return Status::error(
            bufferRangeError(what + ": operand " + std::to_string(j),
                             kernel->operands()->Get(j), numBuffers));
    for (uint32_t j = 0; j < numResults; ++j)
      if (kernel->results()->Get(j) >= numBuffers)
        return Status::error(
            bufferRangeError(what + ": result " + std::to_string(j),
                             kernel->results()->Get(j), numBuffers));
  }
  return Status::ok();
}

/// stage_planned_peak_bytes: none, or one per stage of the "pp" axis, each
/// within the arena.
Status checkStagePeaks(const fb::Executable &exe, const Mesh &mesh) {
  if (!isAligned(exe.stage_planned_peak_bytes()))
    return Status::error("stage_planned_peak_bytes is not 8-byte aligned");
  uint32_t count = sizeOf(exe.stage_planned_peak_bytes());
  if (count == 0)
    return Status::ok();
  int32_t stageAxis = stageAxisOf(mesh);
  std::string entries = "stage_planned_peak_bytes has " +
                        std::to_string(count) +
                        (count == 1 ? " entry" : " entries");
  if (stageAxis < 0)
    return Status::error(entries +
                         " but the executable has no \"pp\" mesh axis");
  if (count != mesh.sizes[stageAxis])
    return Status::error(entries + ", expected one per stage: " +
                         std::to_string(mesh.sizes[stageAxis]));
  for (uint32_t i = 0; i < count; ++i)
    if (exe.stage_planned_peak_bytes()->Get(i) > exe.arena_bytes())
      return Status::error(
          "stage_planned_peak_bytes[" + std::to_string(i) + "] " +
          std::to_string(exe.stage_planned_peak_bytes()->Get(i)) +
          " exceeds arena_bytes " + std::to_string(exe.arena_bytes()));
  return Status::ok();
}

/// The framing checks that need only the header and the file size. On
/// success `payloadSize` is the validated payload length.
Status checkFrame(const uint8_t *header, uint64_t fileSize,
                  uint64_t &payloadSize) {
  if (fileSize < kExecutableHeaderBytes)
    return Status::error(
        "file is " + plural(fileSize, "byte") + ", smaller than the " +
        std::to_string(kExecutableHeaderBytes) + "-byte .tpcx header");
  if (std::memcmp(header, kExecutableMagic, sizeof(kExecutableMagic)) != 0)
    return Status::error("not a tpc executable (bad magic; expected "
                         "\"TPCX\\0\\0\\0\\0\")");
  uint32_t version = readLE32(header + 8);
  if (version != kExecutableFormatVersion)
    return Status::error("format version " + std::to_string(version) +
                         " is not supported (this runtime reads version " +
                         std::to_string(kExecutableFormatVersion) + ")");
  uint32_t reserved = readLE32(header + 12);
  if (reserved != 0)
    return Status::error("reserved header field is " +
                         std::to_string(reserved) + ", expected 0");
  payloadSize = readLE64(header + 16);
  uint64_t actual = fileSize - kExecutableHeaderBytes;
  if (payloadSize != actual)
    return Status::error(
        std::string(payloadSize > actual ? "truncated" : "trailing bytes") +
        ": the header says the payload is " + plural(payloadSize, "byte") +
        " but the file has " + std::to_string(actual) + " after the header");
  // The verifier asserts on larger buffers; a real payload is far smaller
  // (it holds no weights).
  if (payloadSize >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error("payload of " + plural(payloadSize, "byte") +
                         " exceeds the FlatBuffers limit");
  return Status::ok();
}

/// Everything after the frame: checksum, verifier, meaning.
Status checkPayload(const uint8_t *file, uint64_t payloadSize) {
  const uint8_t *payload = file + kExecutableHeaderBytes;
  uint64_t expected = readLE64(file + 24);
  uint64_t actual = crc64(payload, payloadSize);
  if (expected != actual) {
    char text[96];
    std::snprintf(text, sizeof(text),
                  "checksum mismatch (header 0x%016llx, payload 0x%016llx)",
                  static_cast<unsigned long long>(expected),
                  static_cast<unsigned long long>(actual));
    return Status::error(text);
  }
  flatbuffers::Verifier verifier(payload, payloadSize, kMaxVerifierDepth,
                                 kMaxVerifierTables);
  if (!fb::VerifyExecutableBuffer(verifier))
    return Status::error("payload is not a valid FlatBuffer of tpcx.fbs "
                         "(identifier \"TPCX\")");
  return checkExecutable(*fb::GetExecutable(payload));
}

std::string errnoText(int err) { return std::strerror(err); }

bool readAll(int fd, uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

uint64_t tpcrt::crc64(const void *data, size_t size, uint64_t crc) {
  static const Crc64Table table;
  const auto *p = static_cast<const uint8_t *>(data);
  const auto &t = table.entries;
  crc = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) // little-endian, whatever the host
      word = (word << 8) | p[b];
    crc ^= word;
    crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^
          t[5][(crc >> 16) & 0xff] ^ t[4][(crc >> 24) & 0xff] ^
          t[3][(crc >> 32) & 0xff] ^ t[2][(crc >> 40) & 0xff] ^
          t[1][(crc >> 48) & 0xff] ^ t[0][crc >> 56];
  }
  for (; size > 0; --size, ++p)
    crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
  return ~crc;
}

const char *tpcrt::opCodeName(fb::OpCode op) {
  const KernelInfo *info = kernelInfo(op);
  return info ? info->name : nullptr;
}

std::vector<uint8_t> tpcrt::serializeExecutable(const uint8_t *payload,
                                                size_t size) {
  std::vector<uint8_t> out(kExecutableHeaderBytes + size);
  std::memcpy(out.data(), kExecutableMagic, sizeof(kExecutableMagic));
  uint32_t version = kExecutableFormatVersion, reserved = 0;
  uint64_t length = size, checksum = crc64(payload, size);
  std::memcpy(out.data() + 8, &version, 4);
  std::memcpy(out.data() + 12, &reserved, 4);
  std::memcpy(out.data() + 16, &length, 8);
  std::memcpy(out.data() + 24, &checksum, 8);
  if (size)
    std::memcpy(out.data() + kExecutableHeaderBytes, payload, size);
  return out;
}

Status tpcrt::writeExecutableFile(const std::string &path,
                                  const uint8_t *payload, size_t size) {
  std::vector<uint8_t> image = serializeExecutable(payload, size);
  return writeFileAtomically(path, {{image.data(), image.size()}});
}

Status tpcrt::checkExecutable(const fb::Executable &exe) {
  if (exe.schema_version() != kExecutableSchemaVersion)
    return Status::error("schema version " +
                         std::to_string(exe.schema_version()) +
                         " is not supported (this runtime reads version " +
                         std::to_string(kExecutableSchemaVersion) + ")");
  if (Status s = checkMesh(exe); !s)
    return s;
  std::vector<int64_t> bufferElements;
  if (Status s = checkBuffers(exe, bufferElements); !s)
    return s;
  if (exe.planned_peak_bytes() > exe.arena_bytes())
    return Status::error(
        "planned_peak_bytes " + std::to_string(exe.planned_peak_bytes()) +
        " exceeds arena_bytes " + std::to_string(exe.arena_bytes()));
  Mesh mesh = meshOf(exe);
  if (Status s = checkStagePeaks(exe, mesh); !s)
    return s;
  if (Status s = checkParams(exe, mesh, bufferElements); !s)
    return s;
  if (Status s = checkBindings(exe, mesh, exe.inputs(), "input",
                               bufferElements.size());
      !s)
    return s;
  if (Status s = checkBindings(exe, mesh, exe.outputs(), "output",
                               bufferElements.size());
      !s)
    return s;
  if (Status s = checkState(exe, bufferElements.size()); !s)
    return s;
  if (Status s = checkGrads(exe, mesh, bufferElements.size()); !s)
    return s;
  if (Status s = checkPools(exe); !s)
    return s;
  if (Status s = checkInputShapes(exe, mesh); !s)
    return s;
  if (Status s = checkKernels(exe, mesh, bufferElements.size()); !s)
    return s;
  // Last: the per-kernel meaning, lifetimes and the plan's offsets.
  Program program;
  return decodeProgram(exe, program);
}

Status tpcrt::loadExecutableFromBytes(const std::string &displayName,
                                      const void *bytes, size_t size,
                                      LoadedExecutable &out) {
  out = LoadedExecutable();
  const auto *data = static_cast<const uint8_t *>(bytes);
  uint64_t payloadSize = 0;
  if (Status s = checkFrame(data, size, payloadSize); !s)
    return s.withContext(displayName);
  // Copy first: the heap copy is aligned for FlatBuffers, the caller's bytes
  // need not be.
  std::vector<uint8_t> image(data, data + size);
  if (Status s = checkPayload(image.data(), payloadSize); !s)
    return s.withContext(displayName);
  out.path_ = displayName;
  out.bytes_ = std::move(image);
  return Status::ok();
}

Status tpcrt::loadExecutable(const std::string &path, LoadedExecutable &out) {
  out = LoadedExecutable();
  int fd = -1;
  uint64_t fileSize = 0;
  if (Status s = openRegularFile(path, fd, fileSize); !s)
    return s;
  // Check the frame from the header alone, so a huge or foreign file is
  // refused without reading it.
  uint8_t header[kExecutableHeaderBytes] = {};
  uint64_t payloadSize = 0;
  Status s = Status::ok();
  if (fileSize >= kExecutableHeaderBytes &&
      !readAll(fd, header, kExecutableHeaderBytes))
    s = Status::error("cannot read: " + errnoText(errno));
  else
    s = checkFrame(header, fileSize, payloadSize);
  std::vector<uint8_t> image;
  if (s) {
    image.resize(fileSize);
    std::memcpy(image.data(), header, kExecutableHeaderBytes);
    if (!readAll(fd, image.data() + kExecutableHeaderBytes, payloadSize))
      s = Status::error("cannot read: the file changed while being read");
  }
  ::close(fd);
  if (s)
    s = checkPayload(image.data(), payloadSize);
  if (!s)
    return s.withContext(path);
  out.path_ = path;
  out.bytes_ = std::move(image);
  return Status::ok();
}
