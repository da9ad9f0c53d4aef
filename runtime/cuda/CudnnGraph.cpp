//===- CudnnGraph.cpp - cuDNN's fused attention as backend graphs ---------===//

#include "CudnnGraph.h"

using namespace tpcrt;
using namespace tpcrt::cudnn;

//===- Builder ------------------------------------------------------------===//

Builder::~Builder() {
  // Dependents first: a descriptor may refer to those made before it.
  for (size_t i = owned_.size(); i-- > 0;)
    library_.destroyDescriptor(owned_[i]);
}

Builder::Builder(Builder &&other) noexcept
    : library_(other.library_), owned_(std::move(other.owned_)),
      names_(std::move(other.names_)), status_(other.status_),
      nextVirtual_(other.nextVirtual_) {
  other.owned_.clear();
}

void Builder::fail(cudnnStatus_t status, const std::string &doing) {
  if (status_)
    status_ =
        Status::error("cuDNN: " + doing + ": " + library_.describe(status));
}

void Builder::failWith(const std::string &message) {
  if (status_)
    status_ = Status::error("cuDNN: " + message);
}

cudnnBackendDescriptor_t Builder::make(cudnnBackendDescriptorType_t type,
                                       const std::string &what) {
  if (!status_)
    return nullptr;
  cudnnBackendDescriptor_t d = nullptr;
  if (cudnnStatus_t st = library_.createDescriptor(type, &d);
      st != CUDNN_STATUS_SUCCESS) {
    fail(st, "creating the descriptor of " + what);
    return nullptr;
  }
  owned_.push_back(d);
  names_.push_back(what);
  return d;
}

namespace {
/// The name `make` gave `d`.
std::string nameOf(const std::vector<cudnnBackendDescriptor_t> &owned,
                   const std::vector<std::string> &names,
                   cudnnBackendDescriptor_t d) {
  for (size_t i = owned.size(); i-- > 0;)
    if (owned[i] == d)
      return names[i];
  return "a descriptor";
}
} // namespace

void Builder::set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t count,
                  const void *values, const char *nameText) {
  if (!status_ || !d)
    return;
  if (cudnnStatus_t st = library_.setAttribute(d, name, type, count, values);
      st != CUDNN_STATUS_SUCCESS)
    fail(st, "setting " + std::string(nameText) + " of " +
                 nameOf(owned_, names_, d));
}

void Builder::finalize(cudnnBackendDescriptor_t d) {
  if (!status_ || !d)
    return;
  if (cudnnStatus_t st = library_.finalize(d); st != CUDNN_STATUS_SUCCESS)
    fail(st, "finalizing " + nameOf(owned_, names_, d));
}

Status Builder::tryFinalize(cudnnBackendDescriptor_t d) {
  if (!status_)
    return status_;
  if (cudnnStatus_t st = library_.finalize(d); st != CUDNN_STATUS_SUCCESS)
    return Status::error("finalizing " + nameOf(owned_, names_, d) + ": " +
                         library_.describe(st));
  return Status::ok();
}

void Builder::get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t requested,
                  int64_t *count, void *values, const char *nameText) {
  if (!status_ || !d)
    return;
  if (cudnnStatus_t st =
          library_.getAttribute(d, name, type, requested, count, values);
      st != CUDNN_STATUS_SUCCESS)
    fail(st, "reading " + std::string(nameText) + " of " +
                 nameOf(owned_, names_, d));
}

cudnnBackendDescriptor_t Builder::tensor(int64_t uid,
                                         const std::vector<int64_t> &dims,
                                         const std::vector<int64_t> &strides,
                                         cudnnDataType_t type, bool isVirtual,
                                         bool byValue) {
  cudnnBackendDescriptor_t t =
      make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor " + std::to_string(uid));
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t alignment = 16;
  TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE,
                  1, &type);
  TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                  rank, dims.data());
  TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank,
                  strides.data());
  TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                  &uid);
  TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
                  1, &alignment);
  if (isVirtual) {
    bool yes = true;
    TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN,
                    1, &yes);
  }
  if (byValue) {
    bool yes = true;
    TPCRT_CUDNN_SET(*this, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN,
                    1, &yes);
  }
  finalize(t);
  return t;
}

namespace {
/// Dense row-major strides of `dims`.
std::vector<int64_t> packedStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}
} // namespace

cudnnBackendDescriptor_t
Builder::virtualTensor(const std::vector<int64_t> &dims,
                       const std::vector<int64_t> &strides,
                       cudnnDataType_t type) {
  return tensor(nextVirtual_++, dims,
                strides.empty() ? packedStrides(dims) : strides, type, true);
}

//===- Operations ---------------------------------------------------------===//

namespace {

using Desc = cudnnBackendDescriptor_t;
using Dims = std::vector<int64_t>;

/// dims and strides with the last two swapped: the transposed view of the
/// same memory.
void swapLastTwo(Dims &dims, Dims &strides) {
  std::swap(dims[2], dims[3]);
  std::swap(strides[2], strides[3]);
}

/// The graph under construction: the builder, the operations made so far
/// and the shapes every SDPA graph uses.
struct Graph {
  Builder &b;
  const SdpaShape &s;
  std::vector<Desc> ops;

  /// [b, h, s_q, s_k]: the scores; [b, h, s_q, 1]: a row's statistic.
  Dims scores() const { return {s.batch, s.heads, s.seqQ, s.seqK}; }
  Dims rows() const { return {s.batch, s.heads, s.seqQ, 1}; }

  Desc fp32(const Dims &dims) { return b.virtualTensor(dims); }
  Desc virtualOf(const Dims &dims, const Dims &strides, cudnnDataType_t t) {
    return b.virtualTensor(dims, strides, t);
  }

  /// A by-value fp32 scalar [1, 1, 1, 1] (its value is passed at run time).
  Desc scalar(int64_t id) {
    return b.tensor(id, {1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false,
                    true);
  }

  void add(Desc op) {
    b.finalize(op);
    ops.push_back(op);
  }

  /// y = mode(x[, other[, select]]), in fp32 (booleans for comparisons).
  Desc pointwise(cudnnPointwiseMode_t mode, Desc x, Desc y,
                 Desc other = nullptr, Desc select = nullptr,
                 cudnnDataType_t precision = CUDNN_DATA_FLOAT,
                 int64_t axis = -1) {
    Desc pw = b.make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "a pointwise mode");
    TPCRT_CUDNN_SET(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE,
                    1, &mode);
    TPCRT_CUDNN_SET(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE,
                    1, &precision);
    if (axis >= 0)
      TPCRT_CUDNN_SET(b, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1,
                      &axis);
    b.finalize(pw);
    Desc op = b.make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                     "a pointwise operation");
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (other)
      TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, other);
    if (select)
      TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, select);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    float one = 1.0f;
    TPCRT_CUDNN_SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1,
                    CUDNN_TYPE_FLOAT, 1, &one);
    TPCRT_CUDNN_SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2,
                    CUDNN_TYPE_FLOAT, 1, &one);
    add(op);
    return y;
  }

  /// c = a b (batched over the leading dims; b's heads broadcast).
  Desc matmul(Desc a, Desc bT, Desc c) {
    Desc mm = b.make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "a matmul");
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    TPCRT_CUDNN_SET(b, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                    &compute);
    b.finalize(mm);
    Desc op =
        b.make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "a matmul operation");
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, bT);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    add(op);
    return c;
  }

  /// y = reduce(x) over the dims where y has size 1.
  Desc reduce(cudnnReduceTensorOp_t mode, Desc x, Desc y) {
    Desc red = b.make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "a reduction");
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    TPCRT_CUDNN_SET(b, red, CUDNN_ATTR_REDUCTION_COMP_TYPE,
                    CUDNN_TYPE_DATA_TYPE, 1, &compute);
    TPCRT_CUDNN_SET(b, red, CUDNN_ATTR_REDUCTION_OPERATOR,
                    CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    b.finalize(red);
    Desc op = b.make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                     "a reduction operation");
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    add(op);
    return y;
  }

  /// y: x's values seen through y's dims, strides and type.
  Desc reshape(Desc x, Desc y) {
    Desc op = b.make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
                     "a reshape operation");
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    TPCRT_CUDNN_LINK(b, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    add(op);
    return y;
  }

  /// The causal mask on `scores` (keys after the query set to the
  /// by-value -inf `ninf`): top-left, which is the kernels' bottom-right
  /// alignment when s_q == s_k (the only causal case planned).
  Desc causalMask(Desc scores, Desc ninf) {
    Desc col = virtualOf(this->scores(), packedStrides(this->scores()),
                         CUDNN_DATA_INT32);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, col, nullptr, nullptr,
              CUDNN_DATA_FLOAT, 3);
    Desc row = virtualOf(this->scores(), packedStrides(this->scores()),
                         CUDNN_DATA_INT32);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, row, nullptr, nullptr,
              CUDNN_DATA_FLOAT, 2);
    Desc keep = virtualOf(this->scores(), packedStrides(this->scores()),
                          CUDNN_DATA_BOOLEAN);
    pointwise(CUDNN_POINTWISE_CMP_GE, row, keep, col, nullptr,
              CUDNN_DATA_BOOLEAN);
    return pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores,
                     fp32(this->scores()), ninf, keep);
  }

  /// The user tensors: Q-like (heads, s_q) or K-like (kvHeads, s_k), as
  /// given or transposed in their last two dims.
  Desc io(int64_t id, bool keys, bool transposed = false) {
    Dims dims, strides;
    sdpaDims(s, keys, dims, strides, id != kO && id != kDO);
    if (transposed)
      swapLastTwo(dims, strides);
    return b.tensor(id, dims, strides, s.dataType, false);
  }
  Desc stats() {
    return b.tensor(kStats, rows(), packedStrides(rows()), CUDNN_DATA_FLOAT,
                    false);
  }
};

} // namespace

void cudnn::sdpaDims(const SdpaShape &shape, bool keys, Dims &dims,
                     Dims &strides, bool part) {
  const int64_t heads = keys ? shape.kvHeads : shape.heads;
  const int64_t seq = keys ? shape.seqK : shape.seqQ;
  const int64_t d = shape.headDim;
  dims = {shape.batch, heads, seq, d};
  const int64_t row = (shape.packedQkv && part ? 3 : 1) * heads * d;
  if (shape.seqMajor || shape.packedQkv)
    strides = {seq * row, d, row, 1};
  else
    strides = {heads * seq * d, seq * d, d, 1};
}

std::vector<Desc> cudnn::buildSdpaForward(Builder &b, const SdpaShape &s) {
  Graph g{b, s, {}};
  Desc q = g.io(kQ, false), kT = g.io(kK, true, true), v = g.io(kV, true);
  Desc o = g.io(kO, false);
  Desc scale = g.scalar(kScale);
  Desc scores = g.matmul(q, kT, g.fp32(g.scores()));
  scores = g.pointwise(CUDNN_POINTWISE_MUL, scores, g.fp32(g.scores()), scale);
  if (s.causal)
    scores = g.causalMask(scores, g.scalar(kNegativeInfinity));
  Desc max = g.reduce(CUDNN_REDUCE_TENSOR_MAX, scores, g.fp32(g.rows()));
  Desc shifted =
      g.pointwise(CUDNN_POINTWISE_SUB, scores, g.fp32(g.scores()), max);
  Desc exps = g.pointwise(CUDNN_POINTWISE_EXP, shifted, g.fp32(g.scores()));
  Desc sum = g.reduce(CUDNN_REDUCE_TENSOR_ADD, exps, g.fp32(g.rows()));
  Desc logSum = g.pointwise(CUDNN_POINTWISE_LOG, sum, g.fp32(g.rows()));
  g.pointwise(CUDNN_POINTWISE_ADD, max, g.stats(), logSum);
  // P in the 16-bit type: the second matmul's operand.
  Desc p = g.virtualOf(g.scores(), packedStrides(g.scores()), s.dataType);
  g.pointwise(CUDNN_POINTWISE_DIV, exps, p, sum);
  g.matmul(p, v, o);
  return g.ops;
}

std::vector<Desc> cudnn::buildSdpaBackward(Builder &b, const SdpaShape &s) {
  Graph g{b, s, {}};
  Desc q = g.io(kQ, false), kT = g.io(kK, true, true);
  Desc vT = g.io(kV, true, true), o = g.io(kO, false), dO = g.io(kDO, false);
  Desc dQ = g.io(kDQ, false), dK = g.io(kDK, true), dV = g.io(kDV, true);
  Desc stats = g.stats();
  Desc scale = g.scalar(kScale), one = g.scalar(kOne);
  const bool grouped = s.kvHeads != s.heads;
  const Dims full = {s.batch, s.heads, s.seqK, s.headDim};
  const Dims transposedScores = {s.batch, s.heads, s.seqK, s.seqQ};
  Dims transposedStrides = packedStrides(g.scores());
  std::swap(transposedStrides[2], transposedStrides[3]);

  // softmax_sum = rowsum(dO * O), kept in the workspace. The product's
  // strides are the ones cudnn-frontend gives it (dO's row stride), so
  // that the graph is the one cuDNN's engines are made to recognize.
  Dims rowsDims, rowsStrides;
  sdpaDims(s, false, rowsDims, rowsStrides);
  Desc dOO = g.pointwise(CUDNN_POINTWISE_MUL, dO,
                         g.virtualOf(rowsDims,
                                     {s.heads * s.seqQ * s.headDim,
                                      s.seqQ * s.headDim, rowsStrides[2], 1},
                                     CUDNN_DATA_FLOAT),
                         o);
  Desc dot = g.reduce(CUDNN_REDUCE_TENSOR_ADD, dOO, g.fp32(g.rows()));
  Desc softmaxSum = b.tensor(kSoftmaxSum, g.rows(), packedStrides(g.rows()),
                             CUDNN_DATA_FLOAT, false);
  g.pointwise(CUDNN_POINTWISE_MUL, dot, softmaxSum, one);

  // P = exp(scale * Q K^T - Stats), masked.
  Desc scores = g.matmul(q, kT, g.fp32(g.scores()));
  scores = g.pointwise(CUDNN_POINTWISE_MUL, scores, g.fp32(g.scores()), scale);
  scores = g.pointwise(CUDNN_POINTWISE_SUB, scores, g.fp32(g.scores()), stats);
  if (s.causal)
    scores = g.causalMask(scores, g.scalar(kNegativeInfinity));
  Desc p = g.pointwise(CUDNN_POINTWISE_EXP, scores, g.fp32(g.scores()));

  // A key-side gradient: `scoresLike` transposed (in the 16-bit type)
  // times `rows`, summed over a group's query heads into `out`.
  auto keyGradient = [&](Desc scoresLike, Desc rows, Desc out) {
    Desc transposed =
        g.reshape(scoresLike,
                  g.virtualOf(transposedScores, transposedStrides, s.dataType));
    if (!grouped) {
      g.matmul(transposed, rows, out);
      return;
    }
    Desc perHead = g.matmul(transposed, rows,
                            g.virtualOf(full, packedStrides(full), s.dataType));
    g.reduce(CUDNN_REDUCE_TENSOR_ADD, perHead, out);
  };

  // dV = P^T dO.
  keyGradient(p, dO, dV);

  // dS = P * (dO V^T - softmax_sum) * scale.
  Desc dP = g.matmul(dO, vT, g.fp32(g.scores()));
  Desc centered =
      g.pointwise(CUDNN_POINTWISE_SUB, dP, g.fp32(g.scores()), softmaxSum);
  Desc weighted =
      g.pointwise(CUDNN_POINTWISE_MUL, centered, g.fp32(g.scores()), p);
  Desc dS =
      g.pointwise(CUDNN_POINTWISE_MUL, weighted, g.fp32(g.scores()), scale);

  // dK = dS^T Q.
  keyGradient(dS, q, dK);

  // dQ = dS K, straight into dQ: the deterministic form (no fp32
  // accumulator that blocks add into in any order).
  Dims kDims, kStrides;
  sdpaDims(s, true, kDims, kStrides);
  Desc kRows = g.reshape(kT, g.virtualOf(kDims, kStrides, CUDNN_DATA_FLOAT));
  g.matmul(dS, kRows, dQ);
  return g.ops;
}

Desc cudnn::operationGraph(Builder &b, const std::vector<Desc> &ops,
                           cudnnHandle_t handle) {
  Desc graph =
      b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the operation graph");
  if (handle)
    TPCRT_CUDNN_SET(b, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                    CUDNN_TYPE_HANDLE, 1, &handle);
  TPCRT_CUDNN_SET(b, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  static_cast<int64_t>(ops.size()), ops.data());
  b.finalize(graph);
  return graph;
}

Desc cudnn::executionPlan(Builder &b, Desc graph, cudnnHandle_t handle,
                          int64_t &workspace) {
  Desc heuristics =
      b.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "the engine heuristics");
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  TPCRT_CUDNN_LINK(b, heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  TPCRT_CUDNN_SET(b, heuristics, CUDNN_ATTR_ENGINEHEUR_MODE,
                  CUDNN_TYPE_HEUR_MODE, 1, &mode);
  b.finalize(heuristics);
  int64_t count = 0;
  TPCRT_CUDNN_GET(b, heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (!b.ok())
    return nullptr;
  if (count <= 0) {
    b.failWith("cuDNN has no engine for this attention graph");
    return nullptr;
  }
  std::vector<Desc> configs;
  for (int64_t i = 0; i < count; ++i)
    configs.push_back(b.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                             "engine configuration " + std::to_string(i)));
  int64_t got = 0;
  TPCRT_CUDNN_GET(b, heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, configs.data());
  if (!b.ok())
    return nullptr;
  std::string refusals;
  for (int64_t i = 0; i < got && i < count; ++i) {
    Desc plan =
        b.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
               "the execution plan of configuration " + std::to_string(i));
    // Required before cuDNN 9.8, ignored after (deprecated).
    TPCRT_CUDNN_SET(b, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                    CUDNN_TYPE_HANDLE, 1, &handle);
    TPCRT_CUDNN_LINK(b, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                     configs[i]);
    if (!b.ok())
      return nullptr;
    Status s = b.tryFinalize(plan);
    if (!s) {
      refusals += (refusals.empty() ? "" : "; ") + s.message();
      continue;
    }
    TPCRT_CUDNN_GET(b, plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                    CUDNN_TYPE_INT64, 1, &count, &workspace);
    return b.ok() ? plan : nullptr;
  }
  b.failWith("no engine configuration of " + std::to_string(got) +
             " builds a plan: " + refusals);
  return nullptr;
}

Desc cudnn::variantPack(Builder &b, const std::vector<int64_t> &uids,
                        const std::vector<void *> &pointers, void *workspace) {
  Desc pack = b.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "a variant pack");
  TPCRT_CUDNN_SET(b, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                  static_cast<int64_t>(uids.size()), uids.data());
  TPCRT_CUDNN_SET(b, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                  CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
                  pointers.data());
  TPCRT_CUDNN_SET(b, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                  CUDNN_TYPE_VOID_PTR, 1, &workspace);
  b.finalize(pack);
  return pack;
}
