//===- CudnnGraph.h - cuDNN's fused attention as backend graphs -*- C++ -*-===//
//
// The graphs the CUDA device hands cuDNN for attention and attention_grad
// (CudnnAttention.h runs them), written against the graph ("backend") C API
// as the cudnn-frontend library lowers its sdpa and sdpa_backward nodes, so
// that cuDNN's fused flash-attention engines recognize them:
//
//   forward:  S = scale * (Q K^T) [causal: key j > query i set to -inf],
//             Stats = max + log(sum exp(S - max)) per row,
//             O = (exp(S - Stats)) V;
//   backward: from Q, K, V, O, dO and Stats, dQ, dK and dV.
//
// Tensors are 4-d [b, heads, s, d] in dims; their strides say where the
// heads lie (head-major [b, heads, s, d] or sequence-major [b, s, heads, d]
// memory, tpcrt/AttentionRows.h), so no layout needs a copy. K and V have
// kvHeads heads (grouped-query attention).
//
// Building needs no GPU: every descriptor is finalized as it is made, and
// cuDNN checks each then. The engine heuristics and execution plans need
// one (CudnnAttention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDNNGRAPH_H
#define TPCRT_CUDA_CUDNNGRAPH_H

#include "CudnnLibrary.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt::cudnn {

/// One attention problem, as the kernel call gives it.
struct SdpaShape {
  int64_t batch = 0, heads = 0, kvHeads = 0, seqQ = 0, seqK = 0, headDim = 0;
  /// [b, s, heads, d] memory instead of [b, heads, s, d].
  bool seqMajor = false;
  /// Q, K, V, dQ, dK and dV the parts of [b, s, 3, heads, d] (seqMajor
  /// too; O and dO [b, s, heads, d]).
  bool packedQkv = false;
  bool causal = false;
  /// CUDNN_DATA_BFLOAT16 or CUDNN_DATA_HALF: Q, K, V, O (and dO, dQ, dK, dV).
  cudnnDataType_t dataType = CUDNN_DATA_BFLOAT16;
  float scale = 1.0f;
};

/// The unique ids of the graphs' tensors in the variant pack.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kDO,
  kDQ,
  kDK,
  kDV,
  /// By-value scalars: 1 and the masked scores' value.
  kOne,
  kNegativeInfinity,
  /// The backward's rowsum(dO * O) [b, heads, s_q, 1] fp32, in the
  /// workspace.
  kSoftmaxSum,
  // Intermediates (virtual) start here.
  kFirstVirtual = 100,
};

/// Owns backend descriptors and keeps the first failure, so that a graph is
/// built as straight-line code and checked once at the end.
class Builder {
public:
  explicit Builder(const CudnnLibrary &library) : library_(library) {}
  ~Builder();
  Builder(Builder &&other) noexcept;
  Builder(const Builder &) = delete;
  Builder &operator=(const Builder &) = delete;
  Builder &operator=(Builder &&) = delete;

  /// A new descriptor of `type` (null after a failure); `what` names it in
  /// errors. It lives as long as the builder.
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type,
                                const std::string &what);
  /// Sets attribute `name` of `d` (`nameText` in errors).
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void *values,
           const char *nameText);
  void finalize(cudnnBackendDescriptor_t d);
  /// Finalizes `d`, returning cuDNN's refusal instead of keeping it (for
  /// trying alternatives: the engine configurations).
  Status tryFinalize(cudnnBackendDescriptor_t d);
  /// Reads attribute `name` of `d`: up to `requested` values, `count` set
  /// to how many there are.
  void get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
           void *values, const char *nameText);

  /// A finalized tensor descriptor.
  cudnnBackendDescriptor_t tensor(int64_t uid, const std::vector<int64_t> &dims,
                                  const std::vector<int64_t> &strides,
                                  cudnnDataType_t type, bool isVirtual,
                                  bool byValue = false);
  /// A new virtual tensor of `dims` (strides: packed row-major when
  /// empty), with the next free unique id.
  cudnnBackendDescriptor_t
  virtualTensor(const std::vector<int64_t> &dims,
                const std::vector<int64_t> &strides = {},
                cudnnDataType_t type = CUDNN_DATA_FLOAT);

  /// Records a failure of the caller's own (kept if it is the first).
  void failWith(const std::string &message);

  /// The first failure (which descriptor, which call, cuDNN's message), or
  /// ok.
  const Status &status() const { return status_; }
  bool ok() const { return bool(status_); }
  const CudnnLibrary &library() const { return library_; }

private:
  void fail(cudnnStatus_t status, const std::string &doing);

  const CudnnLibrary &library_;
  std::vector<cudnnBackendDescriptor_t> owned_;
  std::vector<std::string> names_;
  Status status_ = Status::ok();
  int64_t nextVirtual_ = kFirstVirtual;
};

#define TPCRT_CUDNN_SET(builder, d, name, type, count, values)                 \
  (builder).set((d), (name), (type), (count), (values), #name)
/// Sets a descriptor-valued attribute (`value` another descriptor).
#define TPCRT_CUDNN_LINK(builder, d, name, value)                              \
  do {                                                                         \
    cudnnBackendDescriptor_t linked = (value);                                 \
    (builder).set((d), (name), CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &linked,      \
                  #name);                                                      \
  } while (false)
#define TPCRT_CUDNN_GET(builder, d, name, type, requested, count, values)      \
  (builder).get((d), (name), (type), (requested), (count), (values), #name)

/// The operations of the forward graph, finalized, in order (O and Stats
/// are outputs). Operation graph, heuristics and plan: CudnnAttention.cpp.
std::vector<cudnnBackendDescriptor_t> buildSdpaForward(Builder &b,
                                                       const SdpaShape &s);
/// The operations of the backward graph (inputs Q, K, V, O, dO, Stats;
/// outputs dQ, dK, dV).
std::vector<cudnnBackendDescriptor_t> buildSdpaBackward(Builder &b,
                                                        const SdpaShape &s);

/// Q's (and O's, dO's, dQ's) or K's (V's, dK's, dV's) dims [b, h, s, d] and
/// strides for `shape`'s layout; `part`: a tensor of q, k, v or their
/// gradients (packedQkv: every row 3 * heads * d from the next).
void sdpaDims(const SdpaShape &shape, bool keys, std::vector<int64_t> &dims,
              std::vector<int64_t> &strides, bool part = true);

/// An operation graph of `ops`; with a handle when given (cuDNN before
/// 9.? requires one; newer ones build it without a device).
cudnnBackendDescriptor_t
operationGraph(Builder &b, const std::vector<cudnnBackendDescriptor_t> &ops,
               cudnnHandle_t handle);

/// An execution plan of `graph` (finalized): the engine heuristics' (mode
/// A) configurations in order, the first whose plan finalizes; `workspace`
/// its bytes of workspace. Needs a GPU. An error lists each refusal.
cudnnBackendDescriptor_t executionPlan(Builder &b,
                                       cudnnBackendDescriptor_t graph,
                                       cudnnHandle_t handle,
                                       int64_t &workspace);

/// A variant pack (finalized): `uids[i]` at `pointers[i]` (device memory;
/// a by-value scalar's is the address of a host float that lives as long
/// as the pack), and the workspace.
cudnnBackendDescriptor_t variantPack(Builder &b,
                                     const std::vector<int64_t> &uids,
                                     const std::vector<void *> &pointers,
                                     void *workspace);

} // namespace tpcrt::cudnn

#endif // TPCRT_CUDA_CUDNNGRAPH_H
