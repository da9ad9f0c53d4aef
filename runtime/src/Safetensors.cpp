//===- Safetensors.cpp - read and write safetensors files -----------------===//
//
// The header is parsed by nlohmann::json through its SAX interface with our
// own handler, which never throws (a parse error is a return value), builds
// the document, refuses duplicate keys and bounds the nesting depth. Every
// value is type-checked before it is read, so no throwing accessor is ever
// reached: the runtime must turn a hostile file into an error, not a signal.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Safetensors.h"
#include "tpcrt/FileIO.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; tpcrt assumes a little-endian host"
#endif

using namespace tpcrt;
using Json = nlohmann::json;

namespace {

/// The reference implementation refuses headers above 100 MB; so do we, so
/// that a corrupt length never makes us parse (or allocate) gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// Index files are small (a few MB for the largest public models).
constexpr uint64_t kMaxIndexBytes = 100'000'000;

/// A safetensors header needs three levels (root, entry, shape); anything far
/// deeper is hostile, and bounding it bounds the parser's own stack.
constexpr size_t kMaxJsonDepth = 32;

/// Messages quote parts of the file; keep them readable.
constexpr size_t kMaxQuotedChars = 200;

struct DTypeInfo {
  DType dtype;
  const char *name;
  uint64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::Bool, "BOOL", 1},      {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},          {DType::U16, "U16", 2},
    {DType::I16, "I16", 2},        {DType::U32, "U32", 4},
    {DType::I32, "I32", 4},        {DType::U64, "U64", 8},
    {DType::I64, "I64", 8},        {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},      {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},        {DType::F8E4M3, "F8_E4M3", 1},
    {DType::F8E5M2, "F8_E5M2", 1}, {DType::F8E8M0, "F8_E8M0", 1},
    {DType::C64, "C64", 8},
};

const DTypeInfo &infoOf(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info;
  return kDTypes[0]; // Unreachable: every enumerator is in the table.
}

std::string quote(const std::string &text) {
  if (text.size() <= kMaxQuotedChars)
    return "'" + text + "'";
  return "'" + text.substr(0, kMaxQuotedChars) + "...'";
}

std::string tensorContext(const std::string &name) {
  return "tensor " + quote(name);
}

/// A JSON value as text for a message. The replace handler makes dump()
/// total (it would otherwise throw on invalid UTF-8, which parsed text never
/// has, but a message is no place to find out).
std::string jsonText(const Json &value) {
  std::string text =
      value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxQuotedChars)
    text = text.substr(0, kMaxQuotedChars) + "...";
  return text;
}

std::string errnoText(int err) { return std::strerror(err); }

/// Builds a Json document from SAX events. Unlike nlohmann's own DOM parser
/// it refuses duplicate keys (which would otherwise silently keep the last
/// tensor of a name) and deep nesting, and it keeps the parser's message.
class DomBuilder {
public:
  explicit DomBuilder(Json &root) : root_(root) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool value) { return put(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return put(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) {
    return put(Json(value));
  }
  bool number_float(Json::number_float_t value, const Json::string_t &) {
    return put(Json(value));
  }
  bool string(Json::string_t &value) { return put(Json(std::move(value))); }
  bool binary(Json::binary_t &) {
    error_ = "binary values are not JSON";
    return false;
  }
  bool start_object(std::size_t) { return open(Json::value_t::object); }
  bool key(Json::string_t &key) {
    Json &object = *stack_.back();
    if (object.find(key) != object.end()) {
      error_ = "duplicate key " + quote(key);
      return false;
    }
    pending_ = &object[key];
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(Json::value_t::array); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string &,
                   const Json::exception &ex) {
    // "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
    std::string what = ex.what();
    size_t bracket = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos)
      what = what.substr(bracket + 2);
    if (what.size() > 2 * kMaxQuotedChars)
      what = what.substr(0, 2 * kMaxQuotedChars) + "...";
    error_ = what;
    return false;
  }

  const std::string &error() const { return error_; }

private:
  Json *place(Json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json &top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(value));
      return &top.back();
    }
    *pending_ = std::move(value);
    return pending_;
  }
  bool put(Json value) {
    place(std::move(value));
    return true;
  }
  bool open(Json::value_t type) {
    if (stack_.size() >= kMaxJsonDepth) {
      error_ = "nesting deeper than " + std::to_string(kMaxJsonDepth) +
               " levels";
      return false;
    }
    // Objects and arrays are stored by pointer: std::map nodes never move,
    // and an array only grows after its nested child has been closed.
    stack_.push_back(place(Json(type)));
    return true;
  }

  Json &root_;
  std::vector<Json *> stack_;
  Json *pending_ = nullptr;
  std::string error_;
};

Status parseJson(const char *begin, const char *end, Json &out) {
  DomBuilder builder(out);
  if (!Json::sax_parse(begin, end, &builder))
    return Status::error(builder.error().empty() ? "invalid JSON"
                                                 : builder.error());
  return Status::ok();
}

/// A non-negative JSON integer (nlohmann stores non-negative literals as
/// unsigned, negative ones as signed, and anything else as a float).
bool asUnsigned(const Json &value, uint64_t &out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v < 0)
      return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

uint64_t readLittleEndian64(const uint8_t *bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

/// Strict UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), as JSON and the reference implementation require.
bool isValidUtf8(const std::string &text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n)
      return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static const uint32_t minByLen[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minByLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

void appendJsonString(std::string &out, const std::string &text) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  out += '"';
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

template <typename T>
void convertElements(const TensorView &t, std::vector<int64_t> &out) {
  for (int64_t i = 0; i < t.numElements; ++i) {
    T v;
    std::memcpy(&v, t.data + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int64_t>(v);
  }
}

Status readWholeFile(const std::string &path, uint64_t limit,
                     std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + errnoText(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return Status::error(path + ": file size " + std::to_string(st.st_size) +
                         " exceeds the limit of " + std::to_string(limit) +
                         " bytes");
  }
  out.assign(static_cast<size_t>(st.st_size), '\0');
  Status status = readFully(fd, path, out.data(), out.size());
  ::close(fd);
  return status;
}

} // namespace

//===----------------------------------------------------------------------===//
// Element types and conversions
//===----------------------------------------------------------------------===//

const char *tpcrt::dtypeName(DType dtype) { return infoOf(dtype).name; }

bool tpcrt::parseDType(const std::string &name, DType &dtype) {
  for (const DTypeInfo &info : kDTypes) {
    if (name == info.name) {
      dtype = info.dtype;
      return true;
    }
  }
  return false;
}

uint64_t tpcrt::dtypeSize(DType dtype) { return infoOf(dtype).size; }

float tpcrt::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return bitsFloat(sign | floatBits(magnitude));
  }
  if (exponent == 31) {
    // Infinity, or NaN: payload kept, made quiet (as F16C hardware and
    // PyTorch do).
    uint32_t quiet = mantissa ? 0x400000u : 0;
    return bitsFloat(sign | 0x7F800000u | quiet | (mantissa << 13));
  }
  return bitsFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

float tpcrt::bfloat16ToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t tpcrt::floatToHalf(float value) {
  uint32_t x = floatBits(value);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) // NaN: a quiet NaN, as PyTorch produces.
    return sign | 0x7E00;
  // 65520 is halfway between the largest half (65504) and 2^16; ties go to
  // the even neighbour, which is infinity.
  if (x >= 0x477FF000u)
    return sign | 0x7C00;
  uint32_t exponent = x >> 23;
  uint32_t mantissa = x & 0x7FFFFF;
  if (exponent < 113) {
    // Below the smallest normal half (2^-14): the result is
    // round(value * 2^24) units of 2^-24; 1024 units encode 2^-14 itself.
    if (exponent < 102)
      return sign; // Below 2^-25: rounds to zero.
    mantissa |= 0x800000;
    uint32_t shift = 126 - exponent; // 14..24
    uint32_t q = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1)))
      ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t h = ((exponent - 112) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // A carry into the exponent is the correct rounding.
  return sign | static_cast<uint16_t>(h);
}

uint16_t tpcrt::floatToBFloat16(float value) {
  uint32_t x = floatBits(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0; // NaN: PyTorch's canonical quiet NaN.
  uint32_t bias = 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + bias) >> 16);
}

Status tpcrt::toFloat32(const TensorView &t, std::vector<float> &out) {
  out.resize(static_cast<size_t>(t.numElements));
  switch (t.dtype) {
  case DType::F32:
    if (t.numElements)
      std::memcpy(out.data(), t.data, t.numElements * sizeof(float));
    return Status::ok();
  case DType::F16:
  case DType::BF16:
    for (int64_t i = 0; i < t.numElements; ++i) {
      uint16_t bits;
      std::memcpy(&bits, t.data + 2 * i, 2);
      out[i] = t.dtype == DType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
    }
    return Status::ok();
  case DType::F64:
    for (int64_t i = 0; i < t.numElements; ++i) {
      double v;
      std::memcpy(&v, t.data + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
    return Status::ok();
  default:
    out.clear();
    return Status::error(tensorContext(t.name) + ": dtype " +
                         dtypeName(t.dtype) +
                         " does not convert to float32 (F32, F16, BF16 or "
                         "F64 expected)");
  }
}

Status tpcrt::toInt64(const TensorView &t, std::vector<int64_t> &out) {
  out.resize(static_cast<size_t>(t.numElements));
  switch (t.dtype) {
  case DType::Bool:
    for (int64_t i = 0; i < t.numElements; ++i)
      out[i] = t.data[i] != 0;
    return Status::ok();
  case DType::U8:
    convertElements<uint8_t>(t, out);
    return Status::ok();
  case DType::I8:
    convertElements<int8_t>(t, out);
    return Status::ok();
  case DType::U16:
    convertElements<uint16_t>(t, out);
    return Status::ok();
  case DType::I16:
    convertElements<int16_t>(t, out);
    return Status::ok();
  case DType::U32:
    convertElements<uint32_t>(t, out);
    return Status::ok();
  case DType::I32:
    convertElements<int32_t>(t, out);
    return Status::ok();
  case DType::I64:
    convertElements<int64_t>(t, out);
    return Status::ok();
  case DType::U64:
    for (int64_t i = 0; i < t.numElements; ++i) {
      uint64_t v;
      std::memcpy(&v, t.data + 8 * i, 8);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        out.clear();
        return Status::error(tensorContext(t.name) + ": element " +
                             std::to_string(i) + " (" + std::to_string(v) +
                             ") does not fit int64");
      }
      out[i] = static_cast<int64_t>(v);
    }
    return Status::ok();
  default:
    out.clear();
    return Status::error(tensorContext(t.name) + ": dtype " +
                         dtypeName(t.dtype) +
                         " does not convert to int64 (an integer or BOOL "
                         "dtype expected)");
  }
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

SafetensorsFile::SafetensorsFile() = default;

SafetensorsFile::~SafetensorsFile() { reset(); }

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept {
  *this = std::move(other);
}

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  path_ = std::move(other.path_);
  base_ = other.base_;
  fileSize_ = other.fileSize_;
  // Moving a vector keeps its buffer, so views into heap_ stay valid.
  heap_ = std::move(other.heap_);
  tensors_ = std::move(other.tensors_);
  metadata_ = std::move(other.metadata_);
  other.base_ = nullptr;
  other.fileSize_ = 0;
  other.reset();
  return *this;
}

void SafetensorsFile::reset() {
  base_ = nullptr;
  fileSize_ = 0;
  heap_.clear();
  heap_.shrink_to_fit();
  tensors_.clear();
  metadata_.clear();
  path_.clear();
}

Status SafetensorsFile::open(const std::string &path, SafetensorsFile &out) {
  out.reset();
  int fd = -1;
  uint64_t fileSize = 0;
  if (Status s = openRegularFile(path, fd, fileSize); !s)
    return s;
  SafetensorsFile file;
  file.path_ = path;
  // Read, not mapped: a mapped file that is truncated or rewritten in place
  // while it is open faults (SIGBUS) on the next touch of a lost page, and
  // no check done at open can prevent that. The bytes read are checked
  // against the header like any other image.
  Status status = Status::ok();
  if (fileSize > std::numeric_limits<size_t>::max() / 2) {
    status = Status::error(path + ": file size " + std::to_string(fileSize) +
                           " is too large to read");
  } else {
    try {
      file.heap_.resize(static_cast<size_t>(fileSize));
    } catch (const std::exception &) {
      status =
          Status::error(path + ": cannot hold its " + std::to_string(fileSize) +
                        " bytes in memory (out of memory)");
    }
  }
  if (status)
    status = readFully(fd, path, file.heap_.data(), fileSize);
  ::close(fd);
  if (!status)
    return status;
  file.base_ = file.heap_.data();
  file.fileSize_ = file.heap_.size();
  if (Status s = file.parse(); !s)
    return s.withContext(path);
  out = std::move(file);
  return Status::ok();
}

Status SafetensorsFile::fromBytes(const std::string &displayName,
                                  const void *bytes, size_t size,
                                  SafetensorsFile &out) {
  out.reset();
  SafetensorsFile file;
  file.path_ = displayName;
  file.fileSize_ = size;
  file.heap_.resize(size);
  if (size)
    std::memcpy(file.heap_.data(), bytes, size);
  file.base_ = file.heap_.data();
  if (Status s = file.parse(); !s)
    return s.withContext(displayName);
  out = std::move(file);
  return Status::ok();
}

Status SafetensorsFile::parse() {
  if (fileSize_ < 8)
    return Status::error("file size " + std::to_string(fileSize_) +
                         " is too small for the 8-byte header length");
  uint64_t headerLength = readLittleEndian64(base_);
  if (headerLength > kMaxHeaderBytes)
    return Status::error("header length " + std::to_string(headerLength) +
                         " exceeds the limit of " +
                         std::to_string(kMaxHeaderBytes) + " bytes");
  if (headerLength > fileSize_ - 8)
    return Status::error("header length " + std::to_string(headerLength) +
                         " exceeds file size " + std::to_string(fileSize_));

  const char *headerBegin = reinterpret_cast<const char *>(base_ + 8);
  Json header;
  if (Status s = parseJson(headerBegin, headerBegin + headerLength, header); !s)
    return Status::error("header is not valid JSON: " + s.message());
  if (!header.is_object())
    return Status::error("header is not a JSON object");

  const uint8_t *data = base_ + 8 + headerLength;
  uint64_t dataSize = fileSize_ - 8 - headerLength;

  struct Range {
    uint64_t begin, end;
    TensorView *view;
  };
  std::vector<Range> ranges;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const Json &entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object())
        return Status::error("\"__metadata__\" is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          return Status::error("\"__metadata__\" value of " + quote(m.key()) +
                               " is not a string: " + jsonText(m.value()));
        metadata_[m.key()] = m.value().get_ref<const std::string &>();
      }
      continue;
    }

    auto fail = [&](const std::string &what) {
      return Status::error(tensorContext(name) + ": " + what);
    };
    if (!entry.is_object())
      return fail("entry is not an object: " + jsonText(entry));

    auto dtypeIt = entry.find("dtype");
    if (dtypeIt == entry.end())
      return fail("missing \"dtype\"");
    if (!dtypeIt->is_string())
      return fail("\"dtype\" is not a string: " + jsonText(*dtypeIt));
    TensorView view;
    view.name = name;
    const std::string &dtypeText = dtypeIt->get_ref<const std::string &>();
    if (!parseDType(dtypeText, view.dtype))
      return fail("unknown dtype " + quote(dtypeText));

    auto shapeIt = entry.find("shape");
    if (shapeIt == entry.end())
      return fail("missing \"shape\"");
    if (!shapeIt->is_array())
      return fail("\"shape\" is not an array: " + jsonText(*shapeIt));
    for (size_t i = 0; i < shapeIt->size(); ++i) {
      const Json &dim = (*shapeIt)[i];
      uint64_t d;
      if (!asUnsigned(dim, d) ||
          d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail("\"shape\" " + jsonText(*shapeIt) + ": dimension " +
                    std::to_string(i) + " is not a non-negative integer");
      view.shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t elementSize = dtypeSize(view.dtype);
    uint64_t byteSize = 0;
    if (!numElementsOf(view.shape, view.numElements) ||
        __builtin_mul_overflow(static_cast<uint64_t>(view.numElements),
                               elementSize, &byteSize))
      return fail("shape " + formatShape(view.shape) + " of " + dtypeText +
                  " overflows: too many elements");

    auto offsetsIt = entry.find("data_offsets");
    if (offsetsIt == entry.end())
      return fail("missing \"data_offsets\"");
    uint64_t begin, end;
    if (!offsetsIt->is_array() || offsetsIt->size() != 2 ||
        !asUnsigned((*offsetsIt)[0], begin) ||
        !asUnsigned((*offsetsIt)[1], end))
      return fail("\"data_offsets\" is not two non-negative integers: " +
                  jsonText(*offsetsIt));
    std::string offsetsText =
        "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
        "]";
    if (begin > end)
      return fail(offsetsText + ": begin is after end");
    if (end - begin != byteSize)
      return fail(offsetsText + " hold " + std::to_string(end - begin) +
                  " bytes, but shape " + formatShape(view.shape) + " of " +
                  dtypeText + " needs " + std::to_string(byteSize));
    view.numBytes = byteSize;
    auto inserted = tensors_.emplace(name, std::move(view));
    ranges.push_back({begin, end, &inserted.first->second});
  }

  // The layout the reference implementation requires: the tensors, in
  // offset order, cover the data section exactly, each starting where the
  // one before ends. A gap or trailing bytes hide data no name accounts for;
  // an overlap would alias two names; a tensor past the end means the file
  // is shorter than its header says (truncated).
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  auto rangeText = [](const Range &r) {
    return quote(r.view->name) + " [" + std::to_string(r.begin) + ", " +
           std::to_string(r.end) + ")";
  };
  const Range *last = nullptr;
  for (const Range &r : ranges)
    if (!last || r.end > last->end)
      last = &r;
  if (last && last->end > dataSize) {
    uint64_t promised = 0;
    std::string promisedText =
        __builtin_add_overflow(8 + headerLength, last->end, &promised)
            ? "more than 2^64"
            : std::to_string(promised);
    return Status::error(
        tensorContext(last->view->name) + ": data_offsets [" +
        std::to_string(last->begin) + ", " + std::to_string(last->end) +
        "] end beyond the data section of " + std::to_string(dataSize) +
        " bytes: the file has " + std::to_string(fileSize_) +
        " bytes, its header describes " + promisedText + " (truncated?)");
  }
  uint64_t covered = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Range &r = ranges[i];
    if (r.begin < covered)
      return Status::error("tensors " + rangeText(ranges[i - 1]) + " and " +
                           rangeText(r) + " overlap");
    if (r.begin > covered)
      return Status::error(
          (i == 0 ? "tensor " + rangeText(r) + " leaves the gap [0, "
                  : "tensors " + rangeText(ranges[i - 1]) + " and " +
                        rangeText(r) + " leave the gap [" +
                        std::to_string(covered) + ", ") +
          std::to_string(r.begin) +
          ") in the data section (safetensors requires the tensors to cover "
          "it exactly)");
    covered = r.end;
  }
  if (covered != dataSize)
    return Status::error(
        std::to_string(dataSize - covered) + " trailing bytes [" +
        std::to_string(covered) + ", " + std::to_string(dataSize) + ") after " +
        (ranges.empty() ? std::string("the header, which has no tensors")
                        : "the last tensor " + rangeText(ranges.back())) +
        " (safetensors requires the tensors to cover the data section "
        "exactly)");
  for (const Range &r : ranges)
    r.view->data = data + r.begin;
  return Status::ok();
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> result;
  result.reserve(tensors_.size());
  for (const auto &entry : tensors_)
    result.push_back(entry.first);
  return result;
}

const TensorView *SafetensorsFile::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status SafetensorsFile::get(const std::string &name, TensorView &out) const {
  const TensorView *view = find(name);
  if (!view)
    return Status::error(path_ + ": no tensor " + quote(name));
  out = *view;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ShardedSafetensors
//===----------------------------------------------------------------------===//

Status ShardedSafetensors::openIndex(const std::string &indexPath,
                                     ShardedSafetensors &out) {
  out = ShardedSafetensors();
  std::string text;
  if (Status s = readWholeFile(indexPath, kMaxIndexBytes, text); !s)
    return s;
  auto fail = [&](const std::string &what) {
    return Status::error(indexPath + ": " + what);
  };
  Json index;
  if (Status s = parseJson(text.data(), text.data() + text.size(), index); !s)
    return fail("not valid JSON: " + s.message());
  if (!index.is_object())
    return fail("not a JSON object");
  auto mapIt = index.find("weight_map");
  if (mapIt == index.end())
    return fail("missing \"weight_map\"");
  if (!mapIt->is_object())
    return fail("\"weight_map\" is not an object");

  ShardedSafetensors result;
  result.path_ = indexPath;
  auto metaIt = index.find("metadata");
  if (metaIt != index.end() && metaIt->is_object()) {
    for (auto m = metaIt->begin(); m != metaIt->end(); ++m)
      result.metadata_[m.key()] =
          m.value().is_string() ? m.value().get_ref<const std::string &>()
                                : jsonText(m.value());
  }

  std::string directory;
  size_t slash = indexPath.rfind('/');
  if (slash != std::string::npos)
    directory = indexPath.substr(0, slash + 1);

  // Open each referenced file once, in name order so that errors do not
  // depend on hash or map iteration details.
  std::map<std::string, size_t> fileIndex;
  for (auto it = mapIt->begin(); it != mapIt->end(); ++it) {
    if (!it.value().is_string())
      return fail(tensorContext(it.key()) + " is mapped to " +
                  jsonText(it.value()) + ", not a file name");
    const std::string &file = it.value().get_ref<const std::string &>();
    if (file.empty())
      return fail(tensorContext(it.key()) + " is mapped to an empty file name");
    fileIndex.emplace(file, 0);
  }
  for (auto &entry : fileIndex) {
    std::string filePath =
        entry.first[0] == '/' ? entry.first : directory + entry.first;
    auto file = std::make_unique<SafetensorsFile>();
    if (Status s = SafetensorsFile::open(filePath, *file); !s) {
      // Name one tensor of the file, so the message connects the index entry
      // to the failure.
      std::string example;
      for (auto it = mapIt->begin(); it != mapIt->end(); ++it)
        if (it.value().get_ref<const std::string &>() == entry.first) {
          example = it.key();
          break;
        }
      return fail(tensorContext(example) + " is mapped to " +
                  quote(entry.first) + ": " + s.message());
    }
    entry.second = result.files_.size();
    result.files_.push_back(std::move(file));
  }
  for (auto it = mapIt->begin(); it != mapIt->end(); ++it) {
    const std::string &file = it.value().get_ref<const std::string &>();
    size_t fileNo = fileIndex[file];
    const TensorView *view = result.files_[fileNo]->find(it.key());
    if (!view)
      return fail(tensorContext(it.key()) + " is mapped to " + quote(file) +
                  ", which has no such tensor");
    result.tensors_.emplace(it.key(), std::make_pair(fileNo, view));
  }
  out = std::move(result);
  return Status::ok();
}

Status ShardedSafetensors::open(const std::string &path,
                                ShardedSafetensors &out) {
  const std::string suffix = ".json";
  if (path.size() >= suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return openIndex(path, out);
  out = ShardedSafetensors();
  auto file = std::make_unique<SafetensorsFile>();
  if (Status s = SafetensorsFile::open(path, *file); !s)
    return s;
  ShardedSafetensors result;
  result.path_ = path;
  result.metadata_ = file->metadata();
  for (const auto &entry : file->tensors())
    result.tensors_.emplace(entry.first, std::make_pair(0, &entry.second));
  result.files_.push_back(std::move(file));
  out = std::move(result);
  return Status::ok();
}

std::vector<std::string> ShardedSafetensors::names() const {
  std::vector<std::string> result;
  result.reserve(tensors_.size());
  for (const auto &entry : tensors_)
    result.push_back(entry.first);
  return result;
}

const TensorView *ShardedSafetensors::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second.second;
}

Status ShardedSafetensors::get(const std::string &name,
                               TensorView &out) const {
  const TensorView *view = find(name);
  if (!view)
    return Status::error(path_ + ": no tensor " + quote(name));
  out = *view;
  return Status::ok();
}

std::string ShardedSafetensors::fileOf(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? "" : files_[it->second.first]->path();
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {

/// Checks the tensors and builds the header, padded with spaces to a multiple
/// of 8 bytes; tensors are laid out contiguously in name order.
Status buildHeader(const std::map<std::string, TensorToWrite> &tensors,
                   const std::map<std::string, std::string> &metadata,
                   std::string &header) {
  header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto &entry : metadata) {
      if (!isValidUtf8(entry.first) || !isValidUtf8(entry.second))
        return Status::error("metadata " + quote(entry.first) +
                             " is not valid UTF-8");
      if (!first)
        header += ',';
      first = false;
      appendJsonString(header, entry.first);
      header += ':';
      appendJsonString(header, entry.second);
    }
    header += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (const auto &entry : tensors) {
    const std::string &name = entry.first;
    const TensorToWrite &t = entry.second;
    auto fail = [&](const std::string &what) {
      return Status::error(tensorContext(name) + ": " + what);
    };
    if (name == "__metadata__")
      return fail("the name is reserved for metadata");
    if (!isValidUtf8(name))
      return fail("the name is not valid UTF-8");
    int64_t count;
    uint64_t bytes;
    if (!numElementsOf(t.shape, count) ||
        __builtin_mul_overflow(static_cast<uint64_t>(count), dtypeSize(t.dtype),
                               &bytes))
      return fail("invalid shape " + formatShape(t.shape));
    if (bytes != t.numBytes)
      return fail("shape " + formatShape(t.shape) + " of " +
                  dtypeName(t.dtype) + " needs " + std::to_string(bytes) +
                  " bytes, but " + std::to_string(t.numBytes) + " were given");
    if (bytes && !t.data)
      return fail("no data");
    if (!first)
      header += ',';
    first = false;
    appendJsonString(header, name);
    header += ":{\"dtype\":\"";
    header += dtypeName(t.dtype);
    header += "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i)
        header += ',';
      header += std::to_string(t.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += '}';
  // Padding keeps the data section 8-byte aligned in the file, so a mapped
  // tensor is aligned for its element type.
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxHeaderBytes)
    return Status::error("header of " + std::to_string(header.size()) +
                         " bytes exceeds the limit of " +
                         std::to_string(kMaxHeaderBytes) + " bytes");
  return Status::ok();
}

void lengthPrefix(uint64_t length, uint8_t out[8]) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(length >> (8 * i));
}


} // namespace

Status tpcrt::serializeSafetensors(
    const std::map<std::string, TensorToWrite> &tensors,
    const std::map<std::string, std::string> &metadata,
    std::vector<uint8_t> &out) {
  out.clear();
  std::string header;
  if (Status s = buildHeader(tensors, metadata, header); !s)
    return s;
  uint8_t prefix[8];
  lengthPrefix(header.size(), prefix);
  out.insert(out.end(), prefix, prefix + 8);
  out.insert(out.end(), header.begin(), header.end());
  for (const auto &entry : tensors) {
    const auto *p = static_cast<const uint8_t *>(entry.second.data);
    if (entry.second.numBytes)
      out.insert(out.end(), p, p + entry.second.numBytes);
  }
  return Status::ok();
}

Status tpcrt::writeSafetensors(
    const std::string &path,
    const std::map<std::string, TensorToWrite> &tensors,
    const std::map<std::string, std::string> &metadata) {
  std::string header;
  if (Status s = buildHeader(tensors, metadata, header); !s)
    return s.withContext(path);

  uint8_t prefix[8];
  lengthPrefix(header.size(), prefix);
  std::vector<ByteRange> pieces{{prefix, 8}, {header.data(), header.size()}};
  for (const auto &entry : tensors)
    pieces.push_back({entry.second.data, entry.second.numBytes});
  return writeFileAtomically(path, pieces);
}
