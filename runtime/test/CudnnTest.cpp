//===- CudnnTest.cpp - cuDNN opened at run time, its graphs built ---------===//
//
// Without a GPU: cuda/CudnnLibrary.cpp finds and opens cuDNN (the toolkit's
// copy, a wheel's place, the override), and cuda/CudnnGraph.cpp builds the
// fused attention's operation graphs for the shapes the CUDA device plans,
// every descriptor finalized by cuDNN itself (which checks each tensor and
// operation as it is finalized). What needs a GPU (the engine heuristics,
// execution plans, runs) is checked by test/gpu/device-check.sh.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"
#include "CudnnGraph.h"
#include "CudnnLibrary.h"
#include "ModelPrograms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace tpcrt;
namespace fs = std::filesystem;

namespace {

constexpr const char *kToolkitCudnn = "/usr/local/cuda/lib64/libcudnn.so.9";

bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A fresh folder, removed with what it holds.
struct TempDir {
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "tpcrt-cudnn-XXXXXX").string();
    if (char *made = mkdtemp(pattern.data()))
      path = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty())
      fs::remove_all(path, ignored);
  }
  std::string path;
};

} // namespace

TEST(CudnnLibrary, VersionStrings) {
  EXPECT_EQ(cudnnVersionString(91900), "9.19.0");
  EXPECT_EQ(cudnnVersionString(90100), "9.1.0");
}

TEST(CudnnLibrary, MissingFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.path + "/nowhere/libcudnn.so.9";
  CudnnLibrary library;
  Status s = openCudnnLibraryAt(path, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), path)) << s.message();
  EXPECT_EQ(library.handle, nullptr);
}

TEST(CudnnLibrary, OverrideIsTheOnlyPlaceTried) {
  TempDir dir;
  LibrarySearch search;
  search.library = dir.path + "/missing/libcudnn.so.9";
  search.fixed = {kToolkitCudnn};
  EXPECT_EQ(libraryCandidates(cudnnWheelLibrary(), search),
            std::vector<std::string>{search.library});
  CudnnLibrary library;
  Status s = findCudnnLibrary(search, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), "TPCRT_CUDNN_LIBRARY=" + search.library))
      << s.message();
  EXPECT_FALSE(contains(s.message(), kToolkitCudnn)) << s.message();
}

TEST(CudnnLibrary, NothingFoundSaysWhatWasTried) {
  TempDir dir;
  LibrarySearch search;
  search.fixed = {dir.path + "/cuda/lib64/libcudnn.so.9"};
  search.sitePackages = {dir.path + "/lib/python3*/site-packages"};
  search.askPython = false;
  CudnnLibrary library;
  Status s = findCudnnLibrary(search, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), search.fixed[0])) << s.message();
  EXPECT_TRUE(contains(s.message(), "no nvidia/cudnn/lib/libcudnn.so.9 in " +
                                        search.sitePackages[0]))
      << s.message();
  EXPECT_TRUE(contains(s.message(), "Set TPCRT_CUDNN_LIBRARY")) << s.message();
  EXPECT_TRUE(contains(s.message(), "nvidia-cudnn-cu13")) << s.message();
}

TEST(CudnnLibrary, EnvironmentSearchOrder) {
  unsetenv("TPCRT_CUDNN_LIBRARY");
  LibrarySearch search = LibrarySearch::fromEnvironment(cudnnWheelLibrary());
  ASSERT_EQ(search.fixed.size(), 2u);
  EXPECT_EQ(search.fixed[0], "libcudnn.so.9");
  EXPECT_EQ(search.fixed[1], kToolkitCudnn);
  EXPECT_FALSE(search.sitePackages.empty());
  setenv("TPCRT_CUDNN_LIBRARY", "/some/libcudnn.so.9", 1);
  EXPECT_EQ(LibrarySearch::fromEnvironment(cudnnWheelLibrary()).library,
            "/some/libcudnn.so.9");
  unsetenv("TPCRT_CUDNN_LIBRARY");
}

TEST(CudnnLibrary, ToolkitCopyResolvesEveryFunction) {
  if (!exists(kToolkitCudnn))
    GTEST_SKIP() << "no " << kToolkitCudnn;
  CudnnLibrary library;
  Status s = openCudnnLibraryAt(kToolkitCudnn, library);
  ASSERT_TRUE(s) << s.message();
#define TPCRT_CUDNN_CHECK(field, name)                                         \
  EXPECT_NE(library.field, nullptr) << #name;
  TPCRT_CUDNN_FUNCTIONS(TPCRT_CUDNN_CHECK)
#undef TPCRT_CUDNN_CHECK
  EXPECT_GE(library.version, kCudnnMinimumVersion);
  EXPECT_EQ(library.getVersion(), library.version);
  EXPECT_STRNE(library.getErrorString(CUDNN_STATUS_BAD_PARAM), "");
}

TEST(CudnnLibrary, SearchFindsAWheelInSitePackages) {
  if (!exists(kToolkitCudnn))
    GTEST_SKIP() << "no " << kToolkitCudnn << " to put in the wheel";
  TempDir dir;
  const std::string lib =
      dir.path + "/venv/lib/python3.99/site-packages/nvidia/cudnn/lib";
  fs::create_directories(lib);
  fs::create_symlink(kToolkitCudnn, lib + "/libcudnn.so.9");
  LibrarySearch search;
  search.sitePackages = {dir.path + "/venv/lib/python3*/site-packages"};
  search.askPython = false;
  CudnnLibrary library;
  Status s = findCudnnLibrary(search, library);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(library.path, lib + "/libcudnn.so.9");
}

namespace {

/// The toolkit's cuDNN, or a skip.
const CudnnLibrary *toolkitCudnn() {
  static CudnnLibrary library;
  static Status opened = exists(kToolkitCudnn)
                             ? openCudnnLibraryAt(kToolkitCudnn, library)
                             : Status::error("no toolkit cuDNN");
  return opened ? &library : nullptr;
}

/// Operation graphs build without a device from cuDNN 9.8 on (the handle
/// attribute is deprecated there).
constexpr size_t kGraphWithoutHandle = 90800;

struct GraphCase {
  const char *name;
  cudnn::SdpaShape shape;
  size_t forwardOps, backwardOps;
};

cudnn::SdpaShape shape(int64_t b, int64_t h, int64_t kv, int64_t sq, int64_t sk,
                       int64_t d, bool seqMajor, bool causal,
                       cudnnDataType_t type = CUDNN_DATA_BFLOAT16) {
  cudnn::SdpaShape s;
  s.batch = b;
  s.heads = h;
  s.kvHeads = kv;
  s.seqQ = sq;
  s.seqK = sk;
  s.headDim = d;
  s.seqMajor = seqMajor;
  s.causal = causal;
  s.dataType = type;
  s.scale = 0.125f;
  return s;
}

/// The forward or backward graph of `shape` built and, where cuDNN builds
/// it without a device, its operation graph finalized: the operation count;
/// `status` the first failure, or ok.
size_t buildGraph(const CudnnLibrary &library, const cudnn::SdpaShape &shape,
                  bool backward, Status &status) {
  cudnn::Builder b(library);
  auto ops = backward ? cudnn::buildSdpaBackward(b, shape)
                      : cudnn::buildSdpaForward(b, shape);
  if (b.ok() && library.version >= kGraphWithoutHandle)
    cudnn::operationGraph(b, ops, nullptr);
  status = b.status();
  return ops.size();
}

} // namespace

/// `s` with q, k and v the parts of one [b, s, 3, heads, d] tensor.
cudnn::SdpaShape packed(cudnn::SdpaShape s) {
  s.packedQkv = true;
  return s;
}

TEST(CudnnGraph, AttentionGraphsFinalize) {
  const CudnnLibrary *library = toolkitCudnn();
  if (!library)
    GTEST_SKIP() << "no " << kToolkitCudnn;
  // Forward: 10 operations, 4 more for the causal mask. Backward: 17, the
  // mask's 4 more, and 2 reductions of dK and dV over a group's heads.
  const GraphCase cases[] = {
      {"gqa seq-major causal", shape(2, 8, 2, 256, 256, 128, true, true), 14,
       23},
      {"mha head-major", shape(3, 4, 4, 200, 200, 64, false, false), 10, 17},
      {"gqa head-major f16 cross",
       shape(1, 6, 3, 48, 80, 64, false, false, CUDNN_DATA_HALF), 10, 19},
      {"mha seq-major causal", shape(2, 16, 16, 2048, 2048, 128, true, true),
       14, 21},
      {"mha packed q, k, v causal", packed(shape(2, 4, 4, 96, 96, 64, true,
                                                 true)),
       14, 21},
  };
  for (const GraphCase &c : cases) {
    SCOPED_TRACE(c.name);
    Status s = Status::ok();
    EXPECT_EQ(buildGraph(*library, c.shape, false, s), c.forwardOps);
    EXPECT_TRUE(s) << s.message();
    EXPECT_EQ(buildGraph(*library, c.shape, true, s), c.backwardOps);
    EXPECT_TRUE(s) << s.message();
  }
}

TEST(CudnnGraph, AFailureNamesTheDescriptorAndCall) {
  const CudnnLibrary *library = toolkitCudnn();
  if (!library)
    GTEST_SKIP() << "no " << kToolkitCudnn;
  cudnn::Builder b(*library);
  // A negative size: cuDNN refuses the tensor.
  b.tensor(cudnn::kQ, {1, 2, 3, -4}, {24, 12, 4, 1}, CUDNN_DATA_BFLOAT16,
           false);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.status().message(), "tensor 1"))
      << b.status().message();
  EXPECT_TRUE(contains(b.status().message(), "CUDNN_STATUS_"))
      << b.status().message();
  // Later calls keep the first failure.
  std::string first = b.status().message();
  b.virtualTensor({1, 1, 1, 1});
  EXPECT_EQ(b.status().message(), first);
}

TEST(CudnnGraph, DimsFollowTheLayout) {
  std::vector<int64_t> dims, strides;
  cudnn::sdpaDims(shape(2, 8, 2, 5, 7, 16, true, false), true, dims, strides);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 2, 7, 16}));
  EXPECT_EQ(strides, (std::vector<int64_t>{7 * 2 * 16, 16, 2 * 16, 1}));
  cudnn::sdpaDims(shape(2, 8, 2, 5, 7, 16, false, false), false, dims, strides);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 8, 5, 16}));
  EXPECT_EQ(strides, (std::vector<int64_t>{8 * 5 * 16, 5 * 16, 16, 1}));
  // Packed: q, k, v rows 3 * heads * d apart; O and dO sequence-major.
  cudnn::SdpaShape p = packed(shape(2, 4, 4, 5, 5, 16, true, false));
  cudnn::sdpaDims(p, true, dims, strides);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 4, 5, 16}));
  EXPECT_EQ(strides, (std::vector<int64_t>{5 * 3 * 4 * 16, 16, 3 * 4 * 16, 1}));
  cudnn::sdpaDims(p, false, dims, strides, /*part=*/false);
  EXPECT_EQ(strides, (std::vector<int64_t>{5 * 4 * 16, 16, 4 * 16, 1}));
}

namespace {

/// An attention call as the decoder makes it: q, k, v (attention_grad: dO
/// first) and the result(s), all of `type`.
KernelCall attentionCall(fb::OpCode op, fb::DType type, int64_t d, bool causal,
                         int64_t sq, int64_t sk) {
  KernelCall call;
  call.op = op;
  call.batch = 2;
  call.heads = 8;
  call.kvHeads = 2;
  call.seqQ = sq;
  call.seqK = sk;
  call.headDim = d;
  call.valueDim = d;
  call.flags = (causal ? 1 : 0) | 2;
  call.floatAttrs = {0.125};
  TensorRef t;
  t.dtype = type;
  const bool grad = op == fb::OpCode::AttentionGrad;
  call.operands.assign(grad ? 4 : 3, t);
  call.results.assign(grad ? 3 : 1, t);
  return call;
}

} // namespace

TEST(CudnnAttention, RefusesWhatItsGraphsDoNotCover) {
  using fb::DType;
  using fb::OpCode;
  EXPECT_EQ(cuda::cudnnAttentionRefusal(attentionCall(
                OpCode::Attention, DType::BF16, 128, true, 256, 256)),
            "");
  EXPECT_EQ(cuda::cudnnAttentionRefusal(attentionCall(
                OpCode::AttentionGrad, DType::F16, 64, false, 48, 80)),
            "");
  auto refusal = [](KernelCall call) {
    return cuda::cudnnAttentionRefusal(call);
  };
  EXPECT_TRUE(contains(
      refusal(attentionCall(OpCode::Attention, DType::F32, 64, false, 8, 8)),
      "fp32"));
  KernelCall dropped =
      attentionCall(OpCode::Attention, DType::BF16, 64, false, 8, 8);
  dropped.dropoutRate = 0.1;
  EXPECT_TRUE(contains(refusal(dropped), "dropout"));
  EXPECT_TRUE(contains(
      refusal(attentionCall(OpCode::Attention, DType::BF16, 60, false, 8, 8)),
      "head_dim 60"));
  EXPECT_TRUE(contains(
      refusal(attentionCall(OpCode::Attention, DType::BF16, 256, false, 8, 8)),
      "head_dim 256"));
  EXPECT_TRUE(contains(refusal(attentionCall(OpCode::AttentionGrad, DType::BF16,
                                             64, true, 8, 12)),
                       "s_q 8 != s_k 12"));
  KernelCall mixed =
      attentionCall(OpCode::AttentionGrad, DType::BF16, 64, false, 8, 8);
  mixed.results[0].dtype = DType::F32;
  EXPECT_TRUE(contains(refusal(mixed), "results"));
  KernelCall otherDim =
      attentionCall(OpCode::Attention, DType::BF16, 64, false, 8, 8);
  otherDim.valueDim = 32;
  EXPECT_TRUE(contains(refusal(otherDim), "value_dim 32"));
  EXPECT_TRUE(contains(
      refusal(attentionCall(OpCode::Softmax, DType::BF16, 64, false, 8, 8)),
      "not an attention kernel"));
}

TEST(CudnnAttention, TakesTheLogSumExpForms) {
  using fb::DType;
  using fb::OpCode;
  TensorRef rows; // the log-sum-exps: f32, cuDNN's Stats
  rows.dtype = DType::F32;
  KernelCall forward =
      attentionCall(OpCode::Attention, DType::BF16, 64, true, 8, 8);
  forward.op = OpCode::AttentionLse;
  forward.results.push_back(rows);
  EXPECT_EQ(cuda::cudnnAttentionRefusal(forward), "");
  KernelCall saved =
      attentionCall(OpCode::AttentionGrad, DType::BF16, 64, true, 8, 8);
  saved.operands.push_back(saved.operands[0]); // the forward's output
  saved.operands.push_back(rows);
  EXPECT_TRUE(saved.attentionReadsLse());
  EXPECT_EQ(cuda::cudnnAttentionRefusal(saved), "");
  // The other operands are still one 16-bit type.
  saved.operands[4].dtype = DType::F32;
  EXPECT_TRUE(contains(cuda::cudnnAttentionRefusal(saved), "operands"));
  // A forward's other result is.
  forward.results[0].dtype = DType::F32;
  EXPECT_TRUE(contains(cuda::cudnnAttentionRefusal(forward), "results"));
}

TEST(CudnnAttention, WithoutADeviceInitSaysWhy) {
  if (!toolkitCudnn())
    GTEST_SKIP() << "no " << kToolkitCudnn;
  cuda::CudnnAttention attention;
  Status s = attention.init(nullptr);
  if (s)
    GTEST_SKIP() << "a CUDA device is present: cuDNN made a handle";
  EXPECT_TRUE(contains(s.message(), "cudnnCreate")) << s.message();
  EXPECT_TRUE(contains(s.message(), "CUDNN_STATUS_")) << s.message();
  // Nothing is planned without a handle.
  uint64_t bytes = 0;
  EXPECT_FALSE(attention.plan(
      attentionCall(fb::OpCode::Attention, fb::DType::BF16, 64, false, 8, 8),
      bytes));
  EXPECT_EQ(attention.planCount(), 0u);
}

TEST(CudnnGraph, VariantPacksFinalize) {
  const CudnnLibrary *library = toolkitCudnn();
  if (!library)
    GTEST_SKIP() << "no " << kToolkitCudnn;
  cudnn::Builder b(*library);
  float scale = 0.125f;
  // Addresses are only recorded (never read) until a plan executes.
  std::vector<void *> pointers = {reinterpret_cast<void *>(0x10000),
                                  reinterpret_cast<void *>(0x20000), &scale};
  cudnn::variantPack(b, {cudnn::kQ, cudnn::kK, cudnn::kScale}, pointers,
                     reinterpret_cast<void *>(0x30000));
  EXPECT_TRUE(b.ok()) << b.status().message();
}

TEST(CudnnAttention, VersionsWithKnownBugsAreRefused) {
  using fb::DType;
  using fb::OpCode;
  KernelCall forward =
      attentionCall(OpCode::Attention, DType::BF16, 64, true, 32, 32);
  KernelCall backward =
      attentionCall(OpCode::AttentionGrad, DType::BF16, 64, true, 32, 32);
  KernelCall backward256 =
      attentionCall(OpCode::AttentionGrad, DType::BF16, 64, true, 256, 256);
  EXPECT_TRUE(contains(cuda::cudnnVersionRefusal(forward, 91000), "9.10.0"));
  EXPECT_TRUE(contains(cuda::cudnnVersionRefusal(backward, 91001), "9.10.1"));
  EXPECT_EQ(cuda::cudnnVersionRefusal(forward, 91400), "");
  EXPECT_TRUE(contains(cuda::cudnnVersionRefusal(backward, 91500),
                       "s_k 32 (not a multiple of 128) on cuDNN 9.15.0"));
  EXPECT_EQ(cuda::cudnnVersionRefusal(backward256, 91500), "");
  EXPECT_EQ(cuda::cudnnVersionRefusal(backward, 91501), "");
  EXPECT_EQ(cuda::cudnnVersionRefusal(backward, 91900), "");
}

// Disabled unless runtime.CudnnModels runs it with TPCRT_GEMM_SPEC_MODELS
// (runtime/test/gemm_spec_models.sh): in compiled models, which attention
// kernels cuDNN's fused attention takes (bf16 without dropout: all; with
// dropout or in fp32: none, saying why), and the graphs of each taken
// call's shape, built and finalized as far as cuDNN goes without a GPU.
TEST(CudnnAttention, DISABLED_ModelAttentionGraphs) {
  const CudnnLibrary *library = toolkitCudnn();
  if (!library)
    GTEST_SKIP() << "no " << kToolkitCudnn;
  size_t models = 0;
  test::forEachModel([&](const std::string &path, const Program &program) {
    const bool bf16 = contains(path, "bf16");
    const bool dropout = !contains(path, "nodrop") && contains(path, "gpt2");
    size_t attention = 0, taken = 0, graphs = 0;
    for (const KernelCall &call : program.calls) {
      if (!call.attentionForward() && !call.attentionBackward())
        continue;
      ++attention;
      SCOPED_TRACE("kernel " + std::to_string(call.index));
      std::string why = cuda::cudnnAttentionRefusal(call);
      if (dropout) {
        EXPECT_TRUE(contains(why, "dropout")) << why;
      } else if (!bf16) {
        EXPECT_TRUE(contains(why, "fp32")) << why;
      } else {
        EXPECT_EQ(why, "");
      }
      if (!why.empty())
        continue;
      ++taken;
      cudnn::SdpaShape shape = cuda::sdpaShapeOf(call);
      EXPECT_EQ(shape.dataType, CUDNN_DATA_BFLOAT16);
      EXPECT_FLOAT_EQ(shape.scale,
                      static_cast<float>(1.0 / std::sqrt(shape.headDim)));
      // The projections' layout (tpc-fold-attention-transposes); GPT-2's
      // q, k and v where c_attn wrote them (rt-pack-attention-qkv).
      EXPECT_TRUE(shape.seqMajor);
      EXPECT_EQ(shape.packedQkv, contains(path, "gpt2"));
      EXPECT_TRUE(shape.causal);
      Status built = Status::ok();
      buildGraph(*library, shape, call.attentionBackward(), built);
      EXPECT_TRUE(built) << built.message();
      graphs += bool(built);
    }
    std::printf("%s: cuDNN takes %zu of %zu attention kernels, %zu graphs "
                "built\n",
                path.c_str(), taken, attention, graphs);
    // Llama's unfused import has no attention kernel.
    if (!contains(path, "llama.tpcx")) {
      EXPECT_GT(attention, 0u);
    }
    ++models;
  });
  EXPECT_GT(models, 0u);
}
