//===- CudaDevice.cpp - the CUDA backend of the interpreter ---------------===//
//
// One CUDA device per rank. prepare() makes everything a step needs and
// allocates it in one cudaMalloc: the arena, cuBLASLt's workspace, the
// kernels' scratch (one region: the compute stream runs one kernel at a
// time), the collectives' staging (a region per communicator: they run on
// its stream, beside the kernels and the other communicators'), and the
// optimizer's tensor
// lists. It plans every GEMM (cached by shape), opens an NCCL communicator
// per group of two or more ranks, and creates the events; execute() then
// only resolves a run's addresses and enqueues. See docs/runtime/cuda.md.
//
// Streams: kernels on the compute stream; collectives on a stream per
// communicator (so that a data-parallel reduction does not hold back a
// tensor-parallel all-reduce issued after it), transfers between stages on
// one per direction (TransferLanes),
// each operation ordered after the kernels before it by an event, and the
// kernels after it ordered by the bytes they touch (HazardTracker.h): the
// data-parallel reduction of a layer's gradients runs while the backward
// goes on. Started transfers (send_start, recv_start)
// wait in a list and go out as one NCCL group at the next other kernel, so
// that two stages that both send first do not deadlock. Runs of adamw_update
// over the parameters with the same scalars become one launch, and so does
// an apply_mask with the add right after it that alone reads its result,
// a linear with the tanh gelu right after it (one cuBLASLt matmul with
// a bias + GeLU epilogue), and a weight gradient with the sum_to of its dY
// right after it (the bias gradient in the matmul's epilogue; FusionPlan.h).
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include "AttentionChoice.h"
#include "AttentionRace.h"
#include "BatchDeferral.h"
#include "CudaKernels.h"
#if TPCRT_HAVE_CUDNN
#include "CudnnAttention.h"
#endif
#include "FusionPlan.h"
#include "Gemm.h"
#include "HazardTracker.h"
#include "HostServices.h"
#include "KernelBatches.h"
#include "Nccl.h"

#include "tpcrt/Comm.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Shape.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

/// `what` a C string: the per-step calls' names (longer than the 15
/// characters a std::string holds without the heap) make no string unless
/// the call failed.
Status cudaStatus(const char *what, cudaError_t err) {
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(what) +
                       ": CUDA: " + cudaGetErrorString(err));
}
Status cudaStatus(const std::string &what, cudaError_t err) {
  return cudaStatus(what.c_str(), err);
}

std::string kernelName(const KernelCall &call) {
  return "kernel " + std::to_string(call.index) + " (" + opCodeName(call.op) +
         ")";
}

/// What runs a kernel.
enum class Family : uint8_t {
  Gemm,
  Pointwise,
  Reduction,
  Attention,
  /// cross_entropy(_grad) over a split vocabulary (padded or not): phases
  /// on the compute stream with all-reduces between them.
  VocabCrossEntropy,
  /// shard_slice, shard_pad: this rank's block, a strided copy.
  Local,
  /// all_reduce, all_gather, reduce_scatter, all_to_all.
  Collective,
  /// send, recv (blocking in the executable's terms: enqueued at once).
  Transfer,
  /// send_start, recv_start: listed, sent as one group at the next kernel.
  TransferStart,
  Wait,
};

bool isCollective(fb::OpCode op) {
  return op == fb::OpCode::AllReduce || op == fb::OpCode::AllGather ||
         op == fb::OpCode::ReduceScatter || op == fb::OpCode::AllToAll;
}

/// Staging bytes a collective needs on its communicator's stream (the
/// pieces along a non-leading dimension made contiguous).
uint64_t collectiveStagingBytes(const KernelCall &call) {
  if (call.operands.empty() || call.groupSize <= 1)
    return 0;
  const TensorRef &x = call.operands[0];
  switch (call.op) {
  case fb::OpCode::AllGather:
    return aroundDim(x.shape, call.intAttrs[0]).outer > 1
               ? alignScratch(call.results[0].bytes)
               : 0;
  case fb::OpCode::ReduceScatter:
    return aroundDim(x.shape, call.intAttrs[0]).outer > 1
               ? alignScratch(x.bytes)
               : 0;
  case fb::OpCode::AllToAll:
    return 2 * alignScratch(x.bytes);
  default:
    return 0;
  }
}

/// The largest pitch cudaMemcpy2DAsync takes (cudaDevAttrMaxPitch: 2^31 - 1
/// bytes on current GPUs; a larger one is cudaErrorInvalidPitchValue).
constexpr uint64_t kMaxPitch = (uint64_t(1) << 31) - 1;

/// `height` rows of `width` bytes, `spitch` bytes apart in src and `dpitch`
/// in dst, on `stream`: one copy when contiguous (or one row), a 2D copy
/// within the pitch limit, else row by row (rows that far apart are few).
cudaError_t copyRows(uint8_t *dst, uint64_t dpitch, const uint8_t *src,
                     uint64_t spitch, uint64_t width, int64_t height,
                     cudaStream_t stream) {
  if (height <= 0 || width == 0)
    return cudaSuccess;
  if (height == 1 || (dpitch == width && spitch == width))
    return cudaMemcpyAsync(dst, src, width * static_cast<uint64_t>(height),
                           cudaMemcpyDeviceToDevice, stream);
  if (dpitch <= kMaxPitch && spitch <= kMaxPitch)
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width,
                             static_cast<size_t>(height),
                             cudaMemcpyDeviceToDevice, stream);
  for (int64_t r = 0; r < height; ++r)
    if (cudaError_t err = cudaMemcpyAsync(dst + r * dpitch, src + r * spitch,
                                          width, cudaMemcpyDeviceToDevice,
                                          stream))
      return err;
  return cudaSuccess;
}

/// x as [outer, pieces, row] -> out as [pieces, outer, row], on `stream`.
cudaError_t splitPieces(const uint8_t *x, int64_t outer, int64_t pieces,
                        uint64_t rowBytes, uint8_t *out, cudaStream_t stream) {
  for (int64_t p = 0; p < pieces; ++p)
    if (cudaError_t err = copyRows(out + p * outer * rowBytes, rowBytes,
                                   x + p * rowBytes, pieces * rowBytes,
                                   rowBytes, outer, stream))
      return err;
  return cudaSuccess;
}

/// x as [pieces, outer, row] -> out as [outer, pieces, row].
cudaError_t joinPieces(const uint8_t *x, int64_t outer, int64_t pieces,
                       uint64_t rowBytes, uint8_t *out, cudaStream_t stream) {
  for (int64_t p = 0; p < pieces; ++p)
    if (cudaError_t err = copyRows(out + p * rowBytes, pieces * rowBytes,
                                   x + p * outer * rowBytes, rowBytes,
                                   rowBytes, outer, stream))
      return err;
  return cudaSuccess;
}

/// One kernel with its addresses resolved (a pooled buffer's slot 0, and
/// per buffer its pool's stride: 0 when not pooled).
struct Resolved {
  bool prepared = false;
  Family family = Family::Pointwise;
  std::vector<uint8_t *> operands, results;
  std::vector<uint64_t> operandStrides, resultStrides;
  /// A batch (an optimizer's or casts': -1, none) and this kernel's place
  /// in it.
  int32_t batch = -1;
  uint32_t member = 0;
  /// An all_reduce right after (before) another of its communicator: the
  /// run goes out as one NCCL group (planReductionRuns).
  bool joinsPrevious = false, joinedByNext = false;
};

/// Consecutive adamw_update kernels with the same scalars and attributes,
/// or a run of casts and zeros (KernelBatches.h): one launch over their
/// tensor list (in device memory).
struct KernelBatch {
  std::vector<uint32_t> members; // kernel indices, in order
  std::vector<int64_t> counts;   // their elements
  /// A cast batch: its members' entries (types and counts; a zeros'
  /// input null, the addresses filled at prepare) for castList; else an
  /// optimizer batch (list).
  std::vector<CastTensor> casts;
  OptimizerTensor *list = nullptr;
  CastTensor *castList = nullptr;
  int64_t mostElements = 0;
  /// The shared scalars (lr, step, grad_scale: null when absent) and
  /// attributes (beta1, beta2, eps, weight_decay).
  const float *lr = nullptr;
  const int64_t *step = nullptr;
  const float *gradScale = nullptr;
  std::vector<double> attrs;
  /// An optimizer batch whose launch sums the squares of the sum_squares
  /// right after it (KernelBatches.h squaresAfterBatch): per member its
  /// operand there, or -1; empty: none.
  std::vector<int32_t> squaresOperand;
};

/// An all_reduce of a run, ordered on its stream and waiting for the
/// run's NCCL group.
struct PendingReduction {
  uint8_t *data = nullptr;
  size_t count = 0;
  Storage type = Storage::F32;
  bool max = false;
  NcclGroup *group = nullptr;
  cudaStream_t stream = nullptr;
  ByteRange read, write;
};

/// A started transfer waiting for the next group launch.
struct PendingTransfer {
  bool send = false;
  uint8_t *data = nullptr;
  uint64_t bytes = 0;
  int peer = 0;
  NcclGroup *group = nullptr;
  cudaStream_t stream = nullptr;
};

/// The communicators and streams of a group's transfers between pipeline
/// stages, one per direction: data moving to a higher position in the
/// group ("up": the forward's activations) and to a lower one ("down": the
/// backward's gradients). NCCL runs a communicator's operations in issue
/// order, so one communicator for both would make a stage's receive of a
/// gradient, posted early, hold back its later send of an activation that
/// the peer's own early receive waits for: a deadlock that MPI's started
/// transfers do not have. Per direction the order is the schedule's on
/// both sides.
struct TransferLanes {
  std::unique_ptr<NcclGroup> up, down;
};

class CudaDevice final : public Device {
public:
  CudaDevice(int device, const CudaDeviceOptions &options)
      : device_(device), options_(options), tracker_(kEventSlots) {}
  ~CudaDevice() override;

  Status start();

  const char *name() const override { return "cuda"; }

  Status allocateArena(uint64_t bytes) override {
    if (memory_)
      return Status::error("the arena is allocated already");
    // The one allocation is made at prepare, when the workspace is known
    // (prepare follows at once; nothing is copied in between).
    arenaBytes_ = bytes;
    return Status::ok();
  }
  uint64_t arenaBytes() const override { return arenaBytes_; }
  uint64_t allocatedBytes() const override {
    return alignScratch(arenaBytes_) + workspaceBytes_;
  }
  uint64_t deviceMemoryInUse() override {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaSetDevice(device_) != cudaSuccess ||
        cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
      (void)cudaGetLastError(); // not left for a later check to report
      return 0;
    }
    return totalBytes - freeBytes;
  }

  Status copyToArena(uint64_t offset, const void *source,
                     uint64_t bytes) override;
  Status copyFromArena(uint64_t offset, void *destination,
                       uint64_t bytes) override;
  Status prepare(const Program &program,
                 const std::vector<Communicator *> &groups) override;
  uint64_t workspaceBytes() const override { return workspaceBytes_; }
  Status execute(const KernelCall &call, const StepContext &context) override;
  Status synchronize() override;
  bool markRuns(size_t runs) override;
  Status markRun(size_t run) override;
  Status runDurations(std::vector<int64_t> &nanoseconds) override;

private:
  Status checkRange(uint64_t offset, uint64_t bytes) const;
  Status openGroups(const Program &program,
                    const std::vector<Communicator *> &groups);
  Status planKernelBatches(const Program &program);
  void planReductionRuns(const Program &program);
  /// Unless TPCRT_CUDA_ATTENTION names the own kernels: plans the
  /// attention calls cuDNN can take, raising the scratch to what they need.
  /// With =cudnn, says on stderr how many it took, or why none.
  void planCudnnAttention(const Program &program);
  /// TPCRT_CUDA_ATTENTION unset or =auto: times each shape that cuDNN took
  /// both ways on its first call's buffers (slot 0, before the first step:
  /// they hold nothing yet) and leaves to the own kernels those where cuDNN
  /// did not measure faster (AttentionRace.h); says so on stderr.
  Status raceAttention(const Program &program);
  Status runAttention(const KernelCall &call, const KernelArgs &args);
  /// Resolves `call`'s addresses for the run into runOperands_ /
  /// runResults_ and its byte ranges into reads_ / writes_.
  void resolveRun(const KernelCall &call, const Resolved &r,
                  const StepContext &context);
  /// Makes the compute stream wait for the operations in flight that the
  /// run's ranges meet.
  Status waitForHazards(const KernelCall &call);
  /// Makes `stream` wait for the events of the slots in waits_.
  Status waitForSlots(cudaStream_t stream);
  /// Enqueues a communication-stream operation's start: after every kernel
  /// so far.
  Status orderAfterCompute(cudaStream_t stream);
  /// Makes `stream` wait for the operations in flight (on any stream) that
  /// the ranges meet.
  Status orderAfterOthers(const ByteRange *reads, size_t numReads,
                          const ByteRange *writes, size_t numWrites,
                          cudaStream_t stream);
  /// Records the operation just enqueued on `stream` (a communication
  /// stream).
  Status track(const ByteRange *reads, size_t numReads,
               const ByteRange *writes, size_t numWrites,
               cudaStream_t stream);
  /// The communicator and stream of a transfer of `call`'s group to or
  /// from `peer`.
  Status laneOf(const KernelCall &call, bool send, int peer,
                NcclGroup *&group, cudaStream_t &stream) const;
  Status runCompute(const KernelCall &call, const Resolved &r,
                    const StepContext &context);
  /// A compute-stream run's arguments: its addresses, the scratch.
  KernelArgs computeArgs(void *const *operands, void *const *results,
                         const StepContext &context) const;
  /// Launches the check of an embedding's ids or a cross-entropy's labels.
  Status checkData(const KernelCall &call);
  /// The first bad id or label of the step's checks, as the CPU's message.
  Status dataError();
  Status runCollective(const KernelCall &call);
  Status runLocal(const KernelCall &call);
  Status runVocabCrossEntropy(const KernelCall &call);
  Status allReduceInStreamOrder(NcclGroup &group, cudaStream_t stream,
                                float *data, size_t count, bool max);
  /// send and recv (started and flushed at once); send_start, recv_start.
  Status runTransfer(const KernelCall &call);
  Status startTransfer(const KernelCall &call);
  Status waitTransfer();
  Status flushTransfers();
  /// The run's all_reduces deferred so far, as one NCCL group.
  Status flushReductions();
  /// The batch's members deferred so far, launched.
  Status flushBatches();
  /// The members of a fused group deferred for its tail, each run alone
  /// (the tail did not come next: a subset run, a synchronize in between).
  Status flushHead();
  /// The tail of a fused group (an add, a gelu, ...), with the deferred
  /// head (an apply_mask, a linear, ...) and link: one kernel.
  Status runFused(const KernelCall &tail, const StepContext &context);
  /// `call` (a head or link) deferred with its run's addresses.
  void defer(const KernelCall &call, const StepContext &context);
  Status launchBatches(const BatchLaunch *launches, size_t count);
  Status writeCastList(KernelBatch &b, uint8_t *&at);
  NcclGroup *groupOf(const KernelCall &call) const {
    return call.group >= 0 && static_cast<size_t>(call.group) < nccl_.size()
               ? nccl_[call.group].get()
               : nullptr;
  }
  /// The stream and staging of `call`'s communicator (groupOf non-null;
  /// prepare gave every collective's group a staging offset).
  cudaStream_t streamOf(const KernelCall &call) const {
    return groupStreams_[call.group];
  }
  uint8_t *stagingOf(const KernelCall &call) const {
    return staging_ + stagingOffsets_[call.group];
  }

  int device_;
  CudaDeviceOptions options_;
  cudaStream_t compute_ = nullptr;
  /// Collectives, one stream per communicator (by group; null for a group
  /// without one).
  std::vector<cudaStream_t> groupStreams_;
  /// Transfers between stages, by direction (TransferLanes).
  cudaStream_t up_ = nullptr, down_ = nullptr;
  /// Recorded on the compute stream before a communication-stream
  /// operation; and at synchronize.
  cudaEvent_t computeMark_ = nullptr, done_ = nullptr;
  /// Recorded on a communicator's stream for the compute stream to wait.
  cudaEvent_t commMark_ = nullptr;
  std::vector<cudaEvent_t> events_;
  /// Timing events on the compute stream: one before each run of a timed
  /// step and one at its end (markRuns; created once, reused).
  std::vector<cudaEvent_t> runMarks_;
  size_t markedRuns_ = 0;
  /// A timed step is under way: synchronize records its end mark.
  bool marking_ = false;
  HazardTracker tracker_;
  std::vector<uint32_t> waits_;

  uint64_t arenaBytes_ = 0, workspaceBytes_ = 0;
  uint8_t *memory_ = nullptr, *arena_ = nullptr;
  uint8_t *scratch_ = nullptr, *staging_ = nullptr;
  uint64_t scratchBytes_ = 0, stagingBytes_ = 0;
  /// Per group: where its staging begins in the staging region.
  std::vector<uint64_t> stagingOffsets_;

  GemmEngine gemm_;
#if TPCRT_HAVE_CUDNN
  CudnnAttention cudnn_;
#endif
  std::vector<Resolved> resolved_;
  std::vector<std::unique_ptr<NcclGroup>> nccl_;
  std::vector<TransferLanes> lanes_;
  std::vector<NcclGroup *> liveGroups_;
  std::vector<KernelBatch> batches_;
  BatchDeferral deferral_;
  /// Per kernel index: a sum_squares whose partial sums the optimizer batch
  /// before it writes (it only adds them).
  std::vector<bool> squaresInUpdates_;
  /// Per kernel index, its part in a fused group (planFusions).
  std::vector<FusionStep> fusion_;
  /// The head (and link) of a fused group, deferred until its tail: the
  /// call, and its run's addresses and context (copied: the next run
  /// overwrites runOperands_).
  struct Deferred {
    const KernelCall *call = nullptr;
    void *operands[3] = {};
    void *results[2] = {};
    StepContext context;
  };
  Deferred deferred_[3];
  /// How many of deferred_ hold a call (0: none is deferred).
  size_t deferredCount_ = 0;

  std::vector<PendingTransfer> pending_;
  std::vector<PendingReduction> reductions_;
  /// The kernel index of the last of reductions_.
  uint32_t lastReduction_ = 0;
  /// The ids and labels checked this step (DataChecks.cu), in order, and
  /// the key their first bad value lowers (device memory; all ones: none).
  struct DataCheck {
    const KernelCall *call;
    int64_t bound;
  };
  static constexpr size_t kMostChecks = 4096;
  std::vector<DataCheck> checks_;
  /// The data checks' key, then (the next 8 bytes of its 256) the first
  /// failure's value.
  unsigned long long *firstBad_ = nullptr;
  int64_t *badValue() const {
    return reinterpret_cast<int64_t *>(firstBad_ + 1);
  }
  /// A run's addresses and ranges (sized at prepare: nothing allocated per
  /// step).
  std::vector<void *> runOperands_, runResults_;
  std::vector<ByteRange> reads_, writes_;
};

CudaDevice::~CudaDevice() {
  cudaSetDevice(device_);
  // Everything in flight, its NCCL errors polled (an error aborts the
  // communicators, whose kernels then end) and a stall the watchdog's.
  if (memory_)
    (void)synchronize();
#if TPCRT_HAVE_CUDNN
  // cuDNN's handle goes before the compute stream it runs on.
  cudnn_.shutdown();
#endif
  lanes_.clear();
  nccl_.clear();
  for (cudaEvent_t e : events_)
    cudaEventDestroy(e);
  for (cudaEvent_t e : runMarks_)
    cudaEventDestroy(e);
  if (computeMark_)
    cudaEventDestroy(computeMark_);
  if (done_)
    cudaEventDestroy(done_);
  if (commMark_)
    cudaEventDestroy(commMark_);
  if (compute_)
    cudaStreamDestroy(compute_);
  for (cudaStream_t stream : {up_, down_})
    if (stream)
      cudaStreamDestroy(stream);
  for (cudaStream_t stream : groupStreams_)
    if (stream)
      cudaStreamDestroy(stream);
  if (memory_)
    cudaFree(memory_);
}

Status CudaDevice::start() {
  if (Status s = cudaStatus("cudaSetDevice(" + std::to_string(device_) + ")",
                            cudaSetDevice(device_));
      !s)
    return s;
  cudaDeviceProp prop;
  if (Status s = cudaStatus("cudaGetDeviceProperties",
                            cudaGetDeviceProperties(&prop, device_));
      !s)
    return s;
  if (prop.major < 8)
    return Status::error(
        std::string("CUDA device ") + std::to_string(device_) + " (" +
        prop.name + ") has compute capability " + std::to_string(prop.major) +
        "." + std::to_string(prop.minor) +
        ": the backend is built for sm_80 and sm_90");
  // Non-blocking: the legacy default stream (cudaMemcpy) does not order
  // them; copies to and from the arena synchronize first.
  if (Status s = cudaStatus(
          "cudaStreamCreate",
          cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
      !s)
    return s;
  for (cudaStream_t *stream : {&up_, &down_})
    if (Status s = cudaStatus(
            "cudaStreamCreate",
            cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
        !s)
      return s;
  for (cudaEvent_t *e : {&computeMark_, &done_, &commMark_})
    if (Status s = cudaStatus(
            "cudaEventCreate",
            cudaEventCreateWithFlags(e, cudaEventDisableTiming));
        !s)
      return s;
  events_.assign(kEventSlots, nullptr);
  for (cudaEvent_t &e : events_)
    if (Status s = cudaStatus(
            "cudaEventCreate",
            cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        !s)
      return s;
  waits_.reserve(kEventSlots);
  return gemm_.init(options_.allowTf32);
}

Status CudaDevice::checkRange(uint64_t offset, uint64_t bytes) const {
  if (!memory_)
    return Status::error("the arena is not allocated yet (prepare first)");
  if (bytes > arenaBytes_ || offset > arenaBytes_ - bytes)
    return Status::error("bytes [" + std::to_string(offset) + ", +" +
                         std::to_string(bytes) +
                         ") lie outside the arena of " +
                         std::to_string(arenaBytes_) + " bytes");
  return Status::ok();
}

Status CudaDevice::copyToArena(uint64_t offset, const void *source,
                               uint64_t bytes) {
  if (Status s = checkRange(offset, bytes); !s)
    return s;
  // The step before may still read these bytes.
  if (Status s = synchronize(); !s)
    return s;
  // On the compute stream: cudaMemcpy from pageable memory may return before
  // its DMA is done, and the legacy default stream does not order the
  // non-blocking streams' kernels after it.
  if (Status s = cudaStatus("copy to the arena",
                            cudaMemcpyAsync(arena_ + offset, source, bytes,
                                            cudaMemcpyHostToDevice, compute_));
      !s)
    return s;
  return cudaStatus("copy to the arena", cudaStreamSynchronize(compute_));
}

Status CudaDevice::copyFromArena(uint64_t offset, void *destination,
                                 uint64_t bytes) {
  if (Status s = checkRange(offset, bytes); !s)
    return s;
  if (Status s = synchronize(); !s)
    return s;
  return cudaStatus("copy from the arena",
                    cudaMemcpy(destination, arena_ + offset, bytes,
                               cudaMemcpyDeviceToHost));
}

Family familyOf(const KernelCall &call) {
  fb::OpCode op = call.op;
  if (isGemmKernel(op))
    return Family::Gemm;
  // A padded vocabulary on one device runs whole rows (ReductionKernels.cu).
  if (call.crossEntropyOverBlock())
    return Family::VocabCrossEntropy;
  if (op == fb::OpCode::ShardSlice || op == fb::OpCode::ShardPad)
    return Family::Local;
  if (isCollective(op))
    return Family::Collective;
  if (op == fb::OpCode::Send || op == fb::OpCode::Recv)
    return Family::Transfer;
  if (op == fb::OpCode::SendStart || op == fb::OpCode::RecvStart)
    return Family::TransferStart;
  if (op == fb::OpCode::Wait)
    return Family::Wait;
  if (isAttentionKernel(op))
    return Family::Attention;
  if (isReductionKernel(op))
    return Family::Reduction;
  return Family::Pointwise;
}

Status CudaDevice::prepare(const Program &program,
                           const std::vector<Communicator *> &groups) {
  if (memory_)
    return Status::error("the device is prepared already");
  // The calls that follow act on the current device.
  if (Status s = cudaStatus("cudaSetDevice", cudaSetDevice(device_)); !s)
    return s;
  if (program.arenaBytes > arenaBytes_)
    return Status::error(
        "the program needs an arena of " + std::to_string(program.arenaBytes) +
        " bytes, the device has " + std::to_string(arenaBytes_));
  size_t slots = 0;
  for (const KernelCall &call : program.calls)
    slots = std::max<size_t>(slots, call.index + size_t(1));
  resolved_.assign(slots, Resolved());

  // Scratch: the largest any one kernel needs (they run one at a time on
  // the compute stream); staging: per communicator, the largest of its
  // collectives' (the communicators' streams run beside each other).
  std::vector<uint64_t> groupStaging;
  for (const KernelCall &call : program.calls) {
    Family family = familyOf(call);
    if (family == Family::Pointwise && !isPointwiseKernel(call.op))
      return Status::error(kernelName(call) +
                           ": the CUDA device has no kernel for it");
    resolved_[call.index].family = family;
    uint64_t bytes = 0;
    switch (family) {
    case Family::Gemm:
      if (Status s = gemm_.plan(call, bytes); !s)
        return s.withContext(kernelName(call));
      break;
    case Family::Pointwise:
      bytes = pointwiseScratchBytes(call);
      break;
    case Family::Reduction:
      bytes = reductionScratchBytes(call);
      break;
    case Family::Attention:
      bytes = attentionScratchBytes(call);
      break;
    case Family::VocabCrossEntropy:
      // Per position the max, the sum of exponentials and the target's
      // logit (the last two adjacent: one all-reduce).
      bytes = 3 * static_cast<uint64_t>(call.rows) * sizeof(float);
      break;
    default:
      if (call.group >= 0) {
        if (groupStaging.size() <= static_cast<size_t>(call.group))
          groupStaging.resize(call.group + 1, 0);
        groupStaging[call.group] =
            std::max(groupStaging[call.group], collectiveStagingBytes(call));
      }
      break;
    }
    scratchBytes_ = std::max(scratchBytes_, alignScratch(bytes));
  }
  stagingBytes_ = 0;
  stagingOffsets_.clear();
  for (uint64_t bytes : groupStaging) {
    stagingOffsets_.push_back(stagingBytes_);
    stagingBytes_ += alignScratch(bytes);
  }
  planCudnnAttention(program);
  if (Status s = planKernelBatches(program); !s)
    return s;
  planReductionRuns(program);
  // TPCRT_CUDA_FUSIONS=none runs every kernel as it is, =kernels only the
  // device's own fused kernels (not cuBLASLt's epilogues), whose results
  // are the unfused ones bit for bit (to tell a fused group's difference
  // from the rest on a GPU; runtime.CudaEmulatedFusions).
  const char *fusions = std::getenv("TPCRT_CUDA_FUSIONS");
  std::string fusionChoice = fusions ? fusions : "all";
  if (fusionChoice != "all" && fusionChoice != "none" &&
      fusionChoice != "kernels")
    return Status::error("TPCRT_CUDA_FUSIONS=" + fusionChoice +
                         ": expected all, kernels or none");
  fusion_ = planFusions(program);
  if (fusionChoice == "none") {
    std::fill(fusion_.begin(), fusion_.end(), FusionStep());
    std::fill(squaresInUpdates_.begin(), squaresInUpdates_.end(), false);
    for (KernelBatch &b : batches_)
      b.squaresOperand.clear();
  }
  if (fusionChoice == "kernels")
    for (const KernelCall &call : program.calls)
      if (isGemmKernel(call.op) &&
          fusion_[call.index].role == FusionRole::Head) {
        fusion_[fusion_[call.index].partner] = FusionStep();
        fusion_[call.index] = FusionStep();
      }
  deferredCount_ = 0;
  // A linear + gelu pair runs fused only with a plan for the GeLU
  // epilogue, a weight gradient + sum_to pair only with one for the bias
  // gradient epilogue, a product + add pair only with one for an added C;
  // without one (cuBLASLt's choice) the two run as they
  // are, and one line on stderr says so.
  size_t epiloguePairs = 0, unplanned = 0;
  std::string firstRefusal;
  for (size_t p = 0; p + 1 < program.calls.size(); ++p) {
    const KernelCall &head = program.calls[p];
    FusionStep &step = fusion_[head.index];
    if (!isGemmKernel(head.op) || step.role != FusionRole::Head)
      continue;
    const KernelCall &tail = program.calls[p + 1];
    uint64_t bytes = 0;
    Status planned =
        tail.op == fb::OpCode::Add ? gemm_.planAdd(head, tail)
        : head.op == fb::OpCode::Linear
            ? gemm_.planGelu(head, tail, step.writesHead)
        : head.op == fb::OpCode::LinearInputGrad
            ? gemm_.planGeluGrad(head, tail)
            : gemm_.planBiasGrad(head, tail, step.stagesSum, bytes);
    ++epiloguePairs;
    if (planned) {
      scratchBytes_ = std::max(scratchBytes_, alignScratch(bytes));
      continue;
    }
    step = fusion_[tail.index] = FusionStep();
    if (unplanned++ == 0)
      firstRefusal = planned.message();
  }
  if (unplanned)
    std::fprintf(stderr,
                 "tpcrt: %zu of %zu GEMM + epilogue pairs run unfused (no "
                 "fused plan), e.g. %s\n",
                 unplanned, epiloguePairs, firstRefusal.c_str());
  // Once per process (tpcrt-device-check prepares a program per case).
  static std::atomic<bool> notedUnalignedRows{false};
  if (std::string note = unalignedRowsNote(program);
      !note.empty() && !notedUnalignedRows.exchange(true))
    std::fprintf(stderr, "%s\n", note.c_str());

  // The one allocation.
  uint64_t gemmBytes = alignScratch(gemm_.workspaceBytes());
  uint64_t listBytes = 0;
  for (const KernelBatch &b : batches_)
    listBytes += alignScratch(b.members.size() * (b.casts.empty()
                                                      ? sizeof(OptimizerTensor)
                                                      : sizeof(CastTensor)));
  uint64_t arenaPart = alignScratch(arenaBytes_);
  workspaceBytes_ = gemmBytes + scratchBytes_ + stagingBytes_ + listBytes +
                    kScratchAlignment; // the data checks' key
  uint64_t total = arenaPart + workspaceBytes_;
  size_t freeBytes = 0, totalBytes = 0;
  if (Status s = cudaStatus("cudaMemGetInfo",
                            cudaMemGetInfo(&freeBytes, &totalBytes));
      !s)
    return s;
  if (total > freeBytes)
    return Status::error(
        "the program needs " + std::to_string(total) + " bytes of device " +
        "memory (arena " + std::to_string(arenaBytes_) + ", workspace " +
        std::to_string(workspaceBytes_) + "); CUDA device " +
        std::to_string(device_) + " has " + std::to_string(freeBytes) +
        " free of " + std::to_string(totalBytes));
  void *memory = nullptr;
  if (Status s = cudaStatus("cudaMalloc of " + std::to_string(total) +
                                " bytes",
                            cudaMalloc(&memory, total ? total : 1));
      !s)
    return s;
  memory_ = static_cast<uint8_t *>(memory);
  arena_ = memory_;
  if (Status s = cudaStatus("zeroing the arena",
                            cudaMemset(arena_, 0, arenaPart));
      !s)
    return s;
  uint8_t *at = memory_ + arenaPart;
  gemm_.setWorkspace(gemmBytes ? at : nullptr);
  at += gemmBytes;
  scratch_ = scratchBytes_ ? at : nullptr;
  at += scratchBytes_;
  staging_ = stagingBytes_ ? at : nullptr;
  at += stagingBytes_;

  // Addresses.
  size_t mostOperands = 0, mostResults = 0;
  for (const KernelCall &call : program.calls) {
    Resolved &r = resolved_[call.index];
    r.prepared = true;
    for (const TensorRef &t : call.operands) {
      r.operands.push_back(arena_ + t.offset);
      r.operandStrides.push_back(t.pool >= 0 ? t.poolStride : 0);
    }
    for (const TensorRef &t : call.results) {
      r.results.push_back(arena_ + t.offset);
      r.resultStrides.push_back(t.pool >= 0 ? t.poolStride : 0);
    }
    mostOperands = std::max(mostOperands, call.operands.size());
    mostResults = std::max(mostResults, call.results.size());
  }
  runOperands_.assign(mostOperands, nullptr);
  runResults_.assign(mostResults, nullptr);
  reads_.assign(mostOperands, ByteRange());
  writes_.assign(mostResults, ByteRange());

  // The batches' tensor lists, written once.
  for (KernelBatch &b : batches_) {
    if (!b.casts.empty()) {
      if (Status s = writeCastList(b, at); !s)
        return s;
      continue;
    }
    std::vector<OptimizerTensor> list;
    for (uint32_t index : b.members) {
      const Resolved &r = resolved_[index];
      OptimizerTensor t;
      t.param = reinterpret_cast<float *>(r.operands[0]);
      t.grad = reinterpret_cast<const float *>(r.operands[1]);
      t.state0 = reinterpret_cast<float *>(r.operands[2]);
      t.state1 = reinterpret_cast<float *>(r.operands[3]);
      t.count = b.counts[list.size()];
      t.squaresOperand =
          b.squaresOperand.empty() ? -1 : b.squaresOperand[list.size()];
      if (index == b.members.front()) {
        b.lr = reinterpret_cast<const float *>(r.operands[4]);
        b.step = reinterpret_cast<const int64_t *>(r.operands[5]);
        if (r.operands.size() > 6)
          b.gradScale = reinterpret_cast<const float *>(r.operands[6]);
      }
      b.mostElements = std::max(b.mostElements, t.count);
      list.push_back(t);
    }
    b.list = reinterpret_cast<OptimizerTensor *>(at);
    at += alignScratch(list.size() * sizeof(OptimizerTensor));
    if (Status s = cudaStatus(
            "writing the optimizer's tensor list",
            cudaMemcpy(b.list, list.data(),
                       list.size() * sizeof(OptimizerTensor),
                       cudaMemcpyHostToDevice));
        !s)
      return s;
  }
  firstBad_ = reinterpret_cast<unsigned long long *>(at);
  at += kScratchAlignment;
  if (Status s = cudaStatus("cudaMemset", cudaMemset(firstBad_, 0xFF,
                                                     sizeof(*firstBad_)));
      !s)
    return s;
  checks_.clear();
  checks_.reserve(kMostChecks);
  // The zeros and the lists went on the legacy default stream, which the
  // non-blocking streams do not wait for.
  if (Status s = cudaStatus("cudaDeviceSynchronize", cudaDeviceSynchronize());
      !s)
    return s;
  if (Status s = raceAttention(program); !s)
    return s;
  return openGroups(program, groups);
}

void CudaDevice::planCudnnAttention(const Program &program) {
  // Read here, at every prepare, so that an unknown value is reported (once)
  // even by a program without attention.
  const AttentionChoice choice = attentionChoice();
  const bool requested = choice == AttentionChoice::Cudnn;
#if TPCRT_HAVE_CUDNN
  if (!requested && choice != AttentionChoice::Auto)
    return;
  size_t attention = 0, taken = 0;
  std::string refusal, failure;
  Status ready = Status::ok();
  for (const KernelCall &call : program.calls) {
    if (!call.attentionForward() && !call.attentionBackward())
      continue;
    ++attention;
    if (std::string why = cudnnAttentionRefusal(call); !why.empty()) {
      if (refusal.empty())
        refusal = kernelName(call) + ": " + why;
      continue;
    }
    if (ready)
      ready = cudnn_.init(compute_); // once: later calls find the handle
    if (!ready)
      break;
    uint64_t bytes = 0;
    if (Status s = cudnn_.plan(call, bytes); !s) {
      if (failure.empty())
        failure = kernelName(call) + ": " + s.message();
      continue;
    }
    ++taken;
    scratchBytes_ = std::max(scratchBytes_, alignScratch(bytes));
  }
  // Auto: the race says what runs where; a cuDNN that is not there (no
  // library: the own kernels' machine) is said once, where it mattered.
  std::string line;
  if (requested)
    line = "tpcrt: TPCRT_CUDA_ATTENTION=cudnn: cuDNN runs " +
           std::to_string(taken) + " of " + std::to_string(attention) +
           " attention kernels (" + std::to_string(cudnn_.planCount()) +
           " plans)";
  else if (!ready)
    line = "tpcrt: attention: the own kernels";
  if (!ready)
    line += "; cuDNN is not usable: " + ready.message();
  if (requested && !refusal.empty())
    line += "; not taken, e.g. " + refusal;
  if (!failure.empty())
    line += (line.empty() ? "tpcrt: attention: no cuDNN plan for "
                          : "; no plan for ") +
            failure;
  if (!line.empty())
    std::fprintf(stderr, "%s\n", line.c_str());
#else
  (void)program;
  if (requested)
    std::fprintf(stderr, "tpcrt: TPCRT_CUDA_ATTENTION=cudnn: this build has "
                         "no cuDNN (no cudnn_graph.h at configure time); the "
                         "own attention kernels run\n");
#endif
}

Status CudaDevice::raceAttention(const Program &program) {
#if TPCRT_HAVE_CUDNN
  if (attentionChoice() != AttentionChoice::Auto)
    return Status::ok();
  AttentionRace race;
  std::vector<const KernelCall *> calls(resolved_.size(), nullptr);
  for (const KernelCall &call : program.calls)
    if (const void *plan = cudnn_.planOf(call)) {
      calls[call.index] = &call;
      race.add(plan, call.index,
               std::string(opCodeName(call.op)) + " [b " +
                   std::to_string(call.batch) + ", heads " +
                   std::to_string(call.heads) + "/" +
                   std::to_string(call.kvHeads) + ", s " +
                   std::to_string(call.seqQ) + ", d " +
                   std::to_string(call.headDim) + "]");
    }
  if (race.shapes().empty())
    return Status::ok();
  cudaEvent_t start = nullptr, stop = nullptr;
  if (Status s = cudaStatus("cudaEventCreate", cudaEventCreate(&start)); !s)
    return s;
  if (Status s = cudaStatus("cudaEventCreate", cudaEventCreate(&stop)); !s) {
    cudaEventDestroy(start);
    return s;
  }
  const StepContext context;
  std::vector<void *> operands, results;
  auto time = [&](uint32_t index, bool useCudnn, double &seconds) -> Status {
    const KernelCall &call = *calls[index];
    const Resolved &r = resolved_[index];
    operands.assign(r.operands.begin(), r.operands.end());
    results.assign(r.results.begin(), r.results.end());
    KernelArgs args = computeArgs(operands.data(), results.data(), context);
    if (Status s =
            cudaStatus("cudaEventRecord", cudaEventRecord(start, compute_));
        !s)
      return s;
    Status ran = Status::ok();
    if (useCudnn) {
      bool taken = false;
      ran = cudnn_.run(call, args, taken);
      if (ran && !taken)
        ran = Status::error("cuDNN did not take it (an address not 16-byte "
                            "aligned)");
    } else {
      ran = runAttentionKernel(call, args);
    }
    if (!ran) {
      cudaGetLastError(); // a failed launch's error, not the next call's
      return ran;
    }
    float ms = 0;
    if (Status s = cudaStatus("timing an attention kernel",
                              cudaEventRecord(stop, compute_));
        !s)
      return s;
    if (Status s = cudaStatus("timing an attention kernel",
                              cudaEventSynchronize(stop));
        !s)
      return s;
    if (Status s = cudaStatus("timing an attention kernel",
                              cudaEventElapsedTime(&ms, start, stop));
        !s)
      return s;
    seconds = ms * 1e-3;
    return Status::ok();
  };
  Status raced = race.run(time);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!raced)
    return raced;
  for (const AttentionRace::Shape &shape : race.shapes())
    if (!shape.cudnnWins)
      for (uint32_t index : shape.calls)
        cudnn_.release(*calls[index]);
  std::fprintf(stderr, "tpcrt: attention: %s\n", race.summary().c_str());
#else
  (void)program;
#endif
  return Status::ok();
}

Status CudaDevice::runAttention(const KernelCall &call,
                                const KernelArgs &args) {
#if TPCRT_HAVE_CUDNN
  bool taken = false;
  if (Status s = cudnn_.run(call, args, taken); !s || taken)
    return s;
#endif
  return runAttentionKernel(call, args);
}

/// The optimizer batches planOptimizerBatches finds (with the sum_squares
/// each may sum, squaresAfterBatch) and the runs of casts and zeros
/// planCastBatches finds.
Status CudaDevice::planKernelBatches(const Program &program) {
  batches_.clear();
  squaresInUpdates_.assign(resolved_.size(), false);
  std::vector<const KernelCall *> byIndex(resolved_.size(), nullptr);
  for (const KernelCall &call : program.calls)
    byIndex[call.index] = &call;
  for (std::vector<uint32_t> &members : planOptimizerBatches(program)) {
    int32_t id = static_cast<int32_t>(batches_.size());
    KernelBatch b;
    b.attrs = byIndex[members.front()]->floatAttrs;
    for (uint32_t m = 0; m < members.size(); ++m) {
      resolved_[members[m]].batch = id;
      resolved_[members[m]].member = m;
      b.counts.push_back(byIndex[members[m]]->count);
    }
    SquaresInUpdates squares;
    if (squaresAfterBatch(program, members, squares)) {
      b.squaresOperand = std::move(squares.operandOfMember);
      squaresInUpdates_[squares.squares] = true;
    }
    b.members = std::move(members);
    batches_.push_back(std::move(b));
  }
  for (std::vector<uint32_t> &members : planCastBatches(program)) {
    int32_t id = static_cast<int32_t>(batches_.size());
    KernelBatch b;
    for (uint32_t m = 0; m < members.size(); ++m) {
      resolved_[members[m]].batch = id;
      resolved_[members[m]].member = m;
      const KernelCall &call = *byIndex[members[m]];
      CastTensor t{};
      t.count = call.results[0].elements;
      t.inType = call.operands.empty() ? Storage::F32
                                       : storageOf(call.operands[0].dtype);
      t.outType = storageOf(call.results[0].dtype);
      b.mostElements = std::max(b.mostElements, t.count);
      b.casts.push_back(t);
    }
    b.members = std::move(members);
    batches_.push_back(std::move(b));
  }
  std::vector<uint32_t> sizes;
  for (const KernelBatch &b : batches_)
    sizes.push_back(static_cast<uint32_t>(b.members.size()));
  deferral_ = BatchDeferral(std::move(sizes));
  return Status::ok();
}

/// Consecutive all_reduce kernels of one group (communicator) and one
/// function: the device issues such a run as one NCCL group, which NCCL
/// aggregates into one launch (rt-bucket-reductions makes the runs; the
/// compiler's replay prices a run as one collective, each member in flight
/// until the group is done: continuesReductionRun).
void CudaDevice::planReductionRuns(const Program &program) {
  const KernelCall *previous = nullptr;
  for (const KernelCall &call : program.calls) {
    if (previous && previous->op == fb::OpCode::AllReduce &&
        call.op == fb::OpCode::AllReduce && previous->group >= 0 &&
        previous->group == call.group && previous->index + 1 == call.index &&
        fusion::inOneFunction(program, *previous, call)) {
      resolved_[previous->index].joinedByNext = true;
      resolved_[call.index].joinsPrevious = true;
    }
    previous = &call;
  }
  reductions_.clear();
  reductions_.reserve(program.calls.size());
}

Status CudaDevice::openGroups(const Program &program,
                              const std::vector<Communicator *> &groups) {
  // Every rank makes the same communicators (Program::groups lists every
  // stage's groups; a rank's own kernels would not tell it all of them): an
  // NCCL communicator per group of two or more ranks, and for a group over
  // the pipeline axis alone two more, one per direction of its transfers.
  for (const KernelCall &call : program.calls) {
    if (call.group < 0)
      continue;
    if (static_cast<size_t>(call.group) >= groups.size() ||
        !groups[call.group])
      return Status::error(kernelName(call) +
                           " has no communicator for its group");
    if (groups[call.group]->size() != call.groupSize)
      return Status::error(kernelName(call) + ": its group has " +
                           std::to_string(call.groupSize) +
                           " ranks, the communicator " +
                           std::to_string(groups[call.group]->size()));
  }
  // Transfers run over the pipeline axis alone (Kernels.def).
  auto overStages = [&](size_t g) {
    return g < program.groups.size() && program.groups[g].size() == 1 &&
           program.groups[g][0] < program.mesh.names.size() &&
           program.mesh.names[program.groups[g][0]] == kStageAxisName;
  };
  nccl_.clear();
  nccl_.resize(groups.size());
  for (cudaStream_t stream : groupStreams_)
    if (stream)
      cudaStreamDestroy(stream);
  groupStreams_.assign(groups.size(), nullptr);
  lanes_.clear();
  liveGroups_.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g] || groups[g]->size() < 2)
      continue;
    // create loads NCCL and agrees with the group's ranks first, so that a
    // rank without it fails them all instead of leaving them waiting.
    if (Status s = NcclGroup::create(*groups[g], device_, groups[g]->label(),
                                     nccl_[g]);
        !s)
      return s;
    liveGroups_.push_back(nccl_[g].get());
    if (Status s = cudaStatus("cudaStreamCreate",
                              cudaStreamCreateWithFlags(&groupStreams_[g],
                                                        cudaStreamNonBlocking));
        !s)
      return s;
    if (!overStages(g))
      continue;
    if (lanes_.size() < groups.size())
      lanes_.resize(groups.size());
    TransferLanes &lanes = lanes_[g];
    for (auto [lane, name] : {std::make_pair(&lanes.up, " up"),
                              std::make_pair(&lanes.down, " down")}) {
      if (Status s = NcclGroup::create(*groups[g], device_,
                                       groups[g]->label() + name, *lane);
          !s)
        return s;
      liveGroups_.push_back(lane->get());
    }
  }
  pending_.reserve(program.calls.size());
  return Status::ok();
}

void CudaDevice::resolveRun(const KernelCall &call, const Resolved &r,
                            const StepContext &context) {
  for (size_t j = 0; j < call.operands.size(); ++j) {
    const TensorRef &t = call.operands[j];
    uint8_t *p = r.operands[j] +
                 r.operandStrides[j] * t.slotOf(context.microbatch,
                                                context.slot);
    runOperands_[j] = p;
    reads_[j] = {reinterpret_cast<uint64_t>(p),
                 reinterpret_cast<uint64_t>(p) + t.bytes};
  }
  for (size_t j = 0; j < call.results.size(); ++j) {
    const TensorRef &t = call.results[j];
    uint8_t *p = r.results[j] +
                 r.resultStrides[j] * t.slotOf(context.microbatch,
                                               context.slot);
    runResults_[j] = p;
    writes_[j] = {reinterpret_cast<uint64_t>(p),
                  reinterpret_cast<uint64_t>(p) + t.bytes};
  }
}

Status CudaDevice::waitForHazards(const KernelCall &call) {
  tracker_.conflicts(reads_.data(), call.operands.size(), writes_.data(),
                     call.results.size(), waits_);
  return waitForSlots(compute_);
}

Status CudaDevice::waitForSlots(cudaStream_t stream) {
  for (uint32_t slot : waits_)
    if (Status s = cudaStatus("cudaStreamWaitEvent",
                              cudaStreamWaitEvent(stream, events_[slot], 0));
        !s)
      return s;
  return Status::ok();
}

Status CudaDevice::orderAfterCompute(cudaStream_t stream) {
  if (Status s = cudaStatus("cudaEventRecord",
                            cudaEventRecord(computeMark_, compute_));
      !s)
    return s;
  return cudaStatus("cudaStreamWaitEvent",
                    cudaStreamWaitEvent(stream, computeMark_, 0));
}

Status CudaDevice::orderAfterOthers(const ByteRange *reads, size_t numReads,
                                    const ByteRange *writes, size_t numWrites,
                                    cudaStream_t stream) {
  // The communication streams do not order each other: an operation waits
  // for those in flight on any of them whose bytes it meets (a collective
  // on a buffer a transfer receives, two transfers on one buffer).
  tracker_.overlapping(reads, numReads, writes, numWrites, waits_);
  return waitForSlots(stream);
}

Status CudaDevice::laneOf(const KernelCall &call, bool send, int peer,
                          NcclGroup *&group, cudaStream_t &stream) const {
  if (call.group < 0 || static_cast<size_t>(call.group) >= lanes_.size() ||
      !lanes_[call.group].up)
    return Status::error("a transfer needs a group of two or more ranks over "
                         "the pipeline axis");
  const TransferLanes &lanes = lanes_[call.group];
  int self = lanes.up->rank();
  bool up = send ? peer > self : peer < self;
  group = up ? lanes.up.get() : lanes.down.get();
  stream = up ? up_ : down_;
  return Status::ok();
}

Status CudaDevice::track(const ByteRange *reads, size_t numReads,
                         const ByteRange *writes, size_t numWrites,
                         cudaStream_t stream) {
  int64_t retired = -1;
  uint32_t slot = tracker_.begin(reads, numReads, writes, numWrites, retired);
  if (retired >= 0)
    if (Status s = cudaStatus(
            "cudaStreamWaitEvent",
            cudaStreamWaitEvent(compute_, events_[retired], 0));
        !s)
      return s;
  return cudaStatus("cudaEventRecord", cudaEventRecord(events_[slot], stream));
}

Status CudaDevice::execute(const KernelCall &call,
                           const StepContext &context) {
  if (call.index >= resolved_.size() || !resolved_[call.index].prepared)
    return Status::error(kernelName(call) +
                         " is not part of the prepared program");
  const Resolved &r = resolved_[call.index];
  const FusionStep &fusion = fusion_[call.index];
  // Deferred members run alone unless the group's next member comes now,
  // in the same action.
  if (deferredCount_) {
    const Deferred &last = deferred_[deferredCount_ - 1];
    if (!((fusion.role == FusionRole::Tail ||
           fusion.role == FusionRole::Link) &&
          fusion.partner == last.call->index &&
          context.microbatch == last.context.microbatch &&
          context.slot == last.context.slot))
      if (Status s = flushHead(); !s)
        return s;
  }
  resolveRun(call, r, context);
  // Deferred work that must go out before anything else runs.
  if (r.family != Family::TransferStart)
    if (Status s = flushTransfers(); !s)
      return s;
  if (!reductions_.empty() &&
      !(r.joinsPrevious && call.index == lastReduction_ + 1))
    if (Status s = flushReductions(); !s)
      return s;
  // A batch's members are deferred, launched together.
  BatchLaunch launches[BatchDeferral::kMostLaunches];
  size_t launchCount = 0;
  bool absorbed = deferral_.call(r.batch, r.member, launches, launchCount);
  if (absorbed || launchCount) {
    // The members' own reads and writes wait for what is in flight first.
    if (Status s = waitForHazards(call); !s)
      return s;
    if (Status s = launchBatches(launches, launchCount); !s)
      return s;
    if (absorbed)
      return Status::ok();
  }

  Status s = Status::ok();
  switch (r.family) {
  case Family::Collective:
    s = runCollective(call);
    break;
  case Family::Transfer:
    s = runTransfer(call);
    break;
  case Family::TransferStart:
    s = startTransfer(call);
    break;
  case Family::Wait:
    s = waitTransfer();
    break;
  default:
    // A fused pair's head and tail each wait for what their own ranges
    // meet (the head's, its result included, at its call): both waits are
    // enqueued before the fused kernel.
    // Ids and labels are checked as each kernel comes, fused or not.
    s = waitForHazards(call);
    if (s)
      s = checkData(call);
    if (!s)
      break;
    if (fusion.role == FusionRole::Head ||
        (fusion.role == FusionRole::Link && deferredCount_))
      defer(call, context);
    else if (fusion.role == FusionRole::Tail && deferredCount_)
      s = runFused(call, context);
    else
      s = runCompute(call, r, context);
    break;
  }
  // The interpreter names the kernel of a failure (not named here too).
  return s;
}

KernelArgs CudaDevice::computeArgs(void *const *operands, void *const *results,
                                   const StepContext &context) const {
  KernelArgs args;
  args.operands = operands;
  args.results = results;
  args.scratch = scratch_;
  args.scratchBytes = scratchBytes_;
  args.context = &context;
  args.stream = compute_;
  return args;
}

void CudaDevice::defer(const KernelCall &call, const StepContext &context) {
  Deferred &d = deferred_[deferredCount_++];
  d.call = &call;
  for (size_t i = 0; i < call.operands.size() && i < 3; ++i)
    d.operands[i] = runOperands_[i];
  for (size_t i = 0; i < call.results.size() && i < 2; ++i)
    d.results[i] = runResults_[i];
  d.context = context;
}

Status CudaDevice::flushHead() {
  size_t count = deferredCount_;
  deferredCount_ = 0;
  for (size_t i = 0; i < count; ++i) {
    const Deferred &d = deferred_[i];
    const KernelCall &call = *d.call;
    KernelArgs args = computeArgs(d.operands, d.results, d.context);
    Status s = isGemmKernel(call.op)        ? gemm_.run(call, args)
               : isReductionKernel(call.op) ? runReductionKernel(call, args)
                                            : runPointwiseKernel(call, args);
    if (!s)
      return s.withContext(kernelName(call));
  }
  return Status::ok();
}

Status CudaDevice::runFused(const KernelCall &tail,
                            const StepContext &context) {
  size_t count = deferredCount_;
  deferredCount_ = 0;
  // The group's members in order, each with its run's addresses.
  const KernelCall *members[4] = {};
  KernelArgs args[4];
  for (size_t i = 0; i < count; ++i) {
    members[i] = deferred_[i].call;
    args[i] = computeArgs(deferred_[i].operands, deferred_[i].results,
                          deferred_[i].context);
  }
  members[count] = &tail;
  args[count] = computeArgs(runOperands_.data(), runResults_.data(), context);
  size_t n = count + 1;
  const KernelCall &head = *members[0];
  const KernelArgs &headArgs = args[0], &tailArgs = args[count];
  Status s = Status::ok();
  if (isGemmKernel(head.op)) {
    // The tail's result is the epilogue's: an add's (whose other operand
    // is C), a gelu's or gelu_grad's (whose input is the aux matrix), or a
    // weight gradient's bias gradient.
    GemmEpilogue epilogue;
    if (tail.op == fb::OpCode::Add) {
      epilogue.sum = runResults_[0];
      epilogue.addend = runOperands_[fusion::addendOperand(head, tail)];
    } else if (head.op == fb::OpCode::Linear ||
               head.op == fb::OpCode::LinearInputGrad) {
      epilogue.geluResult = runResults_[0];
    } else {
      epilogue.biasGrad = runResults_[0];
    }
    if (head.op == fb::OpCode::LinearInputGrad && tail.op != fb::OpCode::Add)
      epilogue.geluInput = runOperands_[1];
    s = gemm_.run(head, headArgs, epilogue);
  } else if (head.op == fb::OpCode::Silu ||
             (head.op == fb::OpCode::Mul && tail.op == fb::OpCode::SiluGrad)) {
    s = runSwigluPair(head, tail, headArgs, tailArgs,
                      fusion_[tail.index].writesHead);
  } else if (head.op == fb::OpCode::CrossEntropy) {
    s = runCrossEntropyWithGrad(head, tail, headArgs, tailArgs,
                                fusion_[tail.index].unwrittenHeadResults);
  } else if (isReductionKernel(head.op)) {
    // A norm's backward: its parameter gradient (or not: refused, or
    // computed elsewhere), its input gradient, the residual add (or not),
    // the dropout of the result (or not), in that order.
    size_t i = 0;
    NormGroup group;
    if (isNormParamGrad(head.op)) {
      group.paramGrad = members[i];
      group.paramArgs = &args[i++];
    }
    if (i < n) {
      group.inputGrad = members[i];
      group.inputArgs = &args[i++];
    }
    if (i < n && members[i]->op == fb::OpCode::Add) {
      group.add = members[i];
      group.addArgs = &args[i++];
    }
    if (i < n && members[i]->op == fb::OpCode::ApplyMask) {
      group.mask = members[i];
      group.maskArgs = &args[i++];
    }
    s = i == n && group.inputGrad ? runNormGroup(group)
                                  : Status::error("not a norm backward group");
  } else {
    // A forward residual add group: [bias add] [apply_mask] add [norm], in
    // that order (a first add is the bias add where another add follows).
    AddGroup group;
    if (members[n - 1]->op == fb::OpCode::LayerNorm ||
        members[n - 1]->op == fb::OpCode::RmsNorm) {
      --n;
      group.norm = members[n];
      group.normArgs = &args[n];
    }
    size_t i = 0;
    if (n >= 2 && members[0]->op == fb::OpCode::Add) {
      group.biasAdd = members[i];
      group.biasArgs = &args[i++];
    }
    if (i < n && members[i]->op == fb::OpCode::ApplyMask) {
      group.applyMask = members[i];
      group.maskArgs = &args[i++];
    }
    if (i + 1 == n) {
      group.add = members[i];
      group.addArgs = &args[i];
    }
    s = group.add ? runAddGroup(group)
                  : Status::error("not a residual add group");
  }
  return s ? s : s.withContext(kernelName(head));
}

Status CudaDevice::runCompute(const KernelCall &call, const Resolved &r,
                              const StepContext &context) {
  KernelArgs args =
      computeArgs(runOperands_.data(), runResults_.data(), context);
  switch (r.family) {
  case Family::Gemm:
    return gemm_.run(call, args);
  case Family::Pointwise:
    return runPointwiseKernel(call, args);
  case Family::Reduction:
    // The gradients' norm summed by the optimizer batch before it.
    if (squaresInUpdates_[call.index])
      return runSumSquaresTotal(call, args);
    return runReductionKernel(call, args);
  case Family::Attention:
    return runAttention(call, args);
  case Family::VocabCrossEntropy:
    return runVocabCrossEntropy(call);
  case Family::Local:
    return runLocal(call);
  default:
    return Status::error("not a compute kernel");
  }
}

Status CudaDevice::launchBatches(const BatchLaunch *launches, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const KernelBatch &batch = batches_[launches[i].batch];
    if (!batch.casts.empty()) {
      if (Status s = castMany(batch.castList + launches[i].first,
                              static_cast<int>(launches[i].count),
                              batch.mostElements, compute_);
          !s)
        return s;
      continue;
    }
    const std::vector<double> &a = batch.attrs;
    // Summing the next sum_squares' squares into its partials (its
    // scratch: the sum_squares is the next kernel, nothing runs between).
    double *partials = batch.squaresOperand.empty()
                           ? nullptr
                           : reinterpret_cast<double *>(scratch_);
    if (Status s = adamwUpdateMany(
            batch.list + launches[i].first, static_cast<int>(launches[i].count),
            batch.mostElements, batch.lr, batch.step, batch.gradScale, a[0],
            a[1], a[2], a[3], partials, compute_);
        !s)
      return s;
  }
  return Status::ok();
}

/// A cast batch's list (KernelBatches.h) at `at`, which moves past it.
Status CudaDevice::writeCastList(KernelBatch &b, uint8_t *&at) {
  auto aligned16 = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  std::vector<CastTensor> list = b.casts;
  for (size_t m = 0; m < b.members.size(); ++m) {
    const Resolved &r = resolved_[b.members[m]];
    CastTensor &t = list[m];
    t.in = r.operands.empty() ? nullptr : r.operands[0];
    t.out = r.results[0];
    t.vectorized = (!t.in || aligned16(t.in)) && aligned16(t.out);
  }
  b.castList = reinterpret_cast<CastTensor *>(at);
  at += alignScratch(list.size() * sizeof(CastTensor));
  return cudaStatus("writing the casts' tensor list",
                    cudaMemcpy(b.castList, list.data(),
                               list.size() * sizeof(CastTensor),
                               cudaMemcpyHostToDevice));
}

Status CudaDevice::flushBatches() {
  BatchLaunch launches[BatchDeferral::kMostLaunches];
  size_t count = 0;
  deferral_.flush(launches, count);
  return launchBatches(launches, count);
}

/// all_reduce, all_gather, reduce_scatter, all_to_all on their
/// communicator's stream (a group of one: a copy on the compute stream). 16-bit
/// buffers are reduced by NCCL in their own type (the executable chose the
/// reduction's dtype: fp32 or bf16 gradients).
Status CudaDevice::runCollective(const KernelCall &call) {
  const TensorRef &x = call.operands[0];
  const TensorRef &y = call.results[0];
  auto *in = static_cast<uint8_t *>(runOperands_[0]);
  auto *out = static_cast<uint8_t *>(runResults_[0]);
  NcclGroup *group = groupOf(call);
  if (!group) {
    // One rank: every collective is its operand, as is.
    if (Status s = waitForHazards(call); !s)
      return s;
    if (out == in)
      return Status::ok();
    return cudaStatus("copy", cudaMemcpyAsync(out, in, y.bytes,
                                              cudaMemcpyDeviceToDevice,
                                              compute_));
  }
  cudaStream_t stream = streamOf(call);
  uint8_t *staging = stagingOf(call);
  if (Status s = orderAfterCompute(stream); !s)
    return s;
  if (Status s = orderAfterOthers(reads_.data(), call.operands.size(),
                                  writes_.data(), call.results.size(), stream);
      !s)
    return s;
  int64_t g = call.groupSize;
  uint64_t elementBytes = executableDTypeSize(x.dtype);
  Storage type = storageOf(x.dtype);
  Status s = Status::ok();
  switch (call.op) {
  case fb::OpCode::AllReduce: {
    s = cudaStatus("copy", out == in ? cudaSuccess
                                     : cudaMemcpyAsync(out, in, x.bytes,
                                                       cudaMemcpyDeviceToDevice,
                                                       stream));
    const Resolved &r = resolved_[call.index];
    if (s && (r.joinsPrevious || r.joinedByNext)) {
      // A member of a run: ordered on its stream now, reduced in the run's
      // group at its last member (or at whatever is called first).
      PendingReduction p;
      p.data = out;
      p.count = static_cast<size_t>(call.count);
      p.type = type;
      p.max = (call.flags & 1) != 0;
      p.group = group;
      p.stream = stream;
      p.read = reads_[0];
      p.write = writes_[0];
      reductions_.push_back(p);
      lastReduction_ = call.index;
      return r.joinedByNext ? Status::ok() : flushReductions();
    }
    if (s)
      s = group->allReduce(out, out, static_cast<size_t>(call.count), type,
                           (call.flags & 1) != 0, stream);
    break;
  }
  case fb::OpCode::AllGather: {
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    if (v.outer == 1) {
      s = group->allGather(in, out, x.bytes, stream);
      break;
    }
    s = group->allGather(in, staging, x.bytes, stream);
    if (s)
      s = cudaStatus("join", joinPieces(staging, v.outer, g,
                                        v.extent * v.inner * elementBytes, out,
                                        stream));
    break;
  }
  case fb::OpCode::ReduceScatter: {
    AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
    const uint8_t *send = in;
    if (v.outer > 1) {
      s = cudaStatus("split", splitPieces(in, v.outer, g,
                                          v.extent / g * v.inner * elementBytes,
                                          staging, stream));
      send = staging;
    }
    if (s)
      s = group->reduceScatter(send, out, static_cast<size_t>(x.elements / g),
                               type, stream);
    break;
  }
  case fb::OpCode::AllToAll: {
    AroundDim split = aroundDim(x.shape, call.intAttrs[0]);
    AroundDim concat = aroundDim(y.shape, call.intAttrs[1]);
    concat.extent /= g;
    uint8_t *send = staging, *recv = staging + alignScratch(x.bytes);
    s = cudaStatus("split",
                   splitPieces(in, split.outer, g,
                               split.extent / g * split.inner * elementBytes,
                               send, stream));
    if (s)
      s = group->allToAll(send, recv, x.bytes / g, stream);
    if (s)
      s = cudaStatus("join",
                     joinPieces(recv, concat.outer, g,
                                concat.extent * concat.inner * elementBytes,
                                out, stream));
    break;
  }
  default:
    return Status::error("not a collective");
  }
  if (!s)
    return s;
  return track(reads_.data(), call.operands.size(), writes_.data(),
               call.results.size(), stream);
}

/// shard_slice and shard_pad: this rank's block along a dimension, as a
/// strided copy on the compute stream.
Status CudaDevice::runLocal(const KernelCall &call) {
  const TensorRef &x = call.operands[0];
  auto *in = static_cast<uint8_t *>(runOperands_[0]);
  auto *out = static_cast<uint8_t *>(runResults_[0]);
  int64_t g = call.groupSize, position = call.groupPosition;
  uint64_t elementBytes = executableDTypeSize(x.dtype);
  AroundDim v = aroundDim(x.shape, call.intAttrs[0]);
  if (call.op == fb::OpCode::ShardSlice) {
    uint64_t row = v.extent / g * v.inner * elementBytes;
    return cudaStatus("shard_slice", copyRows(out, row, in + position * row,
                                              g * row, row, v.outer,
                                              compute_));
  }
  uint64_t row = v.extent * v.inner * elementBytes;
  if (Status s = cudaStatus("shard_pad", cudaMemsetAsync(
                                             out, 0, call.results[0].bytes,
                                             compute_));
      !s)
    return s;
  return cudaStatus("shard_pad", copyRows(out + position * row, g * row, in,
                                          row, row, v.outer, compute_));
}

/// cross_entropy(_grad) over a split vocabulary (CpuDevice's
/// runVocabCrossEntropy): per position the max over the group, then the
/// sums of exponentials and the target's logit summed over it, the
/// all-reduces between the phases in stream order.
Status CudaDevice::runVocabCrossEntropy(const KernelCall &call) {
  NcclGroup *group = groupOf(call);
  bool grad = call.op == fb::OpCode::CrossEntropyGrad;
  const void *logits = runOperands_[0];
  Storage logitsType = storageOf(call.operands[0].dtype);
  auto *labels = static_cast<const int64_t *>(runOperands_[1]);
  int64_t rows = call.rows, ignore = call.intAttrs[0];
  int64_t blockStart = call.groupPosition * call.cols;
  auto *max = reinterpret_cast<float *>(scratch_);
  float *sumExp = max + rows, *target = sumExp + rows;
  auto count = static_cast<size_t>(rows);
  if (Status s = crossEntropyBlockMax(logits, logitsType, labels, rows,
                                      call.cols, blockStart, call.k, ignore,
                                      max, compute_);
      !s)
    return s;
  if (group)
    if (Status s =
            allReduceInStreamOrder(*group, streamOf(call), max, count, true);
        !s)
      return s;
  if (Status s = crossEntropyBlockSums(logits, logitsType, labels, rows,
                                       call.cols, blockStart, call.k, ignore,
                                       max, sumExp, grad ? nullptr : target,
                                       compute_);
      !s)
    return s;
  if (group)
    if (Status s = allReduceInStreamOrder(*group, streamOf(call), sumExp,
                                          grad ? count : 2 * count, false);
        !s)
      return s;
  if (grad)
    return crossEntropyBlockGrad(
        logits, logitsType, labels, rows, call.cols, blockStart, call.k,
        ignore, max, sumExp, static_cast<const float *>(runOperands_[2]),
        runResults_[0], storageOf(call.results[0].dtype), compute_);
  return crossEntropyCombine(labels, rows, ignore, max, sumExp, target,
                             static_cast<float *>(runResults_[0]),
                             static_cast<int64_t *>(runResults_[1]), compute_);
}

/// An f32 all-reduce between two kernels of the compute stream: on the
/// communicator's stream like every NCCL call of it (NCCL matches a
/// communicator's operations by the order they run in, so they all go
/// through one stream), the compute stream waiting for it.
Status CudaDevice::allReduceInStreamOrder(NcclGroup &group, cudaStream_t stream,
                                          float *data, size_t count, bool max) {
  if (Status s = orderAfterCompute(stream); !s)
    return s;
  if (Status s = group.allReduce(data, data, count, Storage::F32, max, stream);
      !s)
    return s;
  if (Status s =
          cudaStatus("cudaEventRecord", cudaEventRecord(commMark_, stream));
      !s)
    return s;
  return cudaStatus("cudaStreamWaitEvent",
                    cudaStreamWaitEvent(compute_, commMark_, 0));
}

/// send and recv: a started transfer sent at once (NCCL pairs it with the
/// peer's in issue order, as MPI's per-peer FIFO does).
Status CudaDevice::runTransfer(const KernelCall &call) {
  if (Status s = startTransfer(call); !s)
    return s;
  return flushTransfers();
}

/// send_start, recv_start: listed; flushTransfers sends the list as one
/// NCCL group at the next kernel that is not a start.
Status CudaDevice::startTransfer(const KernelCall &call) {
  PendingTransfer t;
  t.send = call.op == fb::OpCode::SendStart || call.op == fb::OpCode::Send;
  t.data = static_cast<uint8_t *>(t.send ? runOperands_[0] : runResults_[0]);
  t.bytes = t.send ? call.operands[0].bytes : call.results[0].bytes;
  t.peer = static_cast<int>(call.intAttrs[0]);
  if (Status s = laneOf(call, t.send, t.peer, t.group, t.stream); !s)
    return s;
  if (pending_.size() == pending_.capacity())
    if (Status s = flushTransfers(); !s)
      return s;
  pending_.push_back(t);
  return Status::ok();
}

Status CudaDevice::flushTransfers() {
  if (pending_.empty())
    return Status::ok();
  for (cudaStream_t stream : {up_, down_})
    if (Status s = orderAfterCompute(stream); !s)
      return s;
  for (const PendingTransfer &t : pending_) {
    ByteRange range{reinterpret_cast<uint64_t>(t.data),
                    reinterpret_cast<uint64_t>(t.data) + t.bytes};
    if (Status s = t.send ? orderAfterOthers(&range, 1, nullptr, 0, t.stream)
                          : orderAfterOthers(nullptr, 0, &range, 1, t.stream);
        !s)
      return s;
  }
  // One NCCL group per communicator, never one over several: NCCL makes
  // every stream of a group wait for the whole group ("Mixing multiple
  // streams within the same group"), which would tie the up direction's
  // transfers to the down direction's and bring back the deadlock the two
  // communicators avoid. A communicator's sends and receives of the batch
  // still go out together.
  Status s = Status::ok();
  for (size_t first = 0; first < pending_.size() && s; ++first) {
    NcclGroup *communicator = pending_[first].group;
    bool seen = false;
    for (size_t i = 0; i < first && !seen; ++i)
      seen = pending_[i].group == communicator;
    if (seen)
      continue;
    s = NcclGroup::grouped([&] {
      Status sent = Status::ok();
      for (size_t i = first; i < pending_.size() && sent; ++i) {
        const PendingTransfer &t = pending_[i];
        if (t.group == communicator)
          sent = t.send ? t.group->send(t.data, t.bytes, t.peer, t.stream)
                        : t.group->recv(t.data, t.bytes, t.peer, t.stream);
      }
      return sent;
    });
  }
  for (const PendingTransfer &t : pending_) {
    if (!s)
      break;
    ByteRange range{reinterpret_cast<uint64_t>(t.data),
                    reinterpret_cast<uint64_t>(t.data) + t.bytes};
    s = t.send ? track(&range, 1, nullptr, 0, t.stream)
               : track(nullptr, 0, &range, 1, t.stream);
  }
  pending_.clear();
  return s;
}

Status CudaDevice::flushReductions() {
  if (reductions_.empty())
    return Status::ok();
  Status s = NcclGroup::grouped([&] {
    Status reduced = Status::ok();
    for (size_t i = 0; i < reductions_.size() && reduced; ++i) {
      const PendingReduction &p = reductions_[i];
      reduced =
          p.group->allReduce(p.data, p.data, p.count, p.type, p.max, p.stream);
    }
    return reduced;
  });
  for (const PendingReduction &p : reductions_) {
    if (!s)
      break;
    s = track(&p.read, 1, &p.write, 1, p.stream);
  }
  reductions_.clear();
  return s;
}

/// wait: the compute stream waits for the transfer on its buffer (the
/// kernels after it then see the received bytes, or may overwrite the sent
/// ones).
Status CudaDevice::waitTransfer() {
  // The transfer's buffer, read or written: any operation on it meets a
  // write range.
  tracker_.conflicts(nullptr, 0, &reads_[0], 1, waits_);
  return waitForSlots(compute_);
}

bool CudaDevice::markRuns(size_t runs) {
  if (!compute_)
    return false;
  // Created the first time (a timed step allocates nothing after it).
  while (runMarks_.size() < runs + 1) {
    cudaEvent_t event = nullptr;
    if (cudaEventCreate(&event) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    runMarks_.push_back(event);
  }
  markedRuns_ = runs;
  marking_ = true;
  return true;
}

Status CudaDevice::markRun(size_t run) {
  if (!marking_ || run >= markedRuns_)
    return Status::error("run mark " + std::to_string(run) + " outside the " +
                         std::to_string(markedRuns_) + " runs of the step");
  return cudaStatus("cudaEventRecord",
                    cudaEventRecord(runMarks_[run], compute_));
}

Status CudaDevice::runDurations(std::vector<int64_t> &nanoseconds) {
  if (marking_)
    return Status::error("the timed step has not been synchronized");
  nanoseconds.resize(markedRuns_);
  for (size_t run = 0; run < markedRuns_; ++run) {
    float ms = 0;
    if (Status s = cudaStatus(
            "cudaEventElapsedTime",
            cudaEventElapsedTime(&ms, runMarks_[run], runMarks_[run + 1]));
        !s)
      return s;
    nanoseconds[run] = static_cast<int64_t>(std::llround(ms * 1e6));
  }
  return Status::ok();
}

Status CudaDevice::synchronize() {
  if (!compute_)
    return Status::ok();
  if (Status s = flushHead(); !s)
    return s;
  if (Status s = flushTransfers(); !s)
    return s;
  if (Status s = flushReductions(); !s)
    return s;
  if (Status s = flushBatches(); !s)
    return s;
  tracker_.retireAll(waits_);
  if (Status s = waitForSlots(compute_); !s)
    return s;
  if (marking_) {
    // The timed step's end: after everything it launched.
    marking_ = false;
    if (Status s =
            cudaStatus("cudaEventRecord",
                       cudaEventRecord(runMarks_[markedRuns_], compute_));
        !s)
      return s;
  }
  if (Status s = cudaStatus("cudaEventRecord", cudaEventRecord(done_, compute_));
      !s)
    return s;
  static const std::string label = "[device]";
  if (Status s = waitEvent(done_, liveGroups_.data(), liveGroups_.size(),
                           "synchronize", &label);
      !s)
    return s;
  // A kernel's asynchronous failure (an illegal address) surfaces here.
  if (Status s = cudaStatus("a kernel of the step failed", cudaGetLastError());
      !s)
    return s;
  return dataError();
}

Status CudaDevice::checkData(const KernelCall &call) {
  fb::OpCode op = call.op;
  bool embedding = op == fb::OpCode::Embedding ||
                   op == fb::OpCode::EmbeddingGrad ||
                   op == fb::OpCode::EmbeddingGradAccumulate;
  bool labels =
      op == fb::OpCode::CrossEntropy || op == fb::OpCode::CrossEntropyGrad;
  if ((!embedding && !labels) || checks_.size() == kMostChecks)
    return Status::ok();
  const auto *ids = static_cast<const int64_t *>(runOperands_[1]);
  int64_t count = call.operands[1].elements;
  // CpuDevice's bounds: a table block's whole vocabulary; the classes of a
  // padded or split vocabulary, else the logits' columns.
  int64_t bound = embedding ? (call.group >= 0 ? call.k * call.groupSize
                                               : call.k)
                  : call.intAttrs.size() >= 2 ? call.k
                                              : call.cols;
  const int64_t *ignore = labels ? &call.intAttrs[0] : nullptr;
  if (Status s = checkIdsInRange(ids, count, bound, ignore, checks_.size(),
                                 firstBad_, badValue(), compute_);
      !s)
    return s;
  checks_.push_back({&call, bound});
  return Status::ok();
}

Status CudaDevice::dataError() {
  if (checks_.empty())
    return Status::ok();
  unsigned long long key = ~0ull;
  if (Status s = cudaStatus("reading the data checks",
                            cudaMemcpy(&key, firstBad_, sizeof(key),
                                       cudaMemcpyDeviceToHost));
      !s)
    return s;
  if (key == ~0ull) {
    checks_.clear();
    return Status::ok();
  }
  uint64_t order = key >> kDataCheckOrderShift;
  uint64_t position = key & kDataCheckPositionMask;
  std::string text = "a data check failed";
  if (order < checks_.size()) {
    const DataCheck &check = checks_[order];
    // Copied by the check's own follow-up kernel: the ids' bytes may hold
    // something else by now.
    int64_t value = 0;
    if (Status s = cudaStatus("reading the bad value",
                              cudaMemcpy(&value, badValue(), sizeof(value),
                                         cudaMemcpyDeviceToHost));
        !s)
      return s;
    bool label = check.call->op == fb::OpCode::CrossEntropy ||
                 check.call->op == fb::OpCode::CrossEntropyGrad;
    text = kernelName(*check.call) + ": " + opCodeName(check.call->op) +
           (label ? ": label " : ": id ") + std::to_string(value) +
           " at position " + std::to_string(position) + " is outside [0, " +
           std::to_string(check.bound) + ")";
  }
  checks_.clear();
  // Reset on the compute stream, before the next step's checks write it.
  if (Status s = cudaStatus("cudaMemsetAsync",
                            cudaMemsetAsync(firstBad_, 0xFF, sizeof(*firstBad_),
                                            compute_));
      !s)
    return s.withContext(text);
  return Status::error(text);
}

} // namespace

Status cuda::createDevice(const CudaDeviceOptions &options,
                          const CudaHostServices &host,
                          std::unique_ptr<Device> &device) {
  setHostServices(host);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Status::error("no CUDA device: " + deviceCountFailure(err));
  }
  // The loader chose the device (selectCudaDevice).
  int chosen = options.device;
  if (chosen < 0 || chosen >= count)
    return Status::error("CUDA device " + std::to_string(chosen) +
                         " does not exist (" + std::to_string(count) +
                         " visible)");
  auto created = std::make_unique<CudaDevice>(chosen, options);
  if (Status s = created->start(); !s)
    return s.withContext("CUDA device " + std::to_string(chosen));
  device = std::move(created);
  return Status::ok();
}
