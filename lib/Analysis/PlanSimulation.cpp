//===- PlanSimulation.cpp - the predicted step of a lowered plan ----------===//
//
// Prices every rt.kernel of the program (Cost.h), folds each function into
// a short list of simulator ops (busy time, transfers, barriers), expands
// each stage's action list into them, and replays the stages together
// (Simulator.h). Ranks of one stage run the same program on their blocks,
// so one simulated rank stands for each stage; collectives over `pp` are
// barriers. Collectives inside a stage (tp, dp) are busy time on the
// compute stream, except on a description whose runtime device is cuda:
// that device runs them on a stream per communicator (group of axes) and a
// kernel waits only for those whose bytes its own meet (CollectiveStream.h);
// it runs some groups of kernels as one, priced as one kernel, and the
// attention backwards cuDNN refuses on its own kernels (the caller's
// rt::planCudaDevice).
//
//===----------------------------------------------------------------------===//

#include "CollectiveStream.h"

#include "tpc/Analysis/Cost.h"
#include "tpc/Analysis/PlanModel.h"
#include "tpc/Analysis/Report.h"
#include "tpc/Analysis/Simulator.h"

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Tpc/IR/TpcDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

int64_t bytesOf(Value buffer) {
  return rt::getBufferBytes(cast<MemRefType>(buffer.getType()));
}

/// The bytes a kernel reads and writes, each operand and result once.
int64_t kernelBytes(rt::KernelOp kernel) {
  int64_t bytes = 0;
  for (Value buffer : kernel.getInputs())
    bytes += bytesOf(buffer);
  for (Value buffer : kernel.getOutputs())
    bytes += bytesOf(buffer);
  return bytes;
}

/// Whether two buffers are the same arena bytes: the memory plan hands a
/// reshape's operand over to its result (rt-plan-memory), and the devices
/// skip a copy onto its own bytes.
bool sameBytes(Value a, Value b) {
  auto placed = [](Value buffer) -> std::optional<std::pair<int64_t, int64_t>> {
    auto alloc = buffer.getDefiningOp<rt::AllocOp>();
    if (!alloc || !alloc.getOffset())
      return std::nullopt;
    return std::make_pair(alloc.getPool().value_or(-1), *alloc.getOffset());
  };
  std::optional<std::pair<int64_t, int64_t>> at = placed(a);
  return at && at == placed(b) && bytesOf(a) == bytesOf(b);
}

int64_t elementsOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getNumElements();
}

int64_t dimOf(Value buffer, int64_t dim) {
  auto type = cast<MemRefType>(buffer.getType());
  return type.getDimSize(dim < 0 ? type.getRank() + dim : dim);
}

/// Whether every row (last dimension) of `kernel`'s operands and results
/// is a whole number of kGemmRowAlignmentBytes, as a matrix product's
/// tensor-core kernels need.
bool rowsAligned(rt::KernelOp kernel) {
  for (Value buffer : kernel->getOperands()) {
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!type || type.getRank() == 0)
      continue;
    int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    if (!gemmRowsAligned({dimOf(buffer, -1)}, elementBytes))
      return false;
  }
  return true;
}

/// The bytes of the rows of `table` ([rows, ...]) that `ids` hit: one row
/// an id at most, the whole table at most.
double rowsHitBytes(Value table, Value ids) {
  double whole = static_cast<double>(bytesOf(table));
  return std::min(whole, static_cast<double>(elementsOf(ids)) * whole /
                             static_cast<double>(dimOf(table, 0)));
}

StringRef dtypeOf(Value buffer) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return element.isBF16() ? "bf16" : element.isF16() ? "fp16" : "fp32";
}

/// One step of a function as the simulator sees it.
struct Piece {
  sim::Op::Kind kind = sim::Op::Busy;
  sim::Category category = sim::Compute;
  double seconds = 0;
  /// Transfers: the peer stage; waits: the buffer whose start it waits.
  int peer = -1;
  Value buffer;
  /// A collective on the communication stream (CollectiveStart), or a
  /// kernel's wait for those in flight that its bytes meet (a Wait with
  /// `onStream`): the buffers it reads and writes.
  bool onStream = false;
  uint8_t stream = 0;
  SmallVector<Value, 2> reads, writes;
  /// The description's price that sets `seconds` (the report's
  /// kernel_prices): "gemm", "gemm_unaligned[.kinds.<opcode>]", "attention",
  /// "attention_own_kernels.<forward| backward>[_dropout]",
  /// "elementwise_bandwidth[.kinds.<kind>]" (also a product whose bytes take
  /// longer than its FLOPs) or "communication".
  std::string price;
};

/// A kind's price over several pieces: theirs, or "mixed" where they
/// differ.
void notePrice(std::string &kindPrice, const std::string &price) {
  if (kindPrice.empty())
    kindPrice = price;
  else if (kindPrice != price)
    kindPrice = "mixed";
}

class Pricer {
public:
  Pricer(const Hardware &hw, rt::ProgramOp program)
      : hw(hw), overlapsCollectives(hw.runtimeDevice == "cuda") {
    if (auto mesh = program.getMeshAttr()) {
      for (unsigned axis = 0; axis < mesh.getNumAxes(); ++axis)
        meshSizes.push_back(mesh.getSizes()[axis]);
      ppAxis = mesh.getAxisIndex("pp");
    }
  }

  /// The piece of one kernel of `kind` (GroupPricer::kindOf: a
  /// memory-bound kind is priced at its description's efficiency), or
  /// failure (an error emitted on it); with `groupBytes`, the bytes it
  /// moves are those (a fused group's); `ownAttention`: an attention kernel
  /// the device runs on its own kernels (DevicePlan).
  FailureOr<Piece> price(rt::KernelOp kernel, StringRef kind,
                         std::optional<int64_t> groupBytes = std::nullopt,
                         bool ownAttention = false);

  /// An all_reduce of `bytes` over `kernel`'s group: a run of them that
  /// the CUDA device issues as one NCCL group, priced as one collective.
  double allReduceSeconds(rt::KernelOp kernel, double bytes) {
    return groupSeconds(CollectiveKind::AllReduce, bytes, axesOf(kernel, 0));
  }

private:
  /// A memory-bound kind's price: its own fraction or the value.
  std::string elementwisePrice(StringRef kind) const {
    return hw.elementwiseKinds.count(kind.str())
               ? "elementwise_bandwidth.kinds." + kind.str()
               : "elementwise_bandwidth";
  }

  double groupSeconds(CollectiveKind kind, double bytes,
                      const std::vector<unsigned> &axes) {
    return collectiveSeconds(
        hw, kind, bytes, groupSize(axes),
        groupMembersPerNode(meshSizes, axes, hw.devicesPerNode));
  }

  FailureOr<double> peakFor(rt::KernelOp kernel, Value operand) {
    StringRef dtype = dtypeOf(operand);
    double peak = hw.peakFlops(dtype);
    // A description without 16-bit peaks (a CPU's) computes them in fp32.
    if (peak == 0 && dtype != "fp32" && !hw.peakBf16 && !hw.peakFp16)
      peak = hw.peakFp32;
    if (peak == 0) {
      kernel.emitError() << "--hardware " << hw.name << " ('" << hw.path
                         << "') has no " << dtype
                         << " peak for this kernel";
      return failure();
    }
    return peak;
  }

  /// The axes a collective's ints end with, from `first`.
  std::vector<unsigned> axesOf(rt::KernelOp kernel, size_t first) {
    std::vector<unsigned> axes;
    ArrayRef<int64_t> ints = kernel.getInts();
    for (size_t i = first; i < ints.size(); ++i)
      axes.push_back(static_cast<unsigned>(ints[i]));
    return axes;
  }

  int64_t groupSize(const std::vector<unsigned> &axes) {
    int64_t size = 1;
    for (unsigned axis : axes)
      size *= meshSizes[axis];
    return size;
  }

  /// One communication stream per group of axes.
  uint8_t streamOf(const std::vector<unsigned> &axes) {
    auto it = llvm::find(streamAxes, axes);
    if (it != streamAxes.end())
      return static_cast<uint8_t>(it - streamAxes.begin());
    streamAxes.push_back(axes);
    return static_cast<uint8_t>(streamAxes.size() - 1);
  }
  std::vector<std::vector<unsigned>> streamAxes;

  bool crossesPipeline(const std::vector<unsigned> &axes) {
    return ppAxis && llvm::is_contained(axes, *ppAxis);
  }

  /// Whether ranks of stages `from` and `to` with equal other coordinates
  /// sit on different nodes.
  bool pairSpansNodes(int64_t from, int64_t to) {
    if (!ppAxis)
      return false;
    int64_t world = 1;
    for (int64_t size : meshSizes)
      world *= size;
    int64_t stride = 1;
    for (size_t axis = meshSizes.size(); axis-- > *ppAxis + 1;)
      stride *= meshSizes[axis];
    for (int64_t rank = 0; rank < world; ++rank) {
      int64_t stage = (rank / stride) % meshSizes[*ppAxis];
      if (stage != from)
        continue;
      int64_t peer = rank + (to - from) * stride;
      if (rank / hw.devicesPerNode != peer / hw.devicesPerNode)
        return true;
    }
    return false;
  }

  const Hardware &hw;
  /// Collectives inside a stage go on a communication stream.
  const bool overlapsCollectives;
  std::vector<int64_t> meshSizes;
  std::optional<unsigned> ppAxis;
};

FailureOr<Piece> Pricer::price(rt::KernelOp kernel, StringRef kind,
                               std::optional<int64_t> groupBytes,
                               bool ownAttention) {
  using rt::OpCode;
  Piece piece;
  int64_t bytes = groupBytes ? *groupBytes : kernelBytes(kernel);
  auto inputs = kernel.getInputs();
  auto outputs = kernel.getOutputs();
  // A product's price: its FLOPs' (`key`), or the bandwidth's where its
  // bytes took longer.
  auto computeOrBytes = [&](bool boundByMemory, std::string key) {
    piece.price = boundByMemory ? "elementwise_bandwidth" : key;
  };
  auto matmul = [&](double flops) -> FailureOr<Piece> {
    FailureOr<double> peak = peakFor(kernel, inputs[0]);
    if (failed(peak))
      return failure();
    // A 16-bit product with a row that is not whole 16-byte units runs
    // off the tensor cores' fast kernels: at most the description's
    // fraction for it.
    double ceiling = 0;
    StringRef opcode = rt::stringifyOpCode(kernel.getOpcode());
    if (dtypeOf(inputs[0]) != "fp32" && !rowsAligned(kernel))
      ceiling = hw.gemmUnalignedEfficiencyOf(opcode);
    bool boundByMemory;
    piece.seconds =
        matmulSeconds(hw, flops, bytes, *peak, &boundByMemory, ceiling);
    bool capped = ceiling > 0 && ceiling < hw.gemm.at(flops);
    computeOrBytes(boundByMemory, !capped ? "gemm"
                                  : hw.gemmUnalignedKinds.count(opcode.str())
                                      ? "gemm_unaligned.kinds." + opcode.str()
                                      : std::string("gemm_unaligned"));
    return piece;
  };
  // The own kernels at the description's measured efficiencies, where it
  // has them (else the attention efficiency, cuDNN's and FA3's class).
  auto attention = [&](double scores, double rows, double flops,
                       bool backward) -> FailureOr<Piece> {
    FailureOr<double> peak = peakFor(kernel, inputs[0]);
    if (failed(peak))
      return failure();
    // float_attrs [scale, dropout rate].
    ArrayRef<double> floats = kernel.getFloats();
    bool dropout = floats.size() > 1 && floats[1] > 0;
    double own =
        ownAttention ? hw.ownAttentionEfficiency(backward, dropout) : 0.0;
    double extra = hw.attentionExtraSeconds(backward, dropout, scores, rows);
    bool boundByMemory;
    piece.seconds =
        attentionSeconds(hw, flops, bytes, *peak, own, extra, &boundByMemory);
    computeOrBytes(boundByMemory,
                   own > 0 ? std::string("attention_own_kernels.") +
                                 (backward ? "backward" : "forward") +
                                 (dropout ? "_dropout" : "")
                           : "attention");
    return piece;
  };
  // A memory-bound kernel moving `moved` bytes, at its kind's rate.
  auto memoryBound = [&](double moved) -> FailureOr<Piece> {
    piece.seconds =
        memoryBoundSeconds(hw, moved, hw.elementwiseEfficiencyOf(kind));
    piece.price = elementwisePrice(kind);
    return piece;
  };
  auto collective = [&](CollectiveKind kind, int64_t size,
                        size_t firstAxis) -> FailureOr<Piece> {
    std::vector<unsigned> axes = axesOf(kernel, firstAxis);
    piece.category = sim::Communication;
    piece.seconds = groupSeconds(kind, static_cast<double>(size), axes);
    piece.price = "communication";
    if (crossesPipeline(axes)) {
      piece.kind = sim::Op::Barrier;
    } else if (overlapsCollectives) {
      piece.kind = sim::Op::CollectiveStart;
      piece.stream = streamOf(axes);
      piece.reads.assign(inputs.begin(), inputs.end());
      piece.writes.assign(outputs.begin(), outputs.end());
    }
    return piece;
  };
  auto transfer = [&](sim::Op::Kind kind, Value buffer) -> FailureOr<Piece> {
    piece.kind = kind;
    piece.category = sim::Communication;
    piece.peer = static_cast<int>(kernel.getInts()[0]);
    piece.buffer = buffer;
    piece.price = "communication";
    int64_t stage = kernel.getStage() ? *kernel.getStage() : 0;
    piece.seconds = collectiveSeconds(hw, CollectiveKind::PointToPoint,
                                      static_cast<double>(bytesOf(buffer)), 2,
                                      pairSpansNodes(stage, piece.peer) ? 1
                                                                        : 2);
    return piece;
  };

  // An attention backward's products over the scores, in units of d and
  // d_v: FlashAttention's five (S, dP, dV, dK, dQ), as FA3-class kernels and
  // cuDNN run it; the CUDA device's own kernels seven with the forward's
  // log-sum-exps (dK and dV, then S and dP again for dQ without atomics)
  // and nine without them (the forward's S and P V first).
  auto backwardProducts = [&](bool readsLse) -> std::pair<double, double> {
    if (!ownAttention)
      return {3, 2};
    return readsLse ? std::make_pair(4.0, 3.0) : std::make_pair(5.0, 4.0);
  };
  // Flag bit 0: causal (the kernels skip the masked scores); bit 1:
  // sequence-major, where the keys' length is dim 1 of k, else dim 2.
  const bool causal = kernel.getFlags() & 1;
  const int keyLengthDim = kernel.getFlags() & 2 ? 1 : 2;
  const int queryLengthDim = keyLengthDim;
  switch (kernel.getOpcode()) {
  case OpCode::Linear:
    return matmul(2.0 * elementsOf(outputs[0]) * dimOf(inputs[0], -1));
  case OpCode::LinearInputGrad:
    return matmul(2.0 * elementsOf(inputs[0]) * dimOf(outputs[0], -1));
  case OpCode::LinearWeightGrad:
  case OpCode::LinearWeightGradAccumulate:
    return matmul(2.0 * elementsOf(inputs[1]) * dimOf(inputs[0], -1));
  case OpCode::BatchMatmul: {
    bool transposeLhs = kernel.getFlags() & 1;
    return matmul(2.0 * elementsOf(outputs[0]) *
                  dimOf(inputs[0], transposeLhs ? -2 : -1));
  }
  case OpCode::Attention:
  case OpCode::AttentionLse:
  case OpCode::AttentionGrad: {
    // The gradient's operands are dO, q, k, v (then the forward's output
    // and lse, if given); b * heads * s_q query rows.
    bool grad = kernel.getOpcode() == OpCode::AttentionGrad;
    Value query = inputs[grad ? 1 : 0], key = inputs[grad ? 2 : 1],
          value = inputs[grad ? 3 : 2];
    double rows = 1.0 * dimOf(query, 0) * dimOf(query, 1) * dimOf(query, 2);
    double scores = attentionScores(rows, dimOf(query, queryLengthDim),
                                    dimOf(key, keyLengthDim), causal,
                                    hw.attentionBlockRows);
    double d = dimOf(query, 3), dv = dimOf(value, 3);
    if (!grad)
      return attention(scores, rows, 2 * scores * (d + dv), false);
    auto [perD, perDv] = backwardProducts(inputs.size() == 6);
    return attention(scores, rows, 2 * scores * (perD * d + perDv * dv), true);
  }
  case OpCode::AttentionQkv:
  case OpCode::AttentionQkvLse:
  case OpCode::AttentionQkvGrad: {
    // qkv [b, s, 3, heads, d] (the gradient's operand 1): b * heads * s
    // query rows of s keys; d = d_v.
    bool grad = kernel.getOpcode() == OpCode::AttentionQkvGrad;
    Value qkv = inputs[grad ? 1 : 0];
    double seq = dimOf(qkv, 1), headDim = dimOf(qkv, 4);
    double rows = 1.0 * dimOf(qkv, 0) * dimOf(qkv, 3) * seq;
    double scores =
        attentionScores(rows, seq, seq, causal, hw.attentionBlockRows);
    if (!grad)
      return attention(scores, rows, 2 * scores * 2 * headDim, false);
    auto [perD, perDv] = backwardProducts(inputs.size() == 4);
    return attention(scores, rows, 2 * scores * (perD + perDv) * headDim, true);
  }
  case OpCode::AllReduce:
    return collective(CollectiveKind::AllReduce, bytesOf(inputs[0]), 0);
  case OpCode::AllGather:
    return collective(CollectiveKind::AllGather, bytesOf(outputs[0]), 1);
  case OpCode::ReduceScatter:
    return collective(CollectiveKind::ReduceScatter, bytesOf(inputs[0]), 1);
  case OpCode::AllToAll:
    return collective(CollectiveKind::AllToAll, bytesOf(inputs[0]), 2);
  case OpCode::Send:
    return transfer(sim::Op::Send, inputs[0]);
  case OpCode::SendStart:
    return transfer(sim::Op::SendStart, inputs[0]);
  case OpCode::Recv:
    return transfer(sim::Op::Recv, outputs[0]);
  case OpCode::RecvStart:
    return transfer(sim::Op::RecvStart, outputs[0]);
  case OpCode::Wait:
    piece.kind = sim::Op::Wait;
    piece.category = sim::Communication;
    piece.buffer = inputs[0];
    return piece;
  case OpCode::Embedding:
    // The ids, the rows they hit and the result, not the whole table.
    return memoryBound(
        static_cast<double>(bytesOf(inputs[1]) + bytesOf(outputs[0])) +
        rowsHitBytes(inputs[0], inputs[1]));
  case OpCode::EmbeddingGradAccumulate:
    // dY and the ids, and the rows of the f32 sum they hit read and
    // written, not the whole table.
    return memoryBound(
        static_cast<double>(bytesOf(inputs[0]) + bytesOf(inputs[1])) +
        2 * rowsHitBytes(outputs[0], inputs[1]));
  case OpCode::Copy:
  case OpCode::TestCopy:
  case OpCode::Cast:
    if (cast<MemRefType>(inputs[0].getType()).getElementType() ==
            cast<MemRefType>(outputs[0].getType()).getElementType() &&
        sameBytes(inputs[0], outputs[0]))
      return piece;
    [[fallthrough]];
  default:
    return memoryBound(static_cast<double>(bytes));
  }
}

bool isMatmul(rt::KernelOp kernel) {
  switch (kernel.getOpcode()) {
  case rt::OpCode::Linear:
  case rt::OpCode::LinearInputGrad:
  case rt::OpCode::LinearWeightGrad:
  case rt::OpCode::LinearWeightGradAccumulate:
    return true;
  default:
    return false;
  }
}

/// Whether the CUDA device launches `kernel` with `previous`, the kernel
/// before it, as one multi-tensor optimizer launch: both adamw_update with
/// the same attributes and scalars (lr, step, grad_scale), neither pooled
/// (CudaDevice::planOptimizerBatches).
bool continuesOptimizerBatch(rt::KernelOp previous, rt::KernelOp kernel) {
  auto pooled = [](rt::KernelOp k) {
    return llvm::any_of(k->getOperands(), [](Value buffer) {
      auto alloc = buffer.getDefiningOp<rt::AllocOp>();
      return alloc && alloc.getPoolAttr();
    });
  };
  if (previous.getOpcode() != rt::OpCode::AdamWUpdate ||
      kernel.getOpcode() != rt::OpCode::AdamWUpdate ||
      previous.getInputs().size() != kernel.getInputs().size() ||
      previous.getFloatsAttr() != kernel.getFloatsAttr() || pooled(previous) ||
      pooled(kernel))
    return false;
  for (size_t j = 4; j < kernel.getInputs().size(); ++j)
    if (previous.getInputs()[j] != kernel.getInputs()[j])
      return false;
  return true;
}

/// Whether the CUDA device issues `kernel` in one NCCL group with the
/// all_reduce just before it: both all_reduce over the same group
/// (CudaDevice::planReductionRuns; rt-bucket-reductions makes such runs).
bool continuesReductionRun(rt::KernelOp previous, rt::KernelOp kernel) {
  return previous.getOpcode() == rt::OpCode::AllReduce &&
         kernel.getOpcode() == rt::OpCode::AllReduce &&
         previous.getInts() == kernel.getInts();
}

/// A runtime device's fused groups priced as one kernel each: the tail (a
/// group's last kernel) is the group, its other kernels cost nothing alone.
/// The group moves each outside buffer once: the members' operands but
/// those a member before wrote, and their results but the intermediates the
/// device never writes (a result a later member reads, unless the head's is
/// written anyway or the result is read outside the group). An epilogue group
/// is its matrix product's; the others are memory-bound.
class GroupPricer {
public:
  GroupPricer(Pricer &pricer, MutableArrayRef<rt::KernelOp> kernels,
              const DevicePlan &device)
      : pricer(pricer), kernels(kernels),
        groups(device.groups.begin(), device.groups.end()),
        ownAttention(device.ownAttention.begin(), device.ownAttention.end()),
        squaresInUpdates(device.squaresInUpdates.begin(),
                         device.squaresInUpdates.end()) {
    llvm::append_range(groups, device.batches);
    batchesFrom = device.groups.size();
    for (auto [g, group] : llvm::enumerate(groups))
      for (int64_t k : group.kernels)
        groupOf[k] = g;
  }

  FailureOr<Piece> price(int64_t k) {
    if (squaresInUpdates.contains(k)) {
      // The optimizer batch before it summed the squares in its pass over
      // the gradients: it adds the partial sums alone.
      rt::KernelOp squares = kernels[k];
      int64_t partials = static_cast<int64_t>(squares.getInputs().size()) *
                         kCudaSquaresPartialBlocks * 8;
      int64_t bytes = partials + bytesOf(squares.getOutputs()[0]);
      bytesNotMoved += kernelBytes(squares) - bytes;
      return pricer.price(squares, kindOf(k), bytes);
    }
    auto it = groupOf.find(k);
    if (it == groupOf.end())
      return pricer.price(kernels[k], kindOf(k), std::nullopt,
                          ownAttention.contains(k));
    const FusedGroup &group = groups[it->second];
    if (k != group.kernels.back())
      return Piece();
    rt::KernelOp head = kernels[group.kernels.front()];
    int64_t bytes = groupBytes(group);
    for (int64_t m : group.kernels)
      bytesNotMoved += kernelBytes(kernels[m]);
    bytesNotMoved -= bytes;
    return pricer.price(isMatmul(head) ? head : kernels[k], kindOf(k), bytes);
  }

  /// The kind of kernel `k`: its opcode, or its group's opcodes joined by
  /// '+'.
  std::string kindOf(int64_t k) {
    auto it = groupOf.find(k);
    if (it == groupOf.end())
      return rt::stringifyOpCode(kernels[k].getOpcode()).str();
    std::string kind;
    if (it->second >= batchesFrom) {
      // A batch: its opcodes, each once, in order.
      SmallVector<StringRef> names;
      for (int64_t m : groups[it->second].kernels) {
        StringRef name = rt::stringifyOpCode(kernels[m].getOpcode());
        if (!llvm::is_contained(names, name))
          names.push_back(name);
      }
      return llvm::join(names, ",") + " batch";
    }
    for (int64_t m : groups[it->second].kernels) {
      if (!kind.empty())
        kind += '+';
      kind += rt::stringifyOpCode(kernels[m].getOpcode());
    }
    return kind;
  }

  /// The bytes the groups do not move (over one run of each).
  int64_t bytesNotMoved = 0;

private:
  int64_t groupBytes(const FusedGroup &group) {
    DenseSet<Value> written, readLater, counted;
    DenseSet<Operation *> members;
    for (int64_t k : group.kernels)
      members.insert(kernels[k]);
    for (size_t i = 1; i < group.kernels.size(); ++i)
      for (Value in : kernels[group.kernels[i]].getInputs())
        readLater.insert(in);
    // A result that a kernel outside the group reads, or a binding names,
    // is written though a later member reads it (the residual stream
    // under a norm group's dropout, the forward's residual under its
    // norm).
    auto usedOutside = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        auto kernel = dyn_cast<rt::KernelOp>(user);
        return !members.contains(user) &&
               (!kernel || llvm::is_contained(kernel.getInputs(), v));
      });
    };
    int64_t bytes = 0;
    for (auto [i, k] : llvm::enumerate(group.kernels)) {
      for (Value in : kernels[k].getInputs())
        if (!written.contains(in) && counted.insert(in).second)
          bytes += bytesOf(in);
      for (Value out : kernels[k].getOutputs()) {
        written.insert(out);
        bool intermediate = i + 1 < group.kernels.size() &&
                            readLater.contains(out) && !group.headWritten &&
                            !usedOutside(out);
        if (!intermediate && counted.insert(out).second)
          bytes += bytesOf(out);
      }
    }
    return bytes;
  }

  Pricer &pricer;
  MutableArrayRef<rt::KernelOp> kernels;
  /// The device's fused groups, then its batches (from batchesFrom on).
  SmallVector<FusedGroup> groups;
  size_t batchesFrom = 0;
  DenseSet<int64_t> ownAttention, squaresInUpdates;
  DenseMap<int64_t, size_t> groupOf;
};

/// On a device that runs collectives on a communication stream: the wait
/// of each kernel for those in flight, as a piece that names the buffers
/// to look at (the replay of a stage resolves it against what is in flight
/// there). Only buffers whose bytes a collective touches are looked at, and
/// within a function each (buffer, read or write) once until the function's
/// next collective: a second look would find nothing new in flight.
class StreamWaits {
public:
  StreamWaits(ArrayRef<rt::KernelOp> kernels, stream::Footprints &footprints)
      : footprints(footprints) {
    for (rt::KernelOp kernel : kernels)
      if (rt::isCollective(kernel.getOpcode()))
        for (Value buffer : kernel->getOperands())
          collectiveBytes.add(footprints.extent(buffer));
    collectiveBytes.seal();
  }

  /// A new function, or a collective just issued in this one.
  void reset() { looked.clear(); }

  /// The wait piece of `kernel`, or nullopt when it has nothing to look at.
  std::optional<Piece> before(rt::KernelOp kernel) {
    Piece piece;
    piece.kind = sim::Op::Wait;
    piece.category = sim::Communication;
    piece.onStream = true;
    for (Value buffer : kernel.getOutputs())
      if (relevant(buffer) && looked.insert({buffer, 1u}).second)
        piece.writes.push_back(buffer);
    for (Value buffer : kernel.getInputs())
      if (!looked.contains({buffer, 1u}) && relevant(buffer) &&
          looked.insert({buffer, 0u}).second)
        piece.reads.push_back(buffer);
    if (piece.reads.empty() && piece.writes.empty())
      return std::nullopt;
    return piece;
  }

private:
  bool relevant(Value buffer) {
    return collectiveBytes.meets(footprints.extent(buffer));
  }

  stream::Footprints &footprints;
  stream::CollectiveBytes collectiveBytes;
  /// (buffer, written) looked at since the function's start or its last
  /// collective.
  DenseSet<std::pair<Value, unsigned>> looked;
};

/// A range of kernels, folded: consecutive busy pieces of one category
/// summed.
struct Function {
  int64_t first = 0, count = 0;
  SmallVector<Piece, 4> pieces;
  /// Each kind of kernel's seconds over one run (a fused group's under its
  /// members' opcodes joined by '+'), and its price (Piece::price).
  llvm::StringMap<double> kindSeconds;
  llvm::StringMap<std::string> kindPrices;
};

struct ActionRef {
  int64_t function, slot;
};

} // namespace

LogicalResult mlir::tpc::predictStep(ModuleOp module, const Hardware &hw,
                                     CompileReport &report,
                                     const DevicePlan &device) {
  auto programs = module.getOps<rt::ProgramOp>();
  if (programs.empty())
    return module.emitError("--hardware: no rt.program to predict");
  rt::ProgramOp program = *programs.begin();
  SmallVector<rt::KernelOp> kernels(program.getOps<rt::KernelOp>());

  // The functions (one over every kernel without them) and the lists.
  SmallVector<Function, 0> functions;
  if (auto attr = program->getAttrOfType<ArrayAttr>("functions")) {
    for (auto entry : attr.getAsRange<DictionaryAttr>()) {
      Function function;
      function.first = entry.getAs<IntegerAttr>("first").getInt();
      function.count = entry.getAs<IntegerAttr>("count").getInt();
      functions.push_back(function);
    }
  } else {
    functions.push_back({0, static_cast<int64_t>(kernels.size()), {}});
  }
  SmallVector<SmallVector<ActionRef, 0>> lists;
  auto readList = [&](DenseI64ArrayAttr list) {
    SmallVector<ActionRef, 0> actions;
    for (int64_t a = 0; a + 2 < list.size(); a += 3)
      actions.push_back({list[a], list[a + 2]});
    lists.push_back(std::move(actions));
  };
  if (auto attr = program->getAttrOfType<ArrayAttr>("stage_actions")) {
    for (Attribute list : attr)
      readList(cast<DenseI64ArrayAttr>(list));
  } else if (auto list =
                 program->getAttrOfType<DenseI64ArrayAttr>("actions")) {
    readList(list);
  } else {
    lists.push_back({{0, 0}});
  }

  Pricer pricer(hw, program);
  for (const FusedGroup &group : device.groups)
    for (int64_t k : group.kernels)
      if (k < 0 || k >= static_cast<int64_t>(kernels.size()))
        return program.emitError("--hardware: a fused group names kernel ")
               << k << " of " << kernels.size();
  for (int64_t k : device.ownAttention)
    if (k < 0 || k >= static_cast<int64_t>(kernels.size()))
      return program.emitError("--hardware: the device's attention kernel ")
             << k << " is not one of the " << kernels.size();
  for (int64_t k : device.squaresInUpdates)
    if (k < 0 || k >= static_cast<int64_t>(kernels.size()) ||
        kernels[k].getOpcode() != rt::OpCode::SumSquares)
      return program.emitError("--hardware: the device's sum_squares kernel ")
             << k << " is not a sum_squares of the " << kernels.size();
  GroupPricer groups(pricer, kernels, device);
  stream::Footprints footprints(program);
  std::optional<StreamWaits> streamWaits;
  if (hw.runtimeDevice == "cuda")
    streamWaits.emplace(kernels, footprints);
  for (Function &function : functions) {
    if (streamWaits)
      streamWaits->reset();
    // The run of all_reduces going on: its first piece and its bytes.
    int64_t runFirst = -1;
    double runBytes = 0;
    for (int64_t k = function.first; k < function.first + function.count;
         ++k) {
      if (k >= static_cast<int64_t>(kernels.size()))
        return program.emitError("--hardware: function ends past the last "
                                 "kernel");
      FailureOr<Piece> piece = groups.price(k);
      if (failed(piece))
        return failure();
      // A run of optimizer updates is one launch on the CUDA device.
      if (streamWaits && k > function.first &&
          continuesOptimizerBatch(kernels[k - 1], kernels[k]))
        piece->seconds = std::max(0.0, piece->seconds - hw.kernelLaunchSeconds);
      // A run of all_reduces is one NCCL group on the CUDA device: one
      // collective of their bytes, each member in flight (its own event)
      // until all of it is done. The first member's piece carries the run;
      // the others take no time of their own on the stream after it.
      if (kernels[k].getOpcode() == rt::OpCode::AllReduce &&
          piece->kind == sim::Op::CollectiveStart) {
        double bytes = static_cast<double>(bytesOf(kernels[k].getInputs()[0]));
        if (streamWaits && runFirst >= 0 && k > function.first &&
            continuesReductionRun(kernels[k - 1], kernels[k])) {
          Piece &first = function.pieces[runFirst];
          runBytes += bytes;
          double seconds = pricer.allReduceSeconds(kernels[k], runBytes);
          function.kindSeconds[groups.kindOf(k)] += seconds - first.seconds;
          first.seconds = seconds;
          piece->seconds = 0;
        } else {
          runBytes = bytes;
          runFirst = static_cast<int64_t>(function.pieces.size());
        }
      } else {
        runFirst = -1;
      }
      if (piece->kind == sim::Op::CollectiveStart) {
        streamWaits->reset();
      } else if (streamWaits && !rt::isCollective(kernels[k].getOpcode())) {
        if (std::optional<Piece> wait = streamWaits->before(kernels[k]))
          function.pieces.push_back(std::move(*wait));
      }
      if (piece->seconds > 0) {
        std::string kind = groups.kindOf(k);
        function.kindSeconds[kind] += piece->seconds;
        notePrice(function.kindPrices[kind], piece->price);
      }
      if (kernels[k]->hasAttr(kRecomputeAttrName) &&
          piece->category == sim::Compute)
        piece->category = sim::Recompute;
      if (piece->kind == sim::Op::Busy && !function.pieces.empty() &&
          function.pieces.back().kind == sim::Op::Busy &&
          function.pieces.back().category == piece->category) {
        function.pieces.back().seconds += piece->seconds;
        continue;
      }
      function.pieces.push_back(*piece);
    }
  }

  // Expand each stage's actions.
  std::vector<std::vector<sim::Op>> ranks(lists.size());
  auto spans = [&](ArrayRef<Value> buffers, int64_t slot) {
    SmallVector<stream::ByteRange, 4> result;
    for (Value buffer : buffers)
      result.push_back(footprints.of(buffer, slot));
    return result;
  };
  SmallVector<llvm::StringMap<double>, 1> stageKindSeconds(lists.size());
  SmallVector<llvm::StringMap<std::string>, 1> stageKindPrices(lists.size());
  for (auto [stage, actions] : llvm::enumerate(lists)) {
    std::vector<sim::Op> &ops = ranks[stage];
    stream::InFlight inFlight;
    SmallVector<int64_t, 4> waits;
    // The position of the start of each (buffer, slot) transfer.
    DenseMap<std::pair<Value, int64_t>, int64_t> starts;
    for (const ActionRef &action : actions) {
      if (action.function < 0 ||
          action.function >= static_cast<int64_t>(functions.size()))
        return program.emitError("--hardware: an action of stage ")
               << stage << " runs function " << action.function
               << ", which does not exist";
      for (const auto &kind : functions[action.function].kindSeconds)
        stageKindSeconds[stage][kind.getKey()] += kind.getValue();
      for (const auto &kind : functions[action.function].kindPrices)
        notePrice(stageKindPrices[stage][kind.getKey()], kind.getValue());
      for (const Piece &piece : functions[action.function].pieces) {
        sim::Op op;
        op.kind = piece.kind;
        op.category = piece.category;
        op.seconds = piece.seconds;
        op.peer = piece.peer;
        op.stream = piece.stream;
        if (piece.kind == sim::Op::Wait && piece.onStream) {
          waits.clear();
          inFlight.conflicts(spans(piece.reads, action.slot),
                             spans(piece.writes, action.slot), waits);
          for (int64_t position : waits) {
            op.transfer = position;
            ops.push_back(op);
          }
          continue;
        }
        if (piece.kind == sim::Op::CollectiveStart) {
          // The device's compute stream waits for the collective it retires
          // to make room (if any) as this one goes out; waiting just after
          // is the same time (the stream runs them in order).
          int64_t oldest = inFlight.start(ops.size(), piece.stream,
                                          spans(piece.reads, action.slot),
                                          spans(piece.writes, action.slot));
          ops.push_back(op);
          if (oldest >= 0) {
            sim::Op wait;
            wait.kind = sim::Op::Wait;
            wait.category = sim::Communication;
            wait.transfer = oldest;
            ops.push_back(wait);
          }
          continue;
        }
        if (piece.kind == sim::Op::SendStart ||
            piece.kind == sim::Op::RecvStart)
          starts[{piece.buffer, action.slot}] = ops.size();
        if (piece.kind == sim::Op::Wait) {
          auto it = starts.find({piece.buffer, action.slot});
          if (it == starts.end())
            return program.emitError("--hardware: stage ")
                   << stage << " waits on a transfer it never started";
          op.transfer = it->second;
        }
        ops.push_back(op);
      }
    }
  }

  std::string error;
  std::optional<sim::Result> result = sim::simulate(ranks, error);
  if (!result)
    return program.emitError("--hardware: the plan cannot be replayed: ")
           << error;

  StepPrediction prediction;
  prediction.hardware = hw.name;
  prediction.hardwarePath = hw.path;
  prediction.stepSeconds = result->makespan;
  double idle = 0;
  for (auto [stage, rank] : llvm::enumerate(result->ranks)) {
    StepPrediction::Stage figures;
    figures.computeSeconds = rank.busy[sim::Compute];
    figures.recomputeSeconds = rank.busy[sim::Recompute];
    figures.communicationSeconds = rank.busy[sim::Communication];
    figures.overlappedCommunicationSeconds = rank.overlappedCommunication;
    // Rounding may leave a busy rank -1e-16 s idle.
    figures.idleSeconds = std::max(0.0, result->makespan - rank.busyTotal());
    idle += figures.idleSeconds;
    if (stage < report.stages.size())
      figures.peakBytes = report.stages[stage].peakBytes;
    for (const auto &kind : stageKindSeconds[stage])
      figures.kernelSeconds.emplace_back(kind.getKey().str(), kind.getValue());
    for (const auto &kind : stageKindPrices[stage])
      figures.kernelPrices.emplace(kind.getKey().str(), kind.getValue());
    llvm::sort(figures.kernelSeconds, [](const auto &a, const auto &b) {
      return std::tie(b.second, a.first) < std::tie(a.second, b.first);
    });
    prediction.stages.push_back(figures);
  }
  if (result->makespan > 0) {
    prediction.bubbleFraction =
        idle / (result->makespan * static_cast<double>(result->ranks.size()));
    // FLOPs per device: every stage's devices do their stage's work.
    double hardwareFlops = 0, modelFlops = 0;
    for (const StageFigures &stage : report.stages) {
      double all = static_cast<double>(stage.flopsPerMicrobatch) *
                   static_cast<double>(report.microbatches);
      hardwareFlops += all;
      modelFlops += all - static_cast<double>(stage.recomputeFlopsPerMicrobatch) *
                              static_cast<double>(report.microbatches);
    }
    double stages = static_cast<double>(std::max<size_t>(1, report.stages.size()));
    hardwareFlops /= stages;
    modelFlops /= stages;
    double peak = hw.peakFlops(report.dtype);
    if (peak == 0)
      peak = hw.peakFp32;
    prediction.tflopsPerDevice = hardwareFlops / result->makespan / 1e12;
    prediction.hfu = hardwareFlops / result->makespan / peak;
    prediction.mfu = modelFlops / result->makespan / peak;
  }
  if (hw.runtimeDevice == "cuda") {
    prediction.deviceFusions.emplace();
    for (const FusedGroup &group : device.groups)
      prediction.deviceFusions->push_back(group.kernels);
    for (const FusedGroup &batch : device.batches)
      prediction.deviceBatches.push_back(batch.kernels);
    prediction.squaresInUpdates = device.squaresInUpdates;
    prediction.fusedBytesNotMoved = groups.bytesNotMoved;
    prediction.fusionRefusals = device.refusals;
  }
  report.predicted = std::move(prediction);
  return success();
}
