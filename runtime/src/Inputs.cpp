//===- Inputs.cpp - the token batch an executable reads -------------------===//

#include "tpcrt/Inputs.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <cstring>

using namespace tpcrt;

namespace {

/// "[1, 7]": the multi-index of row-major element `flat` of `shape`.
std::string positionOf(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(index);
}

Status checkValues(const BindingRef &input, const std::vector<int64_t> &values,
                   const std::vector<int64_t> &shape) {
  if (input.valueBound == 0)
    return Status::ok();
  bool isLabels = input.name == "labels";
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = values[i];
    if ((v >= 0 && v < input.valueBound) || (isLabels && v == kIgnoreLabel))
      continue;
    return Status::error(input.name +
                         positionOf(static_cast<int64_t>(i), shape) + " is " +
                         std::to_string(v) + ", outside [0, " +
                         std::to_string(input.valueBound) + ")" +
                         (isLabels ? " and not the ignore index -100" : ""));
  }
  return Status::ok();
}

Status unsupported(const BindingRef &input, const TensorRef &buffer) {
  return Status::error("input '" + input.name + "' is an " +
                       executableDTypeName(buffer.dtype) +
                       " buffer; only i64 inputs are supported");
}

int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  return elements;
}

int64_t tokensOf(const Program &program) {
  const BindingRef *ids = program.findInput("input_ids");
  return ids ? elementsOf(program.globalShapeOf(*ids)) : 0;
}

/// The i64 inputs the host supplies, each filled globally by `fill(input,
/// globalShape, values)` and cut to the rank's block; `out` is set only when
/// every one succeeds.
template <typename FillFn>
Status gatherInputs(const Program &program, HostInputs &out, FillFn fill) {
  HostInputs result;
  std::vector<int64_t> values;
  for (const BindingRef &input : program.inputs) {
    if (isRuntimeInput(input.name))
      continue;
    const TensorRef &buffer = program.buffers[input.buffer];
    if (buffer.dtype != fb::DType::I64)
      return unsupported(input, buffer);
    std::vector<int64_t> shape = program.globalShapeOf(input);
    if (Status s = fill(input, shape, values); !s)
      return s;
    HostInputs::Entry entry;
    if (Status s = HostInputs::Entry::create(program, input, entry); !s)
      return s;
    entry.fill(values.data(), shape);
    result.entries.push_back(std::move(entry));
  }
  result.tokens = tokensOf(program);
  out = std::move(result);
  return Status::ok();
}

} // namespace

Status HostInputs::Entry::create(const Program &program,
                                 const BindingRef &input, Entry &out) {
  Entry entry;
  entry.buffer = input.buffer;
  std::vector<int64_t> microbatch = program.microbatchShapeOf(input);
  if (Status s = blockOf(program.mesh, program.coordinates, microbatch,
                         input.splits, entry.block);
      !s)
    return s.withContext("input '" + input.name + "'");
  entry.slots = program.microbatchesOf(input);
  entry.microbatchRows = microbatch.empty() ? 0 : microbatch[0];
  entry.bytes.resize(program.buffers[input.buffer].bytes * entry.slots);
  out = std::move(entry);
  return Status::ok();
}

void HostInputs::Entry::fill(const int64_t *global,
                             const std::vector<int64_t> &globalShape) {
  size_t slotBytes = bytes.size() / slots;
  // Microbatch i's block is microbatch 0's moved i microbatches down.
  int64_t first = block.offset.empty() ? 0 : block.offset[0];
  for (uint32_t slot = 0; slot < slots; ++slot) {
    if (!block.offset.empty())
      block.offset[0] = first + slot * microbatchRows;
    extractBlock(global, globalShape, block, bytes.data() + slot * slotBytes,
                 sizeof(int64_t));
  }
  if (!block.offset.empty())
    block.offset[0] = first;
}

Status HostInputs::copyTo(Interpreter &interpreter) const {
  for (const Entry &entry : entries) {
    if (!interpreter.program().ownsBuffer(entry.buffer))
      continue;
    size_t slotBytes = entry.bytes.size() / entry.slots;
    for (uint32_t slot = 0; slot < entry.slots; ++slot)
      if (Status s = interpreter.writeBuffer(
              entry.buffer, entry.bytes.data() + slot * slotBytes, slotBytes,
              slot);
          !s)
        return s;
  }
  return Status::ok();
}

Status tpcrt::parseLabelShift(const std::string &text, LabelShift &out) {
  if (text == "shifted")
    out = LabelShift::Shifted;
  else if (text == "unshifted")
    out = LabelShift::Unshifted;
  else
    return Status::error("--labels '" + text +
                         "': expected shifted or unshifted");
  return Status::ok();
}

void tpcrt::shiftLabels(std::vector<int64_t> &values,
                        const std::vector<int64_t> &shape) {
  if (shape.empty() || shape.back() <= 0)
    return;
  auto length = static_cast<size_t>(shape.back());
  for (size_t row = 0; row + length <= values.size(); row += length) {
    std::copy(values.begin() + row + 1, values.begin() + row + length,
              values.begin() + row);
    values[row + length - 1] = kIgnoreLabel;
  }
}

Status tpcrt::readInputs(const std::string &path, const Program &program,
                         HostInputs &out, LabelShift labels,
                         bool *labelsEqualIds) {
  out = HostInputs();
  if (labelsEqualIds)
    *labelsEqualIds = false;
  SafetensorsFile file;
  if (Status s = SafetensorsFile::open(path, file); !s)
    return s;
  // The file's ids and labels as they are, to compare them.
  std::vector<int64_t> fileIds, fileLabels;
  Status status = gatherInputs(
      program, out,
      [&](const BindingRef &input, const std::vector<int64_t> &shape,
          std::vector<int64_t> &values) -> Status {
        const TensorView *tensor = file.find(input.name);
        if (!tensor)
          return Status::error(path + ": missing tensor '" + input.name + "'");
        std::string what = path + ": tensor '" + input.name + "'";
        if (tensor->dtype != DType::I64 && tensor->dtype != DType::I32)
          return Status::error(what + " is " + dtypeName(tensor->dtype) +
                               ", expected I64 or I32");
        if (tensor->shape != shape)
          return Status::error(what + " has shape " +
                               formatShape(tensor->shape) + ", expected " +
                               formatShape(shape));
        if (Status s = toInt64(*tensor, values); !s)
          return s.withContext(path);
        if (Status s = checkValues(input, values, shape); !s)
          return s.withContext(path);
        if (input.name == "input_ids")
          fileIds = values;
        if (input.name == "labels") {
          fileLabels = values;
          if (labels == LabelShift::Unshifted)
            shiftLabels(values, shape);
        }
        return Status::ok();
      });
  if (status && labelsEqualIds)
    *labelsEqualIds = !fileIds.empty() && fileIds == fileLabels;
  return status;
}

Status tpcrt::syntheticInputs(uint64_t seed, const Program &program,
                              HostInputs &out) {
  out = HostInputs();
  return gatherInputs(
      program, out,
      [&](const BindingRef &input, const std::vector<int64_t> &shape,
          std::vector<int64_t> &values) -> Status {
        if (input.valueBound <= 0)
          return Status::error("input '" + input.name +
                               "' has no value_bound to draw synthetic values "
                               "below");
        uint64_t key = namedStreamKey(seed, input.name);
        values.resize(static_cast<size_t>(elementsOf(shape)));
        for (size_t i = 0; i < values.size(); ++i)
          values[i] =
              uniformBelow(key, i, static_cast<uint64_t>(input.valueBound));
        return Status::ok();
      });
}
