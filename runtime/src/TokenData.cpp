//===- TokenData.cpp - training batches from a flat token file ------------===//

#include "tpcrt/TokenData.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Random.h"

#include <cerrno>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

using namespace tpcrt;

Status tpcrt::parseTokenDType(const std::string &text, TokenDType &out) {
  if (text == "uint16")
    out = TokenDType::U16;
  else if (text == "uint32")
    out = TokenDType::U32;
  else
    return Status::error("--data-dtype '" + text +
                         "': expected uint16 or uint32");
  return Status::ok();
}

const char *tpcrt::tokenDTypeName(TokenDType dtype) {
  return dtype == TokenDType::U16 ? "uint16" : "uint32";
}

TokenDType tpcrt::defaultTokenDType(int64_t vocab) {
  return vocab > 0 && vocab <= 65536 ? TokenDType::U16 : TokenDType::U32;
}

namespace {
uint64_t elementSize(TokenDType dtype) {
  return dtype == TokenDType::U16 ? 2 : 4;
}
} // namespace

TokenFile::~TokenFile() { reset(); }

TokenFile::TokenFile(TokenFile &&other) noexcept { *this = std::move(other); }

TokenFile &TokenFile::operator=(TokenFile &&other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    dtype_ = other.dtype_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.bytes_ = other.size_ = 0;
  }
  return *this;
}

void TokenFile::reset() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), bytes_);
  data_ = nullptr;
  bytes_ = size_ = 0;
}

Status TokenFile::open(const std::string &path, TokenDType dtype,
                       TokenFile &out) {
  out = TokenFile();
  int fd = -1;
  uint64_t bytes = 0;
  if (Status s = openRegularFile(path, fd, bytes); !s)
    return s;
  uint64_t width = elementSize(dtype);
  if (bytes % width != 0) {
    ::close(fd);
    return Status::error(path + ": " + std::to_string(bytes) +
                         " bytes are not a whole number of " +
                         tokenDTypeName(dtype) + " tokens (--data-dtype)");
  }
  TokenFile file;
  if (bytes > 0) {
    void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::error(path + ": cannot map: " + std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t *>(p);
  }
  ::close(fd);
  file.path_ = path;
  file.dtype_ = dtype;
  file.bytes_ = bytes;
  file.size_ = bytes / width;
  out = std::move(file);
  return Status::ok();
}

int64_t TokenFile::token(uint64_t i) const {
  if (dtype_ == TokenDType::U16) {
    uint16_t v;
    std::memcpy(&v, data_ + 2 * i, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, data_ + 4 * i, 4);
  return v;
}

Status TokenSampler::create(const TokenFile &file, uint64_t seed,
                            const std::string &name, const Program &program,
                            TokenSampler &out) {
  const BindingRef *ids = program.findInput("input_ids");
  const BindingRef *labels = program.findInput("labels");
  if (!ids || !labels)
    return Status::error(file.path() +
                         ": the executable has no input_ids and labels inputs "
                         "to fill from token data");
  for (const BindingRef &input : program.inputs)
    if (input.name != "input_ids" && input.name != "labels" &&
        !isRuntimeInput(input.name))
      return Status::error(file.path() +
                           ": token data fills input_ids and "
                           "labels, but the executable also has "
                           "input '" +
                           input.name + "'");
  // The loader checked both are i64 [batch, seq]; they must agree.
  std::vector<int64_t> shape = program.globalShapeOf(*ids);
  if (program.globalShapeOf(*labels) != shape)
    return Status::error("input_ids and labels have different shapes");
  TokenSampler sampler;
  sampler.file_ = &file;
  sampler.key_ = namedStreamKey(seed, name);
  sampler.shape_ = shape;
  sampler.batch_ = shape[0];
  sampler.seq_ = shape[1];
  sampler.bound_ = ids->valueBound;
  if (file.size() < static_cast<uint64_t>(sampler.seq_) + 1)
    return Status::error(file.path() + ": " + std::to_string(file.size()) +
                         " tokens, fewer than the " +
                         std::to_string(sampler.seq_ + 1) + " a sequence of " +
                         std::to_string(sampler.seq_) +
                         " and its last target need");
  for (const BindingRef *binding : {ids, labels}) {
    HostInputs::Entry entry;
    if (Status s = HostInputs::Entry::create(program, *binding, entry); !s)
      return s;
    sampler.inputs_.entries.push_back(std::move(entry));
  }
  sampler.ids_.resize(static_cast<size_t>(sampler.batch_ * sampler.seq_));
  sampler.labels_.resize(sampler.ids_.size());
  sampler.inputs_.tokens = sampler.batch_ * sampler.seq_;
  out = std::move(sampler);
  return Status::ok();
}

Status TokenSampler::sample(uint64_t draw) {
  int64_t *ids = ids_.data();
  int64_t *labels = labels_.data();
  uint64_t starts = file_->size() - static_cast<uint64_t>(seq_);
  for (int64_t r = 0; r < batch_; ++r) {
    auto begin = static_cast<uint64_t>(uniformBelow(
        key_, draw * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(r),
        starts));
    for (int64_t j = 0; j <= seq_; ++j) {
      uint64_t position = begin + static_cast<uint64_t>(j);
      int64_t token = file_->token(position);
      if (bound_ > 0 && token >= bound_)
        return Status::error(file_->path() + ": token " +
                             std::to_string(token) + " at position " +
                             std::to_string(position) + " is outside [0, " +
                             std::to_string(bound_) +
                             ") (the executable's vocabulary; is --data-dtype "
                             "right?)");
      if (j < seq_)
        ids[r * seq_ + j] = token;
      if (j > 0)
        labels[r * seq_ + j - 1] = token;
    }
  }
  const int64_t *global[] = {ids, labels};
  for (size_t i = 0; i < 2; ++i)
    inputs_.entries[i].fill(global[i], shape_);
  return Status::ok();
}
