//===- CpuDevice.cpp - the CPU backend of the interpreter -----------------===//
//
// The arena and the workspace are anonymous mappings: page-aligned, zero
// until written, and an impossible size fails cleanly instead of being
// zero-filled page by page. prepare() resolves every operand to an address
// and lays out, per kernel, fp32 copies of its BF16/F16 operands and results
// plus its scratch (attention blocks, double accumulators); the kernels run
// one at a time, so the workspace is the largest of these layouts, shared by
// all kernels.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Device.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Shape.h"
#include "tpcrt/Random.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <sys/mman.h>

using namespace tpcrt;

namespace {

/// Zero-filled, page-aligned memory from mmap.
class MappedMemory {
public:
  MappedMemory() = default;
  MappedMemory(const MappedMemory &) = delete;
  MappedMemory &operator=(const MappedMemory &) = delete;
  ~MappedMemory() { release(); }

  Status allocate(uint64_t bytes, const char *what) {
    release();
    if (bytes == 0)
      return Status::ok();
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return Status::error(std::string("cannot allocate the ") + what + " of " +
                           std::to_string(bytes) +
                           " bytes: " + std::strerror(errno));
    data_ = static_cast<uint8_t *>(p);
    size_ = bytes;
    return Status::ok();
  }
  uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }

private:
  void release() {
    if (data_)
      ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
  uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
};

cpu::FloatType floatTypeOf(fb::DType dtype) {
  return dtype == fb::DType::BF16  ? cpu::FloatType::BF16
         : dtype == fb::DType::F16 ? cpu::FloatType::F16
                                   : cpu::FloatType::F32;
}

/// Floats, rounded up to whole 64-byte lines.
uint64_t lineFloats(int64_t floats) {
  return (static_cast<uint64_t>(floats) + 15) / 16 * 16;
}

/// Bytes, rounded up to whole 64-byte lines.
uint64_t lineBytes(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

/// Kernels that read and write 16-bit storage themselves (the collectives
/// that only move data move bytes).
bool convertsItself(fb::OpCode op) {
  return op == fb::OpCode::Embedding || op == fb::OpCode::Copy ||
         op == fb::OpCode::TestCopy || op == fb::OpCode::Cast ||
         op == fb::OpCode::Slice || op == fb::OpCode::Concat ||
         op == fb::OpCode::AllGather ||
         op == fb::OpCode::ShardSlice || op == fb::OpCode::ShardPad ||
         op == fb::OpCode::AllToAll || op == fb::OpCode::Send ||
         op == fb::OpCode::Recv || op == fb::OpCode::Zeros ||
         op == fb::OpCode::SendStart || op == fb::OpCode::RecvStart ||
         op == fb::OpCode::Wait;
}

/// The kernels of a started transfer: its start, and the wait on its buffer.
bool isStartedTransfer(fb::OpCode op) {
  return op == fb::OpCode::SendStart || op == fb::OpCode::RecvStart ||
         op == fb::OpCode::Wait;
}

/// The buffer a transfer kernel moves: the operand it sends or waits on, or
/// the result it receives into.
const TensorRef &transferBuffer(const KernelCall &call) {
  return call.operands.empty() ? call.results[0] : call.operands[0];
}

/// A started transfer's requests, one per piece of its buffer, made and
/// prepared once: a step only restarts and waits on them.
struct StartedTransfer {
  static constexpr uint32_t kIdle = UINT32_MAX;
  std::vector<Request> pieces;
  /// The kernel that started the transfer in flight (kIdle: none), and
  /// the communicator that waits for it.
  uint32_t startKernel = kIdle;
  Communicator *comm = nullptr;
};


/// x as [outer, pieces, row] (row bytes each) -> out as [pieces, outer, row]:
/// the pieces of a split along a dimension, each contiguous.
void splitPieces(const uint8_t *x, int64_t outer, int64_t pieces,
                 uint64_t rowBytes, uint8_t *out) {
  for (int64_t p = 0; p < pieces; ++p)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (p * outer + o) * rowBytes,
                  x + (o * pieces + p) * rowBytes, rowBytes);
}

/// The inverse: contiguous pieces [pieces, outer, row] -> [outer, pieces,
/// row], i.e. concatenated along the dimension.
void joinPieces(const uint8_t *x, int64_t outer, int64_t pieces,
                uint64_t rowBytes, uint8_t *out) {
  for (int64_t p = 0; p < pieces; ++p)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * pieces + p) * rowBytes,
                  x + (p * outer + o) * rowBytes, rowBytes);
}

/// Bytes of staging a collective needs to make the pieces along a
/// non-leading dimension contiguous for the communicator (in the dtype it
/// communicates: f32 for a staged 16-bit reduce_scatter).
uint64_t collectiveStagingBytes(const KernelCall &call) {
  // send and recv move their buffer as it is (recv has no operand).
  if (call.group < 0 || call.operands.empty())
    return 0;
  const TensorRef &x = call.operands[0];
  uint64_t elementBytes = executableDTypeSize(x.dtype);
  switch (call.op) {
  case fb::OpCode::AllGather:
    return aroundDim(x.shape, call.intAttrs[0]).outer > 1
               ? call.results[0].elements * elementBytes
               : 0;
  case fb::OpCode::ReduceScatter:
    return aroundDim(x.shape, call.intAttrs[0]).outer > 1
               ? x.elements * sizeof(float)
               : 0;
  case fb::OpCode::AllToAll: {
    // The pieces to send, then the pieces received (each the whole size).
    uint64_t bytes = x.elements * elementBytes;
    return lineBytes(bytes) * 2;
  }
  default:
    return 0;
  }
}

bool needsStaging(const KernelCall &call, const TensorRef &t) {
  return !convertsItself(call.op) && isFloatDType(t.dtype) &&
         t.dtype != fb::DType::F32;
}

/// cross_entropy(_grad) with a vocab attribute (padding, and maybe a
/// group): combined per position over the blocks (crossEntropyBlockMax).
bool splitVocabulary(const KernelCall &call) {
  return call.intAttrs.size() >= 2;
}

/// Floats of scratch a kernel needs (doubles count twice).
int64_t scratchFloats(const KernelCall &call) {
  switch (call.op) {
  case fb::OpCode::Attention:
  case fb::OpCode::AttentionQkv:
  case fb::OpCode::AttentionLse:
  case fb::OpCode::AttentionQkvLse:
    return cpu::attentionScratchSize(call.seqQ, call.seqK);
  case fb::OpCode::AttentionGrad:
  case fb::OpCode::AttentionQkvGrad:
    return cpu::attentionGradScratchSize(call.seqQ, call.seqK);
  case fb::OpCode::SumTo:
    return 2 * call.rhsCount;
  case fb::OpCode::LayerNormParamGrad:
    return 4 * call.cols;
  case fb::OpCode::RmsNormParamGrad:
    return 2 * call.cols;
  case fb::OpCode::EmbeddingGradAccumulate:
    // The positions in order (int64), then one row.
    return 2 * call.m + call.n;
  case fb::OpCode::CrossEntropy:
  case fb::OpCode::CrossEntropyGrad:
    // A padded or split vocabulary: per position the max, the sum of
    // exponentials and the target's logit (the last two adjacent: one sum
    // over the group).
    return splitVocabulary(call) ? 3 * call.rows : 0;
  default:
    return static_cast<int64_t>(
        (collectiveStagingBytes(call) + sizeof(float) - 1) / sizeof(float));
  }
}

/// One kernel with its addresses resolved.
struct Resolved {
  /// False for the kernels of other pipeline stages (not in the program).
  bool prepared = false;
  /// Addresses; of a pooled buffer, slot 0's.
  std::vector<uint8_t *> operands, results;
  /// fp32 copies in the workspace (null where the buffer is used as is).
  std::vector<float *> stagedOperands, stagedResults;
  float *scratch = nullptr;
  /// Whether a buffer is pooled (KernelCall::pooled); then, per operand and
  /// result, the pool's stride (0: not pooled); the run's slot is
  /// TensorRef::slotOf.
  bool pooled = false;
  std::vector<uint64_t> operandStrides, resultStrides;
};

class CpuDevice final : public Device {
public:
  explicit CpuDevice(uint64_t transferPieceBytes)
      : pieceBytes_(transferPieceBytes ? transferPieceBytes
                                       : kTransferPieceBytes) {}

  const char *name() const override { return "cpu"; }

  Status allocateArena(uint64_t bytes) override {
    return arena_.allocate(bytes, "arena");
  }
  uint64_t arenaBytes() const override { return arena_.size(); }

  Status copyToArena(uint64_t offset, const void *source,
                     uint64_t bytes) override {
    if (Status s = checkRange(offset, bytes); !s)
      return s;
    if (bytes)
      std::memcpy(arena_.data() + offset, source, bytes);
    return Status::ok();
  }

  Status copyFromArena(uint64_t offset, void *destination,
                       uint64_t bytes) override {
    if (Status s = checkRange(offset, bytes); !s)
      return s;
    if (bytes)
      std::memcpy(destination, arena_.data() + offset, bytes);
    return Status::ok();
  }

  Status prepare(const Program &program,
                 const std::vector<Communicator *> &groups) override;
  uint64_t workspaceBytes() const override { return workspace_.size(); }
  Status execute(const KernelCall &call, const StepContext &context) override;
  Status synchronize() override { return Status::ok(); }

private:
  Status checkRange(uint64_t offset, uint64_t bytes) const {
    if (bytes > arena_.size() || offset > arena_.size() - bytes)
      return Status::error("bytes [" + std::to_string(offset) + ", +" +
                           std::to_string(bytes) +
                           ") lie outside the arena of " +
                           std::to_string(arena_.size()) + " bytes");
    return Status::ok();
  }
  Status run(const KernelCall &call, const Resolved &r,
             const StepContext &context);
  Status runCollective(const KernelCall &call, const Resolved &r);
  Status runTransfer(const KernelCall &call, const Resolved &r);
  /// send_start and recv_start: the transfer's pieces started; wait: all of
  /// them waited for. `context` selects the slot of a pooled buffer.
  Status startTransfer(const KernelCall &call, const Resolved &r,
                       const StepContext &context);
  Status waitTransfer(const KernelCall &call, const StepContext &context);
  /// The pieces of a transfer of `bytes` bytes.
  size_t piecesOf(uint64_t bytes) const {
    return static_cast<size_t>((bytes + pieceBytes_ - 1) / pieceBytes_);
  }
  /// The table entry of the started transfer on `call`'s buffer at the
  /// context's slot.
  StartedTransfer &startedOn(const KernelCall &call,
                             const StepContext &context) {
    const TensorRef &t = transferBuffer(call);
    return started_[startedBase_[t.buffer] +
                    t.slotOf(context.microbatch, context.slot)];
  }
  Status runVocabCrossEntropy(const KernelCall &call, const Resolved &r,
                              const float *logits, float *dLogits, float scale);

  MappedMemory arena_, workspace_;
  std::vector<Resolved> resolved_;
  /// A concat's row bytes per input (grows to the widest concat once).
  std::vector<int64_t> concatRowBytes_;
  std::vector<Communicator *> groups_;
  /// A pooled kernel's addresses at the running slots (sized at prepare to
  /// the most operands and results of a kernel: execute allocates nothing).
  Resolved atSlots_;
  /// The most bytes of one message of a transfer between stages.
  uint64_t pieceBytes_;
  /// The started transfers: one entry per instance (a buffer, a pooled
  /// buffer's slot) that a send_start, recv_start or wait of the program
  /// touches; per buffer its slot 0's entry (kNoEntry: none), slot s at +s.
  /// The loader checked that one transfer at most is in flight on an
  /// instance and that its wait names that very instance.
  static constexpr uint32_t kNoEntry = UINT32_MAX;
  std::vector<StartedTransfer> started_;
  std::vector<uint32_t> startedBase_;
};

Status CpuDevice::prepare(const Program &program,
                          const std::vector<Communicator *> &groups) {
  if (program.arenaBytes > arena_.size())
    return Status::error(
        "the program needs an arena of " + std::to_string(program.arenaBytes) +
        " bytes, the device has " + std::to_string(arena_.size()));
  // Offsets in floats within the workspace, per kernel; the workspace is the
  // largest layout. Kernels are found by their index in the file: on a
  // pipeline the program holds only this rank's stage's.
  size_t slots = 0;
  for (const KernelCall &call : program.calls)
    slots = std::max<size_t>(slots, call.index + size_t(1));
  std::vector<std::vector<uint64_t>> operandAt(slots), resultAt(slots);
  std::vector<uint64_t> scratchAt(slots);
  uint64_t largest = 0;
  const uint64_t none = UINT64_MAX;
  for (const KernelCall &call : program.calls) {
    uint64_t used = 0;
    auto place = [&](const TensorRef &t) {
      if (!needsStaging(call, t))
        return none;
      uint64_t at = used;
      used += lineFloats(t.elements);
      return at;
    };
    for (const TensorRef &t : call.operands)
      operandAt[call.index].push_back(place(t));
    for (const TensorRef &t : call.results)
      resultAt[call.index].push_back(place(t));
    scratchAt[call.index] = none;
    if (int64_t floats = scratchFloats(call)) {
      scratchAt[call.index] = used;
      used += lineFloats(floats);
    }
    largest = std::max(largest, used);
  }
  for (const KernelCall &call : program.calls) {
    if (call.group < 0)
      continue;
    Communicator *group = static_cast<size_t>(call.group) < groups.size()
                              ? groups[call.group]
                              : nullptr;
    if (!group)
      return Status::error("kernel " + std::to_string(call.index) +
                           " has no communicator for its group");
    if (group->size() != call.groupSize)
      return Status::error("kernel " + std::to_string(call.index) +
                           ": its group has " + std::to_string(call.groupSize) +
                           " ranks, the communicator " +
                           std::to_string(group->size()));
  }
  groups_ = groups;
  if (Status s = workspace_.allocate(largest * sizeof(float), "workspace"); !s)
    return s;

  auto *floats = reinterpret_cast<float *>(workspace_.data());
  auto staged = [&](uint64_t at) { return at == none ? nullptr : floats + at; };
  resolved_.assign(slots, Resolved());
  size_t mostOperands = 0, mostResults = 0;
  for (const KernelCall &call : program.calls) {
    Resolved &r = resolved_[call.index];
    r.prepared = true;
    r.pooled = call.pooled;
    for (size_t j = 0; j < call.operands.size(); ++j) {
      const TensorRef &t = call.operands[j];
      r.operands.push_back(arena_.data() + t.offset);
      r.stagedOperands.push_back(staged(operandAt[call.index][j]));
      r.operandStrides.push_back(t.pool >= 0 ? t.poolStride : 0);
    }
    for (size_t j = 0; j < call.results.size(); ++j) {
      const TensorRef &t = call.results[j];
      r.results.push_back(arena_.data() + t.offset);
      r.stagedResults.push_back(staged(resultAt[call.index][j]));
      r.resultStrides.push_back(t.pool >= 0 ? t.poolStride : 0);
    }
    r.scratch = staged(scratchAt[call.index]);
    mostOperands = std::max(mostOperands, call.operands.size());
    mostResults = std::max(mostResults, call.results.size());
  }
  // The started transfers' table: an entry per instance, its requests made
  // ready by the communicator of the kernels that start transfers on it.
  started_.clear();
  startedBase_.assign(program.buffers.size(), kNoEntry);
  for (const KernelCall &call : program.calls) {
    if (!isStartedTransfer(call.op))
      continue;
    const TensorRef &t = transferBuffer(call);
    uint32_t slots = t.pool < 0 ? 1 : program.pools[t.pool].slots;
    if (startedBase_[t.buffer] == kNoEntry) {
      startedBase_[t.buffer] = static_cast<uint32_t>(started_.size());
      started_.resize(started_.size() + slots);
      for (uint32_t s = 0; s < slots; ++s)
        started_[startedBase_[t.buffer] + s].pieces.resize(piecesOf(t.bytes));
    }
    if (call.op == fb::OpCode::Wait)
      continue;
    for (uint32_t s = 0; s < slots; ++s)
      for (Request &piece : started_[startedBase_[t.buffer] + s].pieces)
        if (Status st = groups[call.group]->prepareRequest(piece); !st)
          return st.withContext("kernel " + std::to_string(call.index));
  }
  atSlots_ = Resolved();
  atSlots_.prepared = true;
  atSlots_.operands.resize(mostOperands);
  atSlots_.stagedOperands.resize(mostOperands);
  atSlots_.results.resize(mostResults);
  atSlots_.stagedResults.resize(mostResults);
  return Status::ok();
}

Status CpuDevice::execute(const KernelCall &call, const StepContext &context) {
  if (call.index >= resolved_.size() || !resolved_[call.index].prepared)
    return Status::error("kernel " + std::to_string(call.index) +
                         " is not part of the prepared program");
  const Resolved *resolved = &resolved_[call.index];
  if (resolved->pooled) {
    // The run's slots: a pooled buffer's slot (TensorRef::slotOf: the
    // microbatch, or the action's slot mod the pool's slots) lies `stride`
    // bytes further per slot (the loader checked every microbatch a
    // by_microbatch pool is addressed with).
    Resolved &at = atSlots_;
    const Resolved &base = *resolved;
    auto select = [&](const TensorRef &t) -> uint64_t {
      return t.slotOf(context.microbatch, context.slot);
    };
    for (size_t j = 0; j < call.operands.size(); ++j) {
      at.operands[j] =
          base.operands[j] + base.operandStrides[j] * select(call.operands[j]);
      at.stagedOperands[j] = base.stagedOperands[j];
    }
    for (size_t j = 0; j < call.results.size(); ++j) {
      at.results[j] =
          base.results[j] + base.resultStrides[j] * select(call.results[j]);
      at.stagedResults[j] = base.stagedResults[j];
    }
    at.scratch = base.scratch;
    resolved = &at;
  }
  const Resolved &r = *resolved;
  for (size_t j = 0; j < call.operands.size(); ++j)
    if (float *staged = r.stagedOperands[j])
      if (Status s =
              cpu::cast(r.operands[j], floatTypeOf(call.operands[j].dtype),
                        call.operands[j].elements, cpu::FloatType::F32, staged);
          !s)
        return s;
  if (Status s = run(call, r, context); !s)
    return s;
  for (size_t j = 0; j < call.results.size(); ++j)
    if (float *staged = r.stagedResults[j])
      if (Status s =
              cpu::cast(staged, cpu::FloatType::F32, call.results[j].elements,
                        floatTypeOf(call.results[j].dtype), r.results[j]);
          !s)
        return s;
  return Status::ok();
}

Status CpuDevice::run(const KernelCall &call, const Resolved &r,
                      const StepContext &context) {
  auto in = [&](size_t j) {
    return r.stagedOperands[j] ? r.stagedOperands[j]
                               : reinterpret_cast<float *>(r.operands[j]);
  };
  auto out = [&](size_t j) {
    return r.stagedResults[j] ? r.stagedResults[j]
                              : reinterpret_cast<float *>(r.results[j]);
  };
  auto ints = [&](size_t j) {
    return reinterpret_cast<int64_t *>(r.operands[j]);
  };
  auto scalarIn = [&](size_t j) { return *in(j); };
  auto doubles = reinterpret_cast<double *>(r.scratch);
  const std::vector<int64_t> &ia = call.intAttrs;
  const std::vector<double> &fa = call.floatAttrs;
  bool flag0 = call.flags & 1, flag1 = call.flags & 2;
  int rank = 0;
  const int64_t *shape = nullptr;
  if (!call.operands.empty()) {
    rank = static_cast<int>(call.operands[0].shape.size());
    shape = call.operands[0].shape.data();
  }
  // Evaluation keeps every element: the rate of every dropout becomes 0.
  auto rate = [&](size_t j) { return context.evaluation ? 0.0 : fa[j]; };
  auto key = [&](size_t j) {
    return dropoutKey(context.seed, static_cast<uint64_t>(ia[j]), context.step);
  };
  // A dropout stream's optional int_attrs[1]: where this piece starts; a
  // run for microbatch i draws i * N further (the loader checked the sum).
  int64_t firstIndex = (ia.size() == 2 ? ia[1] : 0) +
                       static_cast<int64_t>(context.microbatch) *
                           call.streamElements;
  // A split dropout kernel draws at the global indices of its first result.
  cpu::GlobalBlock globalBlock;
  if (!call.splits.empty())
    globalBlock = {static_cast<int>(call.globalShape.size()),
                   call.results[0].shape.data(), call.globalShape.data(),
                   call.globalOffset.data()};
  const cpu::GlobalBlock *block = call.splits.empty() ? nullptr : &globalBlock;
  auto attentionDropout = [&] {
    cpu::AttentionDropout dropout{key(0), rate(1),
                                  static_cast<uint64_t>(firstIndex)};
    if (block) {
      int headsDim = call.attentionHeadsDim();
      int queryDim = call.attentionQueryDim();
      dropout.batchOffset = call.globalOffset[0];
      dropout.headOffset = call.globalOffset[headsDim];
      dropout.queryOffset = call.globalOffset[queryDim];
      dropout.globalHeads = call.globalShape[headsDim];
      dropout.globalSeqQ = call.globalShape[queryDim];
    }
    return dropout;
  };
  // attention_qkv(_grad): q, k and v (and their gradients) are the parts
  // of operand (result) j.
  auto part = [&](float *qkv, int64_t p) {
    return qkv + qkvPartOffset(p, call.heads, call.headDim);
  };
  auto layout = [&] {
    return flag0 ? cpu::WeightLayout::OutIn : cpu::WeightLayout::InOut;
  };
  auto gelu = [&] {
    return flag0 ? cpu::GeluApproximation::Tanh : cpu::GeluApproximation::Erf;
  };

  // A table that is a block of the vocabulary rows (with a group).
  cpu::VocabBlock rows{call.groupPosition * call.k, call.k * call.groupSize};
  const cpu::VocabBlock *rowBlock = call.group >= 0 ? &rows : nullptr;

  switch (call.op) {
  case fb::OpCode::Embedding:
    return cpu::embeddingRows(
        r.operands[0], floatTypeOf(call.operands[0].dtype), call.k, call.n,
        ints(1), call.m, floatTypeOf(call.results[0].dtype), r.results[0],
        rowBlock);
  case fb::OpCode::Linear:
    return cpu::linear(in(0), in(1),
                       call.operands.size() == 3 ? in(2) : nullptr, call.m,
                       call.k, call.n, layout(), out(0));
  case fb::OpCode::BatchMatmul:
    return cpu::batchMatmul(in(0), in(1), call.batch, call.m, call.k, call.n,
                            flag0, flag1, static_cast<float>(fa[0]), out(0));
  case fb::OpCode::LayerNorm:
    return cpu::layerNorm(in(0), in(1), in(2), call.rows, call.cols,
                          static_cast<float>(fa[0]), out(0));
  case fb::OpCode::RmsNorm:
    return cpu::rmsNorm(in(0), in(1), call.rows, call.cols,
                        static_cast<float>(fa[0]), out(0));
  case fb::OpCode::Gelu:
    return cpu::gelu(in(0), call.count, gelu(), out(0));
  case fb::OpCode::Silu:
    return cpu::silu(in(0), call.count, out(0));
  case fb::OpCode::Add:
    if (call.operands[0].dtype == fb::DType::I64)
      return cpu::addInt64(ints(0), call.count, ints(1), call.rhsCount,
                           reinterpret_cast<int64_t *>(r.results[0]));
    return cpu::add(in(0), call.count, in(1), call.rhsCount, out(0));
  case fb::OpCode::Mul:
    return cpu::mul(in(0), call.count, in(1), call.rhsCount, out(0));
  case fb::OpCode::Dropout:
    return cpu::dropout(in(0), call.count, key(0), rate(0), firstIndex, out(0),
                        block);
  case fb::OpCode::Softmax:
    return cpu::softmax(in(0), call.outer, call.seqQ, call.seqK, flag0, out(0));
  case fb::OpCode::Attention:
  case fb::OpCode::AttentionQkv:
  case fb::OpCode::AttentionLse:
  case fb::OpCode::AttentionQkvLse: {
    cpu::AttentionDropout dropout = attentionDropout();
    bool packed = call.attentionPackedQkv();
    return cpu::attention(
        in(0), packed ? part(in(0), 1) : in(1), packed ? part(in(0), 2) : in(2),
        call.batch, call.heads, call.kvHeads, call.seqQ, call.seqK,
        call.headDim, call.valueDim, flag0, static_cast<float>(fa[0]),
        r.scratch, out(0), dropout.rate > 0.0 ? &dropout : nullptr,
        call.attentionLayout(), call.attentionWritesLse() ? out(1) : nullptr);
  }
  case fb::OpCode::Rotary:
    return cpu::rotary(in(0), call.outer, call.seqQ, call.headDim, fa[0], ia[0],
                       out(0), flag0, nullptr, call.heads);
  case fb::OpCode::RotaryScaled: {
    cpu::RopeScaling scaling{fa[1], fa[2], fa[3], fa[4]};
    return cpu::rotary(in(0), call.outer, call.seqQ, call.headDim, fa[0], ia[0],
                       out(0), flag0, &scaling, call.heads);
  }
  case fb::OpCode::CrossEntropy:
    if (splitVocabulary(call))
      return runVocabCrossEntropy(call, r, in(0), nullptr, 0.0f);
    return cpu::crossEntropy(in(0), ints(1), call.rows, call.cols, ia[0],
                             out(0), reinterpret_cast<int64_t *>(r.results[1]));
  case fb::OpCode::LossMean:
    return cpu::lossMean(in(0), ints(1), out(0));
  case fb::OpCode::TestCopy: // Kernels.def: reserved for tests, as copy.
  case fb::OpCode::Copy:
    return cpu::copy(r.operands[0],
                     static_cast<int64_t>(call.operands[0].bytes),
                     r.results[0]);
  case fb::OpCode::Transpose:
    return cpu::transpose(in(0), shape, rank, ia.data(), out(0));
  case fb::OpCode::Slice:
    return cpu::sliceBytes(
        r.operands[0], shape, rank, ia[0], ia[1], ia[2],
        static_cast<int64_t>(executableDTypeSize(call.operands[0].dtype)),
        r.results[0]);
  case fb::OpCode::Concat: {
    // Rows around the dimension: each input's piece of a row, in order.
    int64_t dim = ia[0];
    int64_t elementSize =
        static_cast<int64_t>(executableDTypeSize(call.results[0].dtype));
    AroundDim v = aroundDim(call.results[0].shape, dim);
    concatRowBytes_.resize(call.operands.size());
    for (size_t j = 0; j < call.operands.size(); ++j)
      concatRowBytes_[j] =
          call.operands[j].shape[static_cast<size_t>(dim)] * v.inner *
          elementSize;
    return cpu::concatRows(r.operands.data(), concatRowBytes_.data(),
                           static_cast<int64_t>(call.operands.size()), v.outer,
                           r.results[0]);
  }
  case fb::OpCode::Repeat:
    return cpu::repeatInterleave(in(0), shape, rank, ia[0], ia[1], out(0));
  case fb::OpCode::Cast:
    return cpu::cast(r.operands[0], floatTypeOf(call.operands[0].dtype),
                     call.count, floatTypeOf(call.results[0].dtype),
                     r.results[0]);
  case fb::OpCode::EmbeddingGrad:
    return cpu::embeddingGrad(in(0), ints(1), call.m, call.k, call.n, out(0),
                              rowBlock);
  case fb::OpCode::EmbeddingGradAccumulate:
    return cpu::embeddingGradAccumulate(
        in(0), ints(1), call.m, call.k, call.n, out(0), rowBlock,
        reinterpret_cast<int64_t *>(r.scratch), r.scratch + 2 * call.m);
  case fb::OpCode::LinearInputGrad:
    return cpu::linearInputGrad(in(0), in(1), call.m, call.k, call.n, layout(),
                                out(0));
  case fb::OpCode::LinearWeightGrad:
  case fb::OpCode::LinearWeightGradAccumulate:
    return cpu::linearWeightGrad(
        in(0), in(1), call.m, call.k, call.n, layout(), out(0),
        call.op == fb::OpCode::LinearWeightGradAccumulate);
  case fb::OpCode::SumTo:
    return cpu::sumTo(in(0), call.count, call.rhsCount, doubles, out(0));
  case fb::OpCode::LayerNormInputGrad:
    return cpu::layerNormInputGrad(in(0), in(1), in(2), call.rows, call.cols,
                                   static_cast<float>(fa[0]), out(0));
  case fb::OpCode::LayerNormParamGrad:
    return cpu::layerNormParamGrad(in(0), in(1), call.rows, call.cols,
                                   static_cast<float>(fa[0]), doubles, out(0),
                                   out(1));
  case fb::OpCode::RmsNormInputGrad:
    return cpu::rmsNormInputGrad(in(0), in(1), in(2), call.rows, call.cols,
                                 static_cast<float>(fa[0]), out(0));
  case fb::OpCode::RmsNormParamGrad:
    return cpu::rmsNormParamGrad(in(0), in(1), call.rows, call.cols,
                                 static_cast<float>(fa[0]), doubles, out(0));
  case fb::OpCode::GeluGrad:
    return cpu::geluGrad(in(0), in(1), call.count, gelu(), out(0));
  case fb::OpCode::SiluGrad:
    return cpu::siluGrad(in(0), in(1), call.count, out(0));
  case fb::OpCode::DropoutMask:
    return cpu::dropoutMask(call.count, key(0), rate(0), firstIndex,
                            r.results[0], block);
  case fb::OpCode::ApplyMask:
    return cpu::applyMask(in(0), r.operands[1], call.count, rate(0), out(0));
  case fb::OpCode::SoftmaxGrad:
    return cpu::softmaxGrad(in(0), in(1), call.outer, call.seqQ, call.seqK,
                            flag0, out(0));
  case fb::OpCode::AttentionGrad: {
    cpu::AttentionDropout dropout = attentionDropout();
    bool saved = call.attentionReadsLse();
    return cpu::attentionGrad(
        in(0), in(1), in(2), in(3), call.batch, call.heads, call.kvHeads,
        call.seqQ, call.seqK, call.headDim, call.valueDim, flag0,
        static_cast<float>(fa[0]), r.scratch, out(0), out(1), out(2),
        dropout.rate > 0.0 ? &dropout : nullptr, call.attentionLayout(),
        saved ? in(4) : nullptr, saved ? in(5) : nullptr);
  }
  case fb::OpCode::AttentionQkvGrad: {
    cpu::AttentionDropout dropout = attentionDropout();
    bool saved = call.attentionReadsLse();
    return cpu::attentionGrad(
        in(0), in(1), part(in(1), 1), part(in(1), 2), call.batch, call.heads,
        call.kvHeads, call.seqQ, call.seqK, call.headDim, call.valueDim, flag0,
        static_cast<float>(fa[0]), r.scratch, out(0), part(out(0), 1),
        part(out(0), 2), dropout.rate > 0.0 ? &dropout : nullptr,
        call.attentionLayout(), saved ? in(2) : nullptr,
        saved ? in(3) : nullptr);
  }
  case fb::OpCode::CrossEntropyGrad:
    if (splitVocabulary(call))
      return runVocabCrossEntropy(call, r, in(0), out(0), scalarIn(2));
    return cpu::crossEntropyGrad(in(0), ints(1), call.rows, call.cols, ia[0],
                                 scalarIn(2), out(0));
  case fb::OpCode::Pad:
    return cpu::pad(in(0), shape, rank, ia[0], ia[1],
                    call.results[0].shape[static_cast<size_t>(ia[0])], out(0));
  case fb::OpCode::SumGroups:
    return cpu::sumGroups(in(0), shape, rank, ia[0], ia[1], out(0));
  case fb::OpCode::CountTargets:
    return cpu::countTargets(ints(0), call.count, ia[0],
                             reinterpret_cast<int64_t *>(r.results[0]));
  case fb::OpCode::InverseCount:
    return cpu::inverseCount(ints(0), out(0));
  case fb::OpCode::AdamWUpdate:
    return cpu::adamwUpdate(out(0), in(1), out(1), out(2), call.count,
                            scalarIn(4), *ints(5),
                            cpu::AdamWOptions{fa[0], fa[1], fa[2], fa[3]},
                            call.operands.size() > 6 ? scalarIn(6) : 1.0f);
  case fb::OpCode::SgdUpdate:
    return cpu::sgdUpdate(out(0), in(1), out(1), call.count, scalarIn(3), fa[0],
                          fa[1], call.operands.size() > 4 ? scalarIn(4) : 1.0f);
  case fb::OpCode::SgdUpdatePlain:
    return cpu::sgdUpdate(out(0), in(1), nullptr, call.count, scalarIn(2), 0.0,
                          fa[0], call.operands.size() > 3 ? scalarIn(3) : 1.0f);
  case fb::OpCode::SumSquares: {
    double sum = 0.0;
    for (size_t j = 0; j < call.operands.size(); ++j)
      if (Status s = cpu::sumSquares(in(j), call.operands[j].elements, &sum);
          !s)
        return s;
    *out(0) = static_cast<float>(sum);
    return Status::ok();
  }
  case fb::OpCode::ClipCoefficient:
    return cpu::clipCoefficient(scalarIn(0), fa[0], out(0), out(1));
  case fb::OpCode::LrSchedule: {
    cpu::LrScheduleOptions options;
    options.kind =
        flag0 ? cpu::LrScheduleKind::Cosine : cpu::LrScheduleKind::Constant;
    options.lr = fa[0];
    options.minLr = fa[1];
    options.warmupSteps = ia[0];
    options.decaySteps = ia[1];
    return cpu::lrSchedule(*ints(0), options, out(0));
  }
  case fb::OpCode::Zeros:
    if (call.results[0].bytes)
      std::memset(r.results[0], 0, call.results[0].bytes);
    return Status::ok();
  case fb::OpCode::AllReduce:
  case fb::OpCode::AllGather:
  case fb::OpCode::ReduceScatter:
  case fb::OpCode::ShardSlice:
  case fb::OpCode::ShardPad:
  case fb::OpCode::AllToAll:
    return runCollective(call, r);
  case fb::OpCode::Send:
  case fb::OpCode::Recv:
    return runTransfer(call, r);
  case fb::OpCode::SendStart:
  case fb::OpCode::RecvStart:
    return startTransfer(call, r, context);
  case fb::OpCode::Wait:
    return waitTransfer(call, context);
  }
  return Status::error("unknown opcode");
}

/// cross_entropy (dLogits null) or cross_entropy_grad (dLogits, with the
/// loss sum's gradient `scale`) over a padded
/// vocabulary, the logits' columns being block `position` of it over the
/// group if there is one: per position, the max over the group, then the
/// sums of exponentials and the target's logit summed over it (one
/// all-reduce of [2, positions]), never the logits themselves.
Status CpuDevice::runVocabCrossEntropy(const KernelCall &call,
                                       const Resolved &r, const float *logits,
                                       float *dLogits, float scale) {
  Communicator *comm = call.group >= 0 ? groups_[call.group] : nullptr;
  const int64_t *labels = reinterpret_cast<const int64_t *>(r.operands[1]);
  int64_t ignore = call.intAttrs[0], rows = call.rows;
  cpu::VocabBlock block{call.groupPosition * call.cols, call.k};
  float *max = r.scratch, *sumExp = max + rows, *target = sumExp + rows;
  auto count = static_cast<std::size_t>(rows);
  // Every rank checks the same labels before any communication, so a bad
  // label fails every rank alike.
  if (Status s = cpu::crossEntropyBlockMax(logits, labels, rows, call.cols,
                                           block, ignore, max);
      !s)
    return s;
  if (comm)
    if (Status s = comm->allReduceMax(max, count); !s)
      return s;
  if (Status s = cpu::crossEntropyBlockSums(logits, labels, rows, call.cols,
                                            block, ignore, max, sumExp,
                                            dLogits ? nullptr : target);
      !s)
    return s;
  if (comm)
    if (Status s = comm->allReduceSum(sumExp, dLogits ? count : 2 * count); !s)
      return s;
  if (dLogits)
    return cpu::crossEntropyBlockGrad(logits, labels, rows, call.cols, block,
                                      ignore, max, sumExp, scale, dLogits);
  return cpu::crossEntropyCombine(labels, rows, ignore, max, sumExp, target,
                                  reinterpret_cast<float *>(r.results[0]),
                                  reinterpret_cast<int64_t *>(r.results[1]));
}

/// The collectives on the group's communicator, whose rank is this rank's
/// position in the group. Along a dimension with elements before it, the
/// pieces are staged contiguously in the scratch first (the communicator
/// exchanges whole contiguous chunks).
Status CpuDevice::runCollective(const KernelCall &call, const Resolved &r) {
  Communicator &comm = *groups_[call.group];
  const TensorRef &x = call.operands[0];
  int64_t g = call.groupSize;
  auto *scratch = reinterpret_cast<uint8_t *>(r.scratch);
  // Floats of a reduction (16-bit ones staged to f32 around it).
  float *xf = r.stagedOperands[0] ? r.stagedOperands[0]
                                  : reinterpret_cast<float *>(r.operands[0]);
  float *yf = r.stagedResults[0] ? r.stagedResults[0]
                                 : reinterpret_cast<float *>(r.results[0]);
  uint64_t elementBytes = executableDTypeSize(x.dtype);

  switch (call.op) {
  case fb::OpCode::AllReduce: {
    auto count = static_cast<std::size_t>(call.count);
    if (x.dtype == fb::DType::I64) {
      if (r.results[0] != r.operands[0])
        std::memcpy(r.results[0], r.operands[0], x.bytes);
      return comm.allReduceSum(reinterpret_cast<int64_t *>(r.results[0]),
                               count);
    }
    if (yf != xf)
      std::memcpy(yf, xf, count * sizeof(float));
    return call.flags & 1 ? comm.allReduceMax(yf, count)
                          : comm.allReduceSum(yf, count);
  }
  case fb::OpCode::AllGather: {
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    if (v.outer == 1)
      return comm.allGather(r.operands[0], r.results[0], x.bytes);
    if (Status s = comm.allGather(r.operands[0], scratch, x.bytes); !s)
      return s;
    joinPieces(scratch, v.outer, g, v.extent * v.inner * elementBytes,
               r.results[0]);
    return Status::ok();
  }
  case fb::OpCode::ReduceScatter: {
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    const float *send = xf;
    if (v.outer > 1) {
      splitPieces(reinterpret_cast<const uint8_t *>(xf), v.outer, g,
                  v.extent / g * v.inner * sizeof(float), scratch);
      send = reinterpret_cast<const float *>(scratch);
    }
    return comm.reduceScatterSum(send, yf,
                                 static_cast<std::size_t>(x.elements / g));
  }
  case fb::OpCode::ShardSlice: {
    // Local: block `position` along dim, the position being this rank's in
    // the group.
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    uint64_t rowBytes = v.extent / g * v.inner * elementBytes;
    for (int64_t o = 0; o < v.outer; ++o)
      std::memcpy(r.results[0] + o * rowBytes,
                  r.operands[0] + (o * g + call.groupPosition) * rowBytes,
                  rowBytes);
    return Status::ok();
  }
  case fb::OpCode::ShardPad: {
    // Local: zeros, with x as block `position` along dim (the position
    // being this rank's in the group): a partial sum over the group.
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    uint64_t rowBytes = v.extent * v.inner * elementBytes;
    std::memset(r.results[0], 0, call.results[0].bytes);
    for (int64_t o = 0; o < v.outer; ++o)
      std::memcpy(r.results[0] + (o * g + call.groupPosition) * rowBytes,
                  r.operands[0] + o * rowBytes, rowBytes);
    return Status::ok();
  }
  case fb::OpCode::AllToAll: {
    AroundDim split = aroundDim(x.shape, call.intAttrs[0]);
    // A piece (what each rank sends each peer) is x with split_dim / g; the
    // result's element count is x's, so the pieces' concat view is the
    // result's with concat_dim / g.
    AroundDim concat = aroundDim(call.results[0].shape, call.intAttrs[1]);
    concat.extent /= g;
    uint8_t *send = scratch, *recv = scratch + lineBytes(x.bytes);
    splitPieces(r.operands[0], split.outer, g,
                split.extent / g * split.inner * elementBytes, send);
    if (Status s = comm.allToAll(send, recv, x.bytes / g); !s)
      return s;
    joinPieces(recv, concat.outer, g,
               concat.extent * concat.inner * elementBytes, r.results[0]);
    return Status::ok();
  }
  default:
    return Status::error("not a collective");
  }
}

/// The tag of every transfer between stages: the stages' kernel lists order
/// the transfers between two ranks alike, so per-peer FIFO pairs them.
constexpr int kTransferTag = 0;

/// send and recv on the group's communicator: the whole buffer to or from
/// position `peer` (int_attrs[0]), blocking, with one tag, in messages of at
/// most pieceBytes_ (MPI counts are ints; both sides cut a buffer alike).
Status CpuDevice::runTransfer(const KernelCall &call, const Resolved &r) {
  Communicator &comm = *groups_[call.group];
  int peer = static_cast<int>(call.intAttrs[0]);
  bool send = call.op == fb::OpCode::Send;
  uint64_t bytes = send ? call.operands[0].bytes : call.results[0].bytes;
  uint8_t *data = send ? r.operands[0] : r.results[0];
  for (uint64_t at = 0; at < bytes; at += pieceBytes_) {
    auto piece = static_cast<std::size_t>(std::min(pieceBytes_, bytes - at));
    if (Status s = send ? comm.send(data + at, piece, peer, kTransferTag)
                        : comm.recv(data + at, piece, peer, kTransferTag);
        !s)
      return s;
  }
  return Status::ok();
}

/// send_start and recv_start: runTransfer's pieces, each started on its
/// request of the table (the same channel and tag, so started and blocking
/// transfers pair in the order they were issued).
Status CpuDevice::startTransfer(const KernelCall &call, const Resolved &r,
                                const StepContext &context) {
  StartedTransfer &entry = startedOn(call, context);
  if (entry.startKernel != StartedTransfer::kIdle)
    return Status::error("its buffer still has the transfer of kernel " +
                         std::to_string(entry.startKernel) + " in flight");
  Communicator &comm = *groups_[call.group];
  int peer = static_cast<int>(call.intAttrs[0]);
  bool send = call.op == fb::OpCode::SendStart;
  uint64_t bytes = transferBuffer(call).bytes;
  uint8_t *data = send ? r.operands[0] : r.results[0];
  // In flight from the first piece: a failed start leaves the pieces before
  // it to the wait.
  entry.startKernel = call.index;
  entry.comm = &comm;
  for (size_t i = 0; i < entry.pieces.size(); ++i) {
    uint64_t at = i * pieceBytes_;
    auto piece = static_cast<std::size_t>(std::min(pieceBytes_, bytes - at));
    if (Status s = send ? comm.startSend(data + at, piece, peer, kTransferTag,
                                         entry.pieces[i])
                        : comm.startRecv(data + at, piece, peer, kTransferTag,
                                         entry.pieces[i]);
        !s)
      return s;
  }
  return Status::ok();
}

/// wait: every piece of the transfer started on the operand's instance.
Status CpuDevice::waitTransfer(const KernelCall &call,
                               const StepContext &context) {
  StartedTransfer &entry = startedOn(call, context);
  if (entry.startKernel == StartedTransfer::kIdle)
    return Status::error("no transfer started on its buffer is in flight");
  entry.startKernel = StartedTransfer::kIdle;
  return entry.comm->waitAll(entry.pieces.data(), entry.pieces.size());
}

} // namespace

std::unique_ptr<Device> tpcrt::createCpuDevice(uint64_t transferPieceBytes) {
  return std::make_unique<CpuDevice>(transferPieceBytes);
}
