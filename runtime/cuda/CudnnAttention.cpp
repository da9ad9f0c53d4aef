//===- CudnnAttention.cpp - attention through cuDNN's fused SDPA ----------===//

#include "CudnnAttention.h"

#include "AttentionTensors.h"
#include "CudnnGraph.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

/// cuDNN fills masked scores with -inf from 9.10 on; before, cudnn-frontend
/// uses the lowest float (its engines then did not take -inf).
constexpr size_t kInfinityMask = 91000;

/// Calls of one key share a plan (the scale is a run-time value). The
/// first two: a backward, one given the forward's O and Stats.
using ShapeKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, bool, bool, bool, int>;

ShapeKey keyOf(const KernelCall &call) {
  cudnn::SdpaShape s = sdpaShapeOf(call);
  return {call.attentionBackward(),
          call.attentionReadsLse(),
          s.batch,
          s.heads,
          s.kvHeads,
          s.seqQ,
          s.seqK,
          s.headDim,
          s.seqMajor,
          s.packedQkv,
          s.causal,
          static_cast<int>(s.dataType)};
}

} // namespace

cudnn::SdpaShape cuda::sdpaShapeOf(const KernelCall &call) {
  cudnn::SdpaShape s;
  s.batch = call.batch;
  s.heads = call.heads;
  s.kvHeads = call.kvHeads;
  s.seqQ = call.seqQ;
  s.seqK = call.seqK;
  s.headDim = call.headDim;
  s.seqMajor = call.attentionSeqMajor();
  s.packedQkv = call.attentionPackedQkv();
  s.causal = call.flags & 1;
  s.dataType = call.operands[0].dtype == fb::DType::BF16 ? CUDNN_DATA_BFLOAT16
                                                         : CUDNN_DATA_HALF;
  s.scale =
      static_cast<float>(call.floatAttrs.empty() ? 1.0 : call.floatAttrs[0]);
  return s;
}

std::string cuda::cudnnVersionRefusal(const KernelCall &call, size_t version) {
  if (version == 91000 || version == 91001)
    return "cuDNN " + cudnnVersionString(version) +
           " (its fused attention has known bugs)";
  if (call.attentionBackward() && version < 91501 && call.seqK % 128 != 0)
    return "attention_grad with s_k " + std::to_string(call.seqK) +
           " (not a multiple of 128) on cuDNN " + cudnnVersionString(version) +
           " (before 9.15.1 its backward reads out of bounds there)";
  return "";
}

//===- Plans --------------------------------------------------------------===//

namespace {

/// One graph made executable: its descriptors and plan.
struct GraphPlan {
  explicit GraphPlan(const CudnnLibrary &library) : builder(library) {}
  cudnn::Builder builder;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
};

/// The plans of one shape key and where its scratch pieces lie.
struct ShapePlan {
  /// The first call's (its scale aside: each call passes its own).
  cudnn::SdpaShape shape;
  /// A backward; one given the forward's O and Stats (no forward plan, none
  /// of them in scratch).
  bool grad = false, saved = false;
  std::unique_ptr<GraphPlan> forward, backward;
  uint64_t outputBytes = 0, statsOffset = 0, sumOffset = 0;
  uint64_t workspaceOffset = 0, scratchBytes = 0;
};

/// A run's addresses: the operands and results in the call's order, and
/// the scratch (which holds O, Stats, the row sums and the workspace).
struct RunAddresses {
  /// At most attention_grad's six operands (given O and lse) and three
  /// results.
  std::array<void *, 9> buffers{};
  void *scratch = nullptr;
  bool operator==(const RunAddresses &other) const {
    return buffers == other.buffers && scratch == other.scratch;
  }
};

/// The variant packs of one set of addresses.
struct PackSet {
  RunAddresses at;
  std::unique_ptr<cudnn::Builder> builder;
  cudnnBackendDescriptor_t forward = nullptr, backward = nullptr;
};

/// A call's plan, its by-value scalars (their addresses are in the packs)
/// and its pack sets.
struct CallRun {
  ShapePlan *plan = nullptr;
  float scale = 1.0f, one = 1.0f, negativeInfinity = -INFINITY;
  /// One per distinct set of addresses the call runs with: one, or one per
  /// pool slot its buffers meet. Never replaced: a call meets every set it
  /// will in the first step (the slots a pipeline's microbatches take
  /// repeat each step), so later steps build nothing, however many slots a
  /// deep pipeline's pools have.
  std::vector<PackSet> packs;
};

} // namespace

struct CudnnAttention::Impl {
  const CudnnLibrary *library = nullptr;
  cudnnHandle_t handle = nullptr;
  std::map<ShapeKey, std::unique_ptr<ShapePlan>> plans;
  std::map<uint32_t, CallRun> calls;

  ~Impl() { shutdown(); }

  void shutdown() {
    calls.clear();
    plans.clear();
    if (handle)
      library->destroy(handle);
    handle = nullptr;
  }

  Status makeGraphPlan(const cudnn::SdpaShape &shape, bool backward,
                       std::unique_ptr<GraphPlan> &out) {
    auto g = std::make_unique<GraphPlan>(*library);
    std::vector<cudnnBackendDescriptor_t> ops =
        backward ? cudnn::buildSdpaBackward(g->builder, shape)
                 : cudnn::buildSdpaForward(g->builder, shape);
    cudnnBackendDescriptor_t graph =
        cudnn::operationGraph(g->builder, ops, handle);
    g->plan = cudnn::executionPlan(g->builder, graph, handle, g->workspace);
    if (!g->builder.ok())
      return g->builder.status().withContext(backward ? "the backward graph"
                                                      : "the forward graph");
    out = std::move(g);
    return Status::ok();
  }
};

CudnnAttention::CudnnAttention() : impl_(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;

Status CudnnAttention::init(cudaStream_t stream) {
  if (impl_->handle)
    return Status::ok();
  std::string where;
  if (Status s = loadCudnnLibrary(impl_->library, &where); !s)
    return s;
  const CudnnLibrary &lib = *impl_->library;
  if (cudnnStatus_t st = lib.create(&impl_->handle);
      st != CUDNN_STATUS_SUCCESS) {
    impl_->handle = nullptr;
    return Status::error("cudnnCreate (" + where + "): " + lib.describe(st));
  }
  if (cudnnStatus_t st = lib.setStream(impl_->handle, stream);
      st != CUDNN_STATUS_SUCCESS)
    return Status::error("cudnnSetStream: " + lib.describe(st));
  return Status::ok();
}

Status CudnnAttention::plan(const KernelCall &call, uint64_t &scratchBytes) {
  if (!impl_->handle)
    return Status::error("cuDNN is not initialized");
  if (std::string why = cudnnAttentionRefusal(call); !why.empty())
    return Status::error("cuDNN's attention does not take it: " + why);
  if (std::string why = cudnnVersionRefusal(call, impl_->library->version);
      !why.empty())
    return Status::error("cuDNN's attention does not take it: " + why);
  const cudnn::SdpaShape shape = sdpaShapeOf(call);
  std::unique_ptr<ShapePlan> &slot = impl_->plans[keyOf(call)];
  if (!slot) {
    // Made aside and kept only when both graphs have a plan.
    auto p = std::make_unique<ShapePlan>();
    p->shape = shape;
    p->grad = call.attentionBackward();
    p->saved = call.attentionReadsLse();
    Status made = Status::ok();
    if (!p->saved)
      made = impl_->makeGraphPlan(shape, false, p->forward);
    if (made && p->grad)
      made = impl_->makeGraphPlan(shape, true, p->backward);
    if (!made) {
      impl_->plans.erase(keyOf(call));
      return made;
    }
    const uint64_t rows =
        static_cast<uint64_t>(shape.batch * shape.heads * shape.seqQ) *
        sizeof(float);
    // attention_grad's O (the result's layout, as the graphs describe it)
    // and Stats, unless given.
    const bool recomputed = p->grad && !p->saved;
    p->outputBytes =
        recomputed
            ? alignScratch(static_cast<uint64_t>(shape.batch * shape.heads *
                                                 shape.seqQ * shape.headDim) *
                           2)
            : 0;
    p->statsOffset = p->outputBytes;
    p->sumOffset =
        p->statsOffset +
        (call.attentionWritesLse() || p->saved ? 0 : alignScratch(rows));
    p->workspaceOffset = p->sumOffset + (p->grad ? alignScratch(rows) : 0);
    int64_t workspace = p->forward ? p->forward->workspace : 0;
    if (p->backward)
      workspace = std::max(workspace, p->backward->workspace);
    p->scratchBytes =
        p->workspaceOffset + alignScratch(static_cast<uint64_t>(workspace));
    slot = std::move(p);
  }
  CallRun &run = impl_->calls[call.index];
  run = CallRun();
  run.plan = slot.get();
  // This call's scale: calls of one shape share the plan, not the scale
  // (GPT-2's scale_attn_by_inverse_layer_idx gives each layer its own).
  run.scale = shape.scale;
  run.negativeInfinity =
      impl_->library->version < kInfinityMask ? -FLT_MAX : -INFINITY;
  scratchBytes = slot->scratchBytes;
  return Status::ok();
}

size_t CudnnAttention::planCount() const { return impl_->plans.size(); }

const void *CudnnAttention::planOf(const KernelCall &call) const {
  auto found = impl_->calls.find(call.index);
  return found == impl_->calls.end() ? nullptr : found->second.plan;
}

void CudnnAttention::release(const KernelCall &call) {
  impl_->calls.erase(call.index);
}

void CudnnAttention::shutdown() { impl_->shutdown(); }

namespace {

/// Builds `set`'s variant packs for a run at `at` (`args`' addresses): the
/// graphs' tensors by unique id, the scalars by their host addresses in `run`.
Status buildPacks(const CudnnLibrary &library, const KernelCall &call,
                  const KernelArgs &args, CallRun &run, const RunAddresses &at,
                  PackSet &set) {
  const ShapePlan &p = *run.plan;
  char *scratch = static_cast<char *>(args.scratch);
  void *workspace = scratch + p.workspaceOffset;
  // The forward: attention's q, k, v -> its result and Stats (attention_lse's
  // log-sum-exps, else scratch); attention_grad's -> O and Stats in scratch,
  // unless it is given them (its last two operands).
  const AttentionTensors t = attentionTensors(call, args);
  void *stats = t.lse.at ? t.lse.at : scratch + p.statsOffset;
  void *output = p.grad && !p.saved ? static_cast<void *>(scratch) : t.o.at;
  std::vector<void *> forward = {t.q.at, t.k.at, t.v.at,
                                 output, stats,  &run.scale};
  std::vector<int64_t> forwardUids = {cudnn::kQ, cudnn::kK,     cudnn::kV,
                                      cudnn::kO, cudnn::kStats, cudnn::kScale};
  std::vector<void *> backward;
  std::vector<int64_t> backwardUids;
  if (p.grad) {
    backward = {t.q.at,     t.k.at,  t.v.at,  output,  t.dO.at,
                stats,      t.dq.at, t.dk.at, t.dv.at, scratch + p.sumOffset,
                &run.scale, &run.one};
    backwardUids = {cudnn::kQ,  cudnn::kK,          cudnn::kV,     cudnn::kO,
                    cudnn::kDO, cudnn::kStats,      cudnn::kDQ,    cudnn::kDK,
                    cudnn::kDV, cudnn::kSoftmaxSum, cudnn::kScale, cudnn::kOne};
  }
  if (p.shape.causal) {
    forward.push_back(&run.negativeInfinity);
    forwardUids.push_back(cudnn::kNegativeInfinity);
    if (p.grad) {
      backward.push_back(&run.negativeInfinity);
      backwardUids.push_back(cudnn::kNegativeInfinity);
    }
  }
  set.builder = std::make_unique<cudnn::Builder>(library);
  set.at = at;
  if (p.forward)
    set.forward =
        cudnn::variantPack(*set.builder, forwardUids, forward, workspace);
  if (p.grad)
    set.backward =
        cudnn::variantPack(*set.builder, backwardUids, backward, workspace);
  return set.builder->status();
}

} // namespace

Status CudnnAttention::run(const KernelCall &call, const KernelArgs &args,
                           bool &taken) {
  taken = false;
  auto found = impl_->calls.find(call.index);
  if (found == impl_->calls.end())
    return Status::ok();
  CallRun &run = found->second;
  const ShapePlan &p = *run.plan;
  if (!attentionTensors(call, args).aligned16())
    return Status::ok();
  if (args.scratchBytes < p.scratchBytes || !args.scratch)
    return Status::error(
        std::string(p.grad ? "attention_grad" : "attention") +
        ": cuDNN's plan needs " + std::to_string(p.scratchBytes) +
        " bytes of scratch, the call has " + std::to_string(args.scratchBytes));
  taken = true;
  RunAddresses at;
  for (size_t i = 0; i < call.operands.size(); ++i)
    at.buffers[i] = args.operands[i];
  for (size_t i = 0; i < call.results.size(); ++i)
    at.buffers[call.operands.size() + i] = args.results[i];
  at.scratch = args.scratch;
  PackSet *packs = nullptr;
  for (PackSet &set : run.packs)
    if (set.at == at)
      packs = &set;
  if (!packs) {
    // New addresses: the first run, or a pooled buffer's other slot.
    PackSet built;
    if (Status s = buildPacks(*impl_->library, call, args, run, at, built); !s)
      return s;
    run.packs.push_back(std::move(built));
    packs = &run.packs.back();
  }
  const CudnnLibrary &lib = *impl_->library;
  if (cudnnStatus_t st = p.forward ? lib.execute(impl_->handle, p.forward->plan,
                                                 packs->forward)
                                   : CUDNN_STATUS_SUCCESS;
      st != CUDNN_STATUS_SUCCESS)
    return Status::error(std::string(p.grad ? "attention_grad" : "attention") +
                         ": cuDNN's forward: " + lib.describe(st));
  if (p.grad)
    if (cudnnStatus_t st =
            lib.execute(impl_->handle, p.backward->plan, packs->backward);
        st != CUDNN_STATUS_SUCCESS)
      return Status::error("attention_grad: cuDNN's backward: " +
                           lib.describe(st));
  return Status::ok();
}
