#include "tpcrt/Executable.h"
#include "TestExecutables.h"
#include "tpcrt/Program.h"

#include "gtest/gtest.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

/// A small, valid executable: embedding -> linear -> cross_entropy ->
/// loss_mean over 9 buffers in a 4096-byte arena.
fb::ExecutableT validExecutable() {
  fb::ExecutableT exe;
  exe.schema_version = kExecutableSchemaVersion;
  auto axis = std::make_unique<fb::MeshAxisT>();
  axis->name = "dp";
  axis->size = 1;
  exe.mesh.push_back(std::move(axis));
  exe.arena_bytes = 4096;
  exe.buffers.push_back(makeBuffer(0, fb::DType::F32, {16, 8}));       // 0 wte
  exe.buffers.push_back(makeBuffer(512, fb::DType::I64, {2, 4}));      // 1 ids
  exe.buffers.push_back(makeBuffer(576, fb::DType::F32, {2, 4, 8}));   // 2 h
  exe.buffers.push_back(makeBuffer(832, fb::DType::F32, {8, 16}));     // 3 w
  exe.buffers.push_back(makeBuffer(1344, fb::DType::F32, {2, 4, 16})); // 4
  exe.buffers.push_back(makeBuffer(1856, fb::DType::I64, {2, 4})); // 5 labels
  exe.buffers.push_back(makeBuffer(1920, fb::DType::F32, {}));     // 6 sum
  exe.buffers.push_back(makeBuffer(1928, fb::DType::I64, {}));     // 7 count
  exe.buffers.push_back(makeBuffer(1936, fb::DType::F32, {}));     // 8 loss

  auto wte = std::make_unique<fb::ParamT>();
  wte->hf_name = "transformer.wte.weight";
  wte->hf_shape = {16, 8};
  wte->view_shape = {16, 8};
  wte->buffer = 0;
  exe.params.push_back(std::move(wte));
  auto head = std::make_unique<fb::ParamT>();
  head->hf_name = "lm_head.weight";
  head->hf_shape = {128};
  head->view_shape = {8, 16};
  head->buffer = 3;
  exe.params.push_back(std::move(head));

  exe.inputs.push_back(makeBinding("input_ids", 1));
  exe.inputs.push_back(makeBinding("labels", 5));
  exe.outputs.push_back(makeBinding("loss", 8));

  exe.kernels.push_back(makeKernel(fb::OpCode::Embedding, {0, 1}, {2}));
  exe.kernels.push_back(makeKernel(fb::OpCode::Linear, {2, 3}, {4}));
  exe.kernels.push_back(makeKernel(fb::OpCode::CrossEntropy, {4, 5}, {6, 7}));
  exe.kernels.back()->int_attrs = {-100};
  exe.kernels.push_back(makeKernel(fb::OpCode::LossMean, {6, 7}, {8}));
  exe.planned_peak_bytes = 1940;
  return exe;
}

/// Recomputes the header's length and checksum after the payload changed.
void reframe(std::vector<uint8_t> &image) {
  std::vector<uint8_t> payload(image.begin() + kExecutableHeaderBytes,
                               image.end());
  image = serializeExecutable(payload.data(), payload.size());
}

class ExecutableTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcrt-executable-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }

  /// Loads `image` from a file and from memory; both must fail with a
  /// message that starts with the file's name and contains `expected`.
  void expectRefused(const std::vector<uint8_t> &image,
                     const std::string &expected) {
    std::string path = pathOf("model.tpcx");
    writeBytes(path, image);
    LoadedExecutable fromFile;
    Status s = loadExecutable(path, fromFile);
    ASSERT_FALSE(s.isOk()) << "accepted; expected: " << expected;
    EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(expected), std::string::npos)
        << "message: " << s.message() << "\nexpected: " << expected;
    EXPECT_TRUE(fromFile.empty());

    LoadedExecutable fromBytes;
    Status m = loadExecutableFromBytes("model.tpcx", image.data(), image.size(),
                                       fromBytes);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.message(),
              "model.tpcx: " + s.message().substr(path.size() + 2));
    EXPECT_TRUE(fromBytes.empty());
  }

  /// Builds a valid executable, lets `mutate` break its meaning, frames it
  /// with a valid checksum and expects the loader to refuse it.
  void expectInvalid(const std::function<void(fb::ExecutableT &)> &mutate,
                     const std::string &expected) {
    fb::ExecutableT exe = validExecutable();
    mutate(exe);
    expectRefused(fileImage(exe), expected);
  }

  std::string dir;
};

TEST(Crc64Test, CheckValue) {
  EXPECT_EQ(crc64("123456789", 9), 0x995DC9BBDF1939FAull);
  EXPECT_EQ(crc64("", 0), 0u);
  // Incremental use gives the same result as one call.
  EXPECT_EQ(crc64("6789", 4, crc64("12345", 5)), 0x995DC9BBDF1939FAull);
}

// Eight bytes at a time gives what one byte at a time does, for every
// length, alignment and split.
TEST(Crc64Test, SlicedEqualsBytewise) {
  auto bytewise = [](const uint8_t *p, size_t size) {
    uint64_t crc = ~uint64_t(0);
    for (size_t i = 0; i < size; ++i) {
      crc ^= p[i];
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc & 1) ? (crc >> 1) ^ 0xC96C5795D7870F42ull : crc >> 1;
    }
    return ~crc;
  };
  std::vector<uint8_t> data(200);
  uint64_t state = 12345;
  for (uint8_t &byte : data) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    byte = static_cast<uint8_t>(state >> 56);
  }
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t size = 0; offset + size <= data.size(); size += 7) {
      const uint8_t *p = data.data() + offset;
      uint64_t expected = bytewise(p, size);
      EXPECT_EQ(crc64(p, size), expected) << offset << " " << size;
      EXPECT_EQ(crc64(p + size / 3, size - size / 3, crc64(p, size / 3)),
                expected)
          << offset << " " << size;
    }
}

TEST(ExecutableNamesTest, OpCodesAndDTypes) {
  EXPECT_STREQ(opCodeName(fb::OpCode::Linear), "linear");
  EXPECT_STREQ(opCodeName(fb::OpCode::Cast), "cast");
  EXPECT_EQ(opCodeName(static_cast<fb::OpCode>(999)), nullptr);
  EXPECT_EQ(executableDTypeSize(fb::DType::BF16), 2u);
  EXPECT_EQ(executableDTypeSize(fb::DType::I64), 8u);
  EXPECT_EQ(executableDTypeSize(static_cast<fb::DType>(77)), 0u);
}

TEST_F(ExecutableTest, FramingLayout) {
  std::vector<uint8_t> payload = pack(validExecutable());
  std::vector<uint8_t> image =
      serializeExecutable(payload.data(), payload.size());
  ASSERT_EQ(image.size(), payload.size() + 32);
  EXPECT_EQ(std::memcmp(image.data(), "TPCX\0\0\0\0", 8), 0);
  uint32_t version, reserved;
  uint64_t length, checksum;
  std::memcpy(&version, image.data() + 8, 4);
  std::memcpy(&reserved, image.data() + 12, 4);
  std::memcpy(&length, image.data() + 16, 8);
  std::memcpy(&checksum, image.data() + 24, 8);
  EXPECT_EQ(version, kExecutableFormatVersion);
  EXPECT_EQ(reserved, 0u);
  EXPECT_EQ(length, payload.size());
  EXPECT_EQ(checksum, crc64(payload.data(), payload.size()));
  EXPECT_EQ(std::memcmp(image.data() + 32, payload.data(), payload.size()), 0);
}

TEST_F(ExecutableTest, LoadsValidExecutable) {
  std::vector<uint8_t> payload = pack(validExecutable());
  std::string path = pathOf("model.tpcx");
  ASSERT_TRUE(writeExecutableFile(path, payload.data(), payload.size()));
  // Written atomically: nothing but the file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);

  LoadedExecutable loaded;
  Status s = loadExecutable(path, loaded);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(loaded.path(), path);
  ASSERT_FALSE(loaded.empty());
  EXPECT_EQ(loaded.payloadSize(), payload.size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(loaded.payload()) % 8, 0u);

  // Moving keeps the tables valid.
  LoadedExecutable moved = std::move(loaded);
  const fb::Executable &exe = moved.executable();
  EXPECT_EQ(exe.schema_version(), kExecutableSchemaVersion);
  EXPECT_EQ(exe.arena_bytes(), 4096u);
  EXPECT_EQ(exe.planned_peak_bytes(), 1940u);
  ASSERT_EQ(exe.buffers()->size(), 9u);
  EXPECT_EQ(exe.buffers()->Get(4)->size(), 2u * 4 * 16 * 4);
  ASSERT_EQ(exe.kernels()->size(), 4u);
  EXPECT_EQ(exe.kernels()->Get(2)->op(), fb::OpCode::CrossEntropy);
  EXPECT_EQ(exe.params()->Get(1)->hf_name()->str(), "lm_head.weight");
  EXPECT_EQ(exe.outputs()->Get(0)->name()->str(), "loss");
  EXPECT_EQ(exe.mesh()->Get(0)->name()->str(), "dp");

  std::vector<uint8_t> image =
      serializeExecutable(payload.data(), payload.size());
  LoadedExecutable fromBytes;
  // From an odd address: the loader copies to aligned memory.
  std::vector<uint8_t> shifted(image.size() + 1);
  std::memcpy(shifted.data() + 1, image.data(), image.size());
  s = loadExecutableFromBytes("mem.tpcx", shifted.data() + 1, image.size(),
                              fromBytes);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(fromBytes.executable().kernels()->size(), 4u);
}

TEST_F(ExecutableTest, EmptyTablesAreValid) {
  fb::ExecutableT exe;
  exe.schema_version = kExecutableSchemaVersion;
  std::vector<uint8_t> image = fileImage(exe);
  LoadedExecutable loaded;
  Status s =
      loadExecutableFromBytes("empty.tpcx", image.data(), image.size(), loaded);
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST_F(ExecutableTest, MissingAndForeignFiles) {
  LoadedExecutable loaded;
  Status s = loadExecutable(pathOf("absent.tpcx"), loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("absent.tpcx: cannot open"), std::string::npos)
      << s.message();
  s = loadExecutable(dir, loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos)
      << s.message();
}

TEST_F(ExecutableTest, EveryTruncationIsRefused) {
  std::vector<uint8_t> image = fileImage(validExecutable());
  for (size_t n = 0; n < image.size(); ++n) {
    LoadedExecutable loaded;
    Status s = loadExecutableFromBytes("model.tpcx", image.data(), n, loaded);
    ASSERT_FALSE(s.isOk()) << "length " << n;
    EXPECT_TRUE(loaded.empty());
  }
  expectRefused(std::vector<uint8_t>(image.begin(), image.begin() + 10),
                "file is 10 bytes, smaller than the 32-byte .tpcx header");
  size_t payload = image.size() - 32;
  expectRefused(std::vector<uint8_t>(image.begin(), image.end() - 5),
                "truncated: the header says the payload is " +
                    std::to_string(payload) + " bytes but the file has " +
                    std::to_string(payload - 5) + " after the header");
  std::vector<uint8_t> longer = image;
  longer.push_back(0);
  expectRefused(longer, "trailing bytes: the header says the payload is " +
                            std::to_string(payload) +
                            " bytes but the file has " +
                            std::to_string(payload + 1));
}

TEST_F(ExecutableTest, EveryBitFlipIsRefused) {
  std::vector<uint8_t> image = fileImage(validExecutable());
  for (size_t byte = 0; byte < image.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      image[byte] ^= static_cast<uint8_t>(1u << bit);
      LoadedExecutable loaded;
      Status s = loadExecutableFromBytes("model.tpcx", image.data(),
                                         image.size(), loaded);
      image[byte] ^= static_cast<uint8_t>(1u << bit);
      ASSERT_FALSE(s.isOk()) << "byte " << byte << " bit " << bit;
      if (byte >= 32) { // Payload bits are caught by the checksum.
        ASSERT_NE(s.message().find("checksum mismatch"), std::string::npos)
            << s.message();
      }
    }
  }
  LoadedExecutable loaded;
  EXPECT_TRUE(loadExecutableFromBytes("model.tpcx", image.data(), image.size(),
                                      loaded));
}

TEST_F(ExecutableTest, BadHeaderFields) {
  std::vector<uint8_t> image = fileImage(validExecutable());
  std::vector<uint8_t> bad = image;
  std::memcpy(bad.data(), "GGUF", 4);
  expectRefused(bad, "not a tpc executable (bad magic");

  bad = image;
  uint32_t version = 2;
  std::memcpy(bad.data() + 8, &version, 4);
  expectRefused(bad, "format version 2 is not supported (this runtime reads "
                     "version 1)");

  bad = image;
  bad[12] = 1;
  expectRefused(bad, "reserved header field is 1, expected 0");

  bad = image;
  bad[24] ^= 0xff;
  expectRefused(bad, "checksum mismatch");

  // A huge claimed length is refused from the header alone.
  bad = image;
  uint64_t length = std::numeric_limits<uint64_t>::max();
  std::memcpy(bad.data() + 16, &length, 8);
  expectRefused(bad, "truncated: the header says the payload is "
                     "18446744073709551615 bytes");
}

TEST_F(ExecutableTest, PayloadThatIsNotTheSchemaIsRefused) {
  std::vector<uint8_t> garbage(64, 0xab);
  expectRefused(serializeExecutable(garbage.data(), garbage.size()),
                "payload is not a valid FlatBuffer of tpcx.fbs");
  expectRefused(serializeExecutable(nullptr, 0),
                "payload is not a valid FlatBuffer of tpcx.fbs");

  // A valid FlatBuffer without the "TPCX" identifier.
  flatbuffers::FlatBufferBuilder builder;
  fb::ExecutableT exe = validExecutable();
  builder.Finish(fb::Executable::Pack(builder, &exe));
  expectRefused(
      serializeExecutable(builder.GetBufferPointer(), builder.GetSize()),
      "payload is not a valid FlatBuffer");

  // An offset pointing outside the payload (valid checksum).
  std::vector<uint8_t> image = fileImage(validExecutable());
  image[32] = 0xf0;
  image[33] = 0xff;
  reframe(image);
  expectRefused(image, "payload is not a valid FlatBuffer");
}

TEST_F(ExecutableTest, SchemaVersionAndMesh) {
  expectInvalid([](fb::ExecutableT &e) { e.schema_version = 2; },
                "model.tpcx: schema version 2 is not supported (this runtime "
                "reads version 1)");
  expectInvalid([](fb::ExecutableT &e) { e.mesh[0]->size = 0; },
                "mesh axis 0 ('dp'): size 0 is not positive");
  expectInvalid([](fb::ExecutableT &e) { e.mesh[0]->size = -4; },
                "mesh axis 0 ('dp'): size -4 is not positive");
  expectInvalid([](fb::ExecutableT &e) { e.mesh[0]->name = ""; },
                "mesh axis 0 has no name");
  expectInvalid(
      [](fb::ExecutableT &e) {
        auto axis = std::make_unique<fb::MeshAxisT>();
        axis->name = "dp";
        axis->size = 2;
        e.mesh.push_back(std::move(axis));
      },
      "mesh axis 1 ('dp'): duplicate axis name");
}

TEST_F(ExecutableTest, BuffersMustLieInTheArena) {
  expectInvalid([](fb::ExecutableT &e) { e.buffers[8]->offset = 4094; },
                "model.tpcx: buffer 8: bytes [4094, +4) lie outside the arena "
                "of 4096 bytes");
  expectInvalid([](fb::ExecutableT &e) { e.arena_bytes = 1000; },
                "buffer 3: bytes [832, +512) lie outside the arena of 1000 "
                "bytes");
  // offset + size would wrap around to a small number.
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[8]->offset = std::numeric_limits<uint64_t>::max() - 1;
      },
      "buffer 8: bytes [18446744073709551614, +4) lie outside the arena");
}

TEST_F(ExecutableTest, BufferSizeMustMatchShape) {
  expectInvalid([](fb::ExecutableT &e) { e.buffers[2]->size = 255; },
                "buffer 2: size is 255 bytes but shape [2, 4, 8] of f32 needs "
                "256");
  expectInvalid(
      [](fb::ExecutableT &e) { e.buffers[1]->dtype = fb::DType::I32; },
      "buffer 1: size is 64 bytes but shape [2, 4] of i32 needs 32");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[2]->shape = {2, -4, -8};
      },
      "buffer 2: shape [2, -4, -8] has a negative dimension or too "
      "many elements");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[2]->shape = {int64_t(1) << 62, 4};
      },
      "buffer 2: shape [4611686018427387904, 4] has a negative dimension or "
      "too many elements");
  expectInvalid(
      [](fb::ExecutableT &e) { e.buffers[2]->shape = {int64_t(1) << 62}; },
      "buffer 2: size is 256 bytes but shape [4611686018427387904] of f32 "
      "needs more than 2^64");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[2]->dtype = static_cast<fb::DType>(42);
      },
      "buffer 2: unknown dtype 42");
}

TEST_F(ExecutableTest, KernelOperandsMustBeValid) {
  std::vector<uint8_t> image;
  {
    fb::ExecutableT exe = validExecutable();
    exe.kernels[1]->operands = {2, 99};
    image = fileImage(exe);
  }
  std::string path = pathOf("model.tpcx");
  writeBytes(path, image);
  LoadedExecutable loaded;
  Status s = loadExecutable(path, loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), path + ": kernel 1 (linear): operand 1 is buffer 99 "
                                "but the executable has 9 buffers");

  expectInvalid([](fb::ExecutableT &e) { e.kernels[3]->results = {9}; },
                "kernel 3 (loss_mean): result 0 is buffer 9 but the executable "
                "has 9 buffers");
  expectInvalid([](fb::ExecutableT &e) { e.kernels[1]->operands = {2}; },
                "kernel 1 (linear): has 1 operand, expected 2 to 3");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.kernels[0]->operands = {0, 1, 2};
      },
      "kernel 0 (embedding): has 3 operands, expected 2");
  expectInvalid([](fb::ExecutableT &e) { e.kernels[2]->results = {6}; },
                "kernel 2 (cross_entropy): has 1 result, expected 2");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.kernels[2]->op = static_cast<fb::OpCode>(999);
      },
      "kernel 2: unknown opcode 999");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.kernels[2]->op =
            static_cast<fb::OpCode>(static_cast<int>(fb::OpCode::MAX) + 1);
      },
      "kernel 2: unknown opcode " +
          std::to_string(static_cast<int>(fb::OpCode::MAX) + 1));
  // A bias makes linear's third operand valid.
  fb::ExecutableT exe = validExecutable();
  exe.buffers.push_back(makeBuffer(2048, fb::DType::F32, {16}));
  exe.inputs.push_back(makeBinding("bias", 9));
  exe.kernels[1]->operands = {2, 3, 9};
  std::vector<uint8_t> withBias = fileImage(exe);
  EXPECT_TRUE(
      loadExecutableFromBytes("m", withBias.data(), withBias.size(), loaded));
}

TEST_F(ExecutableTest, ParamsMustMatchTheirBuffers) {
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[1]->view_shape = {8, 8};
      },
      "param 1 ('lm_head.weight'): view_shape [8, 8] has 64 elements "
      "but hf_shape [128] has 128");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[1]->hf_shape = {64};
        e.params[1]->view_shape = {8, 8};
      },
      "param 1 ('lm_head.weight'): buffer 3 is [8, 16], expected [8, 8] "
      "(its view_shape)");
  expectInvalid([](fb::ExecutableT &e) { e.params[0]->buffer = 12; },
                "param 0 ('transformer.wte.weight'): its view is buffer 12 but "
                "the executable has 9 buffers");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[0]->hf_shape = {-16, -8};
      },
      "param 0 ('transformer.wte.weight'): hf_shape [-16, -8] has a "
      "negative dimension");
  expectInvalid([](fb::ExecutableT &e) { e.params[1]->hf_name = ""; },
                "param 1 has no hf_name");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[1]->hf_name = "transformer.wte.weight";
      },
      "param 1 ('transformer.wte.weight'): duplicate parameter name");
}

TEST_F(ExecutableTest, BindingsMustReferenceBuffers) {
  expectInvalid([](fb::ExecutableT &e) { e.inputs[1]->buffer = 9; },
                "input 1 ('labels'): it is buffer 9 but the executable has 9 "
                "buffers");
  expectInvalid([](fb::ExecutableT &e) { e.outputs[0]->buffer = 1000; },
                "output 0 ('loss'): it is buffer 1000");
  expectInvalid([](fb::ExecutableT &e) { e.outputs[0]->name = ""; },
                "output 0 has no name");
  expectInvalid([](fb::ExecutableT &e) { e.inputs[1]->name = "input_ids"; },
                "input 1 ('input_ids'): duplicate input name");
}

/// Random damage behind a valid checksum must be refused or accepted, never
/// crash: the verifier and the meaning checks stand alone.
TEST_F(ExecutableTest, RandomPayloadDamageNeverCrashes) {
  std::vector<uint8_t> original = fileImage(validExecutable());
  std::mt19937 rng(1234);
  int refused = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<uint8_t> image = original;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < edits; ++i) {
      size_t at = 32 + rng() % (image.size() - 32);
      image[at] = static_cast<uint8_t>(rng());
    }
    reframe(image);
    LoadedExecutable loaded;
    Status s = loadExecutableFromBytes("fuzz.tpcx", image.data(), image.size(),
                                       loaded);
    if (!s) {
      ++refused;
      EXPECT_EQ(s.message().rfind("fuzz.tpcx: ", 0), 0u);
      EXPECT_TRUE(loaded.empty());
    } else {
      EXPECT_TRUE(checkExecutable(loaded.executable()).isOk());
    }
  }
  EXPECT_GT(refused, 0);
}

TEST_F(ExecutableTest, ParamInitAndDTypes) {
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[0]->init = static_cast<fb::ParamInit>(7);
      },
      "param 0 ('transformer.wte.weight'): unknown init kind 7");
  expectInvalid([](fb::ExecutableT &e) { e.params[1]->init_std = -0.5; },
                "param 1 ('lm_head.weight'): init_std -0.500000 is not a "
                "finite value >= 0");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[1]->init_std = std::numeric_limits<double>::quiet_NaN();
      },
      "param 1 ('lm_head.weight'): init_std nan is not a finite value");
  expectInvalid(
      [](fb::ExecutableT &e) { e.buffers[3]->dtype = fb::DType::I32; },
      "param 1 ('lm_head.weight'): buffer 3 is i32, expected f32, bf16 or "
      "f16");
}

TEST_F(ExecutableTest, BindingsFollowTheContract) {
  expectInvalid([](fb::ExecutableT &e) { e.inputs[0]->value_bound = -1; },
                "input 0 ('input_ids'): value_bound -1 is negative");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[5] = makeBuffer(1856, fb::DType::I64, {8});
      },
      "input 1 ('labels'): buffer 5 is i64 [8], expected i64 [batch, seq]");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers[8] = makeBuffer(1936, fb::DType::F32, {1});
      },
      "output 0 ('loss'): buffer 8 is f32 [1], expected an f32 scalar");
  expectInvalid([](fb::ExecutableT &e) { e.planned_peak_bytes = 4097; },
                "planned_peak_bytes 4097 exceeds arena_bytes 4096");
  expectInvalid([](fb::ExecutableT &e) { e.buffers[2]->offset = 578; },
                "buffer 2: offset 578 is not a multiple of 4 (the size of "
                "f32)");
}

/// Lifetimes: what a kernel reads was written before (or loaded), params and
/// inputs are only read, and live buffers never share bytes.
TEST_F(ExecutableTest, LifetimesAndThePlan) {
  expectInvalid(
      [](fb::ExecutableT &e) { std::swap(e.kernels[0], e.kernels[1]); },
      "kernel 0 (linear): input (buffer 2) is read before any kernel writes "
      "it");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.kernels.push_back(makeKernel(fb::OpCode::Copy, {0}, {3}));
      },
      "kernel 4 (copy): result is buffer 3, param 1 ('lm_head.weight'), "
      "which only the optimizer updates in place");
  expectInvalid([](fb::ExecutableT &e) { e.outputs[0]->buffer = 2; },
                "output 0 ('loss'): buffer 2 is f32 [2, 4, 8], expected an f32 "
                "scalar");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.buffers.push_back(makeBuffer(3000, fb::DType::F32, {2, 4, 16}));
        e.outputs.push_back(makeBinding("logits", 9));
      },
      "output 1 ('logits') is never written by a kernel");
  expectInvalid(
      [](fb::ExecutableT &e) {
        e.params[1]->buffer = 0;
        e.params[1]->view_shape = e.params[1]->hf_shape = {16, 8};
      },
      "param 1 ('lm_head.weight') uses buffer 0, which is already "
      "param 0 ('transformer.wte.weight')");
  // The logits reuse the bytes of h, which is still being read.
  expectInvalid([](fb::ExecutableT &e) { e.buffers[4]->offset = 576; },
                "kernel 1 (linear): result (buffer 4, bytes [576, +512)) "
                "overlaps input (buffer 2, bytes [576, +256))");
  // The loss sum lands on h, which died at kernel 1: fine. On the labels,
  // which cross_entropy reads: refused.
  fb::ExecutableT reuse = validExecutable();
  reuse.buffers[6]->offset = 576;
  std::vector<uint8_t> image = fileImage(reuse);
  LoadedExecutable loaded;
  Status s =
      loadExecutableFromBytes("m.tpcx", image.data(), image.size(), loaded);
  EXPECT_TRUE(s.isOk()) << s.message();
  expectInvalid([](fb::ExecutableT &e) { e.buffers[6]->offset = 1856; },
                "kernel 2 (cross_entropy): loss_sum (buffer 6, bytes [1856, "
                "+4)) overlaps labels (buffer 5, bytes [1856, +64))");
  // The loss on the token ids: inputs live for the whole run.
  expectInvalid([](fb::ExecutableT &e) { e.buffers[8]->offset = 512; },
                "buffers 1 (bytes [512, +64)) and 8 (bytes [512, +4)) share "
                "arena bytes while both are live at kernel 3 (loss_mean)");
  // The loss on the weights: both live at kernel 3.
  expectInvalid([](fb::ExecutableT &e) { e.buffers[8]->offset = 840; },
                "buffers 3 (bytes [832, +512)) and 8 (bytes [840, +4)) share "
                "arena bytes while both are live at kernel 3 (loss_mean)");
  // Two params on the same bytes, from load on.
  expectInvalid([](fb::ExecutableT &e) { e.buffers[3]->offset = 256; },
                "share arena bytes while both are live at load");
}

TEST_F(ExecutableTest, MeasuredPeak) {
  fb::ExecutableT exe = validExecutable();
  std::vector<uint8_t> payload = pack(exe);
  Program program;
  ASSERT_TRUE(decodeProgram(*fb::GetExecutable(payload.data()), program));
  // Kernel 1 (linear) holds the most: both params (512 + 512), both inputs
  // (64 + 64), h (256) and the logits (512).
  EXPECT_EQ(program.peakBytes, 512u + 512 + 64 + 64 + 256 + 512);
  EXPECT_EQ(program.plannedPeakBytes, 1940u);
  ASSERT_EQ(program.calls.size(), 4u);
  const KernelCall &linear = program.calls[1];
  EXPECT_EQ(linear.m, 8);
  EXPECT_EQ(linear.k, 8);
  EXPECT_EQ(linear.n, 16);
  EXPECT_EQ(program.calls[2].rows, 8);
  EXPECT_EQ(program.calls[2].cols, 16);
  EXPECT_EQ(program.lifetimes[1].first, Lifetime::kLoad);
  EXPECT_EQ(program.lifetimes[1].last, 4); // inputs: the whole run
  EXPECT_EQ(program.lifetimes[2].first, 0);
  EXPECT_EQ(program.lifetimes[2].last, 1);
  EXPECT_EQ(program.lifetimes[0].last, 4); // params: the whole run
  EXPECT_EQ(program.lifetimes[8].first, 3);
  EXPECT_EQ(program.lifetimes[8].last, 4); // outputs: to the end
}

/// One kernel whose operands are inputs x0, x1, ... and whose results are
/// outputs y0, y1, ..., each buffer 64-byte aligned after the previous one.
struct Tensor {
  fb::DType dtype;
  std::vector<int64_t> shape;
};

fb::ExecutableT singleKernel(fb::OpCode op, const std::vector<Tensor> &operands,
                             const std::vector<Tensor> &results,
                             std::vector<int64_t> ints = {},
                             std::vector<double> floats = {},
                             uint32_t flags = 0) {
  fb::ExecutableT exe;
  exe.schema_version = kExecutableSchemaVersion;
  uint64_t offset = 0;
  std::vector<uint32_t> in, out;
  auto add = [&](const Tensor &t) {
    exe.buffers.push_back(makeBuffer(offset, t.dtype, t.shape));
    offset += (exe.buffers.back()->size + 63) / 64 * 64;
    return static_cast<uint32_t>(exe.buffers.size() - 1);
  };
  for (const Tensor &t : operands) {
    in.push_back(add(t));
    exe.inputs.push_back(
        makeBinding("x" + std::to_string(in.size() - 1), in.back()));
  }
  for (const Tensor &t : results) {
    out.push_back(add(t));
    exe.outputs.push_back(
        makeBinding("y" + std::to_string(out.size() - 1), out.back()));
  }
  exe.arena_bytes = offset;
  exe.kernels.push_back(makeKernel(op, in, out));
  exe.kernels[0]->int_attrs = std::move(ints);
  exe.kernels[0]->float_attrs = std::move(floats);
  exe.kernels[0]->flags = flags;
  return exe;
}

constexpr fb::DType F32 = fb::DType::F32;
constexpr fb::DType BF16 = fb::DType::BF16;
constexpr fb::DType I64 = fb::DType::I64;

/// Every opcode: a valid kernel, then what each broken variant says.
class KernelMeaningTest : public ExecutableTest {
protected:
  void expectValid(const fb::ExecutableT &exe) {
    std::vector<uint8_t> image = fileImage(exe);
    LoadedExecutable loaded;
    Status s =
        loadExecutableFromBytes("k.tpcx", image.data(), image.size(), loaded);
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  void expectKernel(const fb::ExecutableT &exe, const std::string &expected) {
    std::vector<uint8_t> image = fileImage(exe);
    expectRefused(image, expected);
  }
};

TEST_F(KernelMeaningTest, EmbeddingAndLinear) {
  expectValid(singleKernel(fb::OpCode::Embedding,
                           {{F32, {10, 4}}, {I64, {2, 3}}},
                           {{F32, {2, 3, 4}}}));
  expectKernel(singleKernel(fb::OpCode::Embedding,
                            {{F32, {10, 4}}, {F32, {2, 3}}},
                            {{F32, {2, 3, 4}}}),
               "kernel 0 (embedding): ids is f32, expected i64");
  expectKernel(singleKernel(fb::OpCode::Embedding,
                            {{F32, {10, 4}}, {I64, {2, 3}}}, {{F32, {6, 4}}}),
               "kernel 0 (embedding): result [6, 4] should be [2, 3, 4]");

  // in_out [in, out...] and out_in [out..., in], with a bias.
  expectValid(singleKernel(fb::OpCode::Linear,
                           {{F32, {2, 5, 8}}, {F32, {8, 3, 4}}, {F32, {3, 4}}},
                           {{F32, {2, 5, 3, 4}}}));
  expectValid(singleKernel(fb::OpCode::Linear,
                           {{BF16, {2, 5, 8}}, {BF16, {12, 8}}},
                           {{BF16, {2, 5, 12}}}, {}, {}, 1));
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{F32, {2, 5, 8}}, {F32, {12, 8}}},
                            {{F32, {2, 5, 12}}}),
               "kernel 0 (linear): weight [12, 8] (in_out) contracts 12 but "
               "input [2, 5, 8] has 8");
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{F32, {2, 5, 8}}, {F32, {8, 12}}, {F32, {13}}},
                            {{F32, {2, 5, 12}}}),
               "bias [13] has 13 elements, expected n 12");
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{F32, {2, 5, 8}}, {F32, {8, 12}}},
                            {{F32, {2, 5, 11}}}),
               "result [2, 5, 11] has 110 elements, expected m 10 x n 12");
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{F32, {2, 5, 8}}, {F32, {8, 12}}},
                            {{F32, {2, 5, 12}}}, {}, {}, 4),
               "kernel 0 (linear): flags 4 set bits this opcode does not "
               "define (allowed 1)");
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{F32, {2, 5, 8}}, {F32, {8, 12}}},
                            {{F32, {2, 5, 12}}}, {3}),
               "kernel 0 (linear): has 1 int_attrs, expected 0");
  expectKernel(singleKernel(fb::OpCode::Linear,
                            {{I64, {2, 5, 8}}, {F32, {8, 12}}},
                            {{F32, {2, 5, 12}}}),
               "kernel 0 (linear): input is i64, expected f32, bf16 or f16");
}

TEST_F(KernelMeaningTest, BatchMatmulAndNorms) {
  expectValid(singleKernel(fb::OpCode::BatchMatmul,
                           {{F32, {2, 3, 5, 7}}, {F32, {2, 3, 6, 7}}},
                           {{F32, {2, 3, 5, 6}}}, {}, {0.125}, 2));
  expectKernel(singleKernel(fb::OpCode::BatchMatmul,
                            {{F32, {2, 3, 5, 7}}, {F32, {2, 3, 6, 7}}},
                            {{F32, {2, 3, 5, 6}}}, {}, {0.125}),
               "lhs [2, 3, 5, 7] contracts 7 but rhs [2, 3, 6, 7] has 6");
  expectKernel(singleKernel(fb::OpCode::BatchMatmul,
                            {{F32, {2, 3, 5, 7}}, {F32, {2, 3, 7, 6}}},
                            {{F32, {2, 3, 5, 6}}}),
               "kernel 0 (batch_matmul): has 0 float_attrs, expected 1");
  expectKernel(singleKernel(fb::OpCode::BatchMatmul,
                            {{F32, {2, 3, 5, 7}}, {F32, {3, 2, 7, 6}}},
                            {{F32, {2, 3, 5, 6}}}, {}, {1.0}),
               "rhs [3, 2, 7, 6] should have the batch dimensions of result "
               "[2, 3, 5, 6]");
  expectKernel(singleKernel(fb::OpCode::BatchMatmul,
                            {{F32, {2, 3, 5, 7}}, {F32, {2, 3, 7, 6}}},
                            {{F32, {2, 3, 5, 6}}}, {},
                            {std::numeric_limits<double>::infinity()}),
               "scale (float_attrs[0]) is inf, expected a finite value");

  expectValid(singleKernel(fb::OpCode::LayerNorm,
                           {{F32, {4, 6}}, {F32, {6}}, {F32, {6}}},
                           {{F32, {4, 6}}}, {}, {1e-5}));
  expectKernel(singleKernel(fb::OpCode::LayerNorm,
                            {{F32, {4, 6}}, {F32, {6}}, {F32, {4}}},
                            {{F32, {4, 6}}}, {}, {1e-5}),
               "kernel 0 (layer_norm): bias [4] should be [6]");
  expectKernel(singleKernel(fb::OpCode::RmsNorm, {{F32, {4, 6}}, {F32, {6}}},
                            {{F32, {4, 6}}}, {}, {-1.0}),
               "kernel 0 (rms_norm): epsilon (float_attrs[0]) is -1, expected "
               "a finite value >= 0");
  expectKernel(singleKernel(fb::OpCode::RmsNorm, {{F32, {4, 6}}, {F32, {6}}},
                            {{F32, {4, 7}}}, {}, {1e-6}),
               "kernel 0 (rms_norm): result [4, 7] should be [4, 6]");
}

TEST_F(KernelMeaningTest, ElementwiseAndSoftmax) {
  expectValid(singleKernel(fb::OpCode::Gelu, {{F32, {3, 4}}}, {{BF16, {3, 4}}},
                           {}, {}, 1));
  expectKernel(singleKernel(fb::OpCode::Gelu, {{F32, {3, 4}}}, {{F32, {3, 4}}},
                            {}, {}, 2),
               "kernel 0 (gelu): flags 2 set bits");
  expectKernel(singleKernel(fb::OpCode::Silu, {{F32, {3, 4}}}, {{F32, {4, 3}}}),
               "kernel 0 (silu): result [4, 3] should be [3, 4]");
  expectValid(singleKernel(fb::OpCode::Add, {{F32, {2, 3, 4}}, {F32, {3, 4}}},
                           {{F32, {2, 3, 4}}}));
  expectKernel(singleKernel(fb::OpCode::Mul, {{F32, {2, 3, 4}}, {F32, {2, 4}}},
                            {{F32, {2, 3, 4}}}),
               "kernel 0 (mul): rhs [2, 4] is not a suffix of lhs [2, 3, 4]");
  expectValid(singleKernel(fb::OpCode::Dropout, {{F32, {3, 4}}},
                           {{F32, {3, 4}}}, {7}, {0.1}));
  expectKernel(singleKernel(fb::OpCode::Dropout, {{F32, {3, 4}}},
                            {{F32, {3, 4}}}, {7}, {1.0}),
               "kernel 0 (dropout): dropout rate (float_attrs[0]) is 1, "
               "expected [0, 1)");
  expectKernel(singleKernel(fb::OpCode::Dropout, {{F32, {3, 4}}},
                            {{F32, {3, 4}}}, {}, {0.1}),
               "kernel 0 (dropout): has 0 int_attrs, expected 1");
  expectValid(singleKernel(fb::OpCode::Softmax, {{F32, {2, 5, 9}}},
                           {{F32, {2, 5, 9}}}, {}, {}, 1));
  expectKernel(singleKernel(fb::OpCode::Softmax, {{F32, {2, 9, 5}}},
                            {{F32, {2, 9, 5}}}, {}, {}, 1),
               "kernel 0 (softmax): causal input [2, 9, 5] has 9 queries but "
               "only 5 keys");
}

TEST_F(KernelMeaningTest, AttentionAndRotary) {
  expectValid(singleKernel(
      fb::OpCode::Attention,
      {{F32, {2, 8, 5, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 8}}},
      {{F32, {2, 8, 5, 8}}}, {3}, {0.25, 0.1}, 1));
  expectKernel(
      singleKernel(
          fb::OpCode::Attention,
          {{F32, {2, 6, 5, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 16}}},
          {{F32, {2, 6, 5, 16}}}, {0}, {0.25, 0.0}),
      "kernel 0 (attention): 6 query heads are not a multiple of 4 "
      "kv heads");
  expectKernel(
      singleKernel(
          fb::OpCode::Attention,
          {{F32, {2, 8, 5, 16}}, {F32, {2, 4, 5, 8}}, {F32, {2, 4, 5, 16}}},
          {{F32, {2, 8, 5, 16}}}, {0}, {0.25, 0.0}),
      "kernel 0 (attention): key [2, 4, 5, 8] should be [2, 4, 5, "
      "16]");
  expectKernel(
      singleKernel(
          fb::OpCode::Attention,
          {{F32, {2, 8, 6, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 16}}},
          {{F32, {2, 8, 6, 16}}}, {0}, {0.25, 0.0}, 1),
      "causal attention has 6 queries but only 5 keys");
  expectKernel(
      singleKernel(
          fb::OpCode::Attention,
          {{F32, {2, 8, 5, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 16}}},
          {{F32, {2, 8, 5, 16}}}, {0}, {0.25}),
      "kernel 0 (attention): has 1 float_attrs, expected 2");
  expectKernel(
      singleKernel(
          fb::OpCode::Attention,
          {{F32, {2, 8, 5, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 16}}},
          {{F32, {2, 8, 5, 16}}}, {0}, {0.25, -0.5}),
      "dropout rate (float_attrs[1]) is -0.5, expected [0, 1)");
  // attention_qkv(_grad): q, k, v the parts of [b, s, 3, heads, d].
  expectValid(singleKernel(fb::OpCode::AttentionQkv, {{BF16, {2, 5, 3, 4, 8}}},
                           {{BF16, {2, 5, 4, 8}}}, {3, 0}, {0.25, 0.1}, 1));
  expectValid(singleKernel(fb::OpCode::AttentionQkvGrad,
                           {{F32, {2, 5, 4, 8}}, {F32, {2, 5, 3, 4, 8}}},
                           {{F32, {2, 5, 3, 4, 8}}}, {3}, {0.25, 0.0}, 1));
  expectKernel(singleKernel(fb::OpCode::AttentionQkv, {{F32, {2, 5, 2, 4, 8}}},
                            {{F32, {2, 5, 4, 8}}}, {0}, {0.25, 0.0}),
               "kernel 0 (attention_qkv): qkv [2, 5, 2, 4, 8] should be [b, "
               "s, 3, heads, d]");
  expectKernel(singleKernel(fb::OpCode::AttentionQkv, {{F32, {2, 5, 3, 4, 8}}},
                            {{F32, {2, 4, 5, 8}}}, {0}, {0.25, 0.0}),
               "kernel 0 (attention_qkv): result [2, 4, 5, 8] should be [2, "
               "5, 4, 8]");
  expectKernel(singleKernel(fb::OpCode::AttentionQkv, {{F32, {2, 5, 3, 4, 8}}},
                            {{F32, {2, 5, 4, 8}}}, {0}, {0.25, 0.0}, 2),
               "kernel 0 (attention_qkv): flags 2 set bits");
  expectKernel(singleKernel(fb::OpCode::AttentionQkvGrad,
                            {{F32, {2, 5, 4, 8}}, {F32, {2, 5, 3, 4, 8}}},
                            {{F32, {2, 5, 4, 8}}}, {0}, {0.25, 0.0}),
               "kernel 0 (attention_qkv_grad): qkv grad [2, 5, 4, 8] should "
               "be [2, 5, 3, 4, 8]");
  expectKernel(singleKernel(fb::OpCode::AttentionQkvGrad,
                            {{F32, {2, 5, 4, 4}}, {F32, {2, 5, 3, 4, 8}}},
                            {{F32, {2, 5, 3, 4, 8}}}, {0}, {0.25, 0.0}),
               "kernel 0 (attention_qkv_grad): dO [2, 5, 4, 4] should be [2, "
               "5, 4, 8]");
  // attention_lse's second result, and the attention_grad that reads it
  // with the forward's output: f32 [b, heads, s_q] in either layout.
  expectValid(singleKernel(
      fb::OpCode::AttentionLse,
      {{BF16, {2, 5, 8, 16}}, {BF16, {2, 5, 4, 16}}, {BF16, {2, 5, 4, 8}}},
      {{BF16, {2, 5, 8, 8}}, {F32, {2, 8, 5}}}, {3}, {0.25, 0.1}, 3));
  expectKernel(
      singleKernel(
          fb::OpCode::AttentionLse,
          {{F32, {2, 8, 5, 16}}, {F32, {2, 4, 5, 16}}, {F32, {2, 4, 5, 8}}},
          {{F32, {2, 8, 5, 8}}, {BF16, {2, 8, 5}}}, {3}, {0.25, 0.0}),
      "kernel 0 (attention_lse): lse is bf16, expected f32");
  expectKernel(
      singleKernel(fb::OpCode::AttentionQkvLse, {{F32, {2, 5, 3, 4, 8}}},
                   {{F32, {2, 5, 4, 8}}, {F32, {2, 5, 4}}}, {0}, {0.25, 0.0}),
      "kernel 0 (attention_qkv_lse): lse [2, 5, 4] should be [2, 4, "
      "5]");
  const std::vector<Tensor> q = {
      {BF16, {2, 8, 5, 16}}, {BF16, {2, 4, 5, 16}}, {BF16, {2, 4, 5, 8}}};
  expectValid(singleKernel(fb::OpCode::AttentionGrad,
                           {{BF16, {2, 8, 5, 8}},
                            q[0],
                            q[1],
                            q[2],
                            {BF16, {2, 8, 5, 8}},
                            {F32, {2, 8, 5}}},
                           {q[0], q[1], q[2]}, {3}, {0.25, 0.1}, 1));
  expectKernel(
      singleKernel(
          fb::OpCode::AttentionGrad,
          {{BF16, {2, 8, 5, 8}}, q[0], q[1], q[2], {BF16, {2, 8, 5, 8}}},
          {q[0], q[1], q[2]}, {3}, {0.25, 0.1}, 1),
      "kernel 0 (attention_grad): takes the forward's output and lse "
      "both or neither, got 5 operands");
  expectKernel(singleKernel(fb::OpCode::AttentionGrad,
                            {{BF16, {2, 8, 5, 8}},
                             q[0],
                             q[1],
                             q[2],
                             {BF16, {2, 8, 5, 16}},
                             {F32, {2, 8, 5}}},
                            {q[0], q[1], q[2]}, {3}, {0.25, 0.1}, 1),
               "kernel 0 (attention_grad): output [2, 8, 5, 16] should be [2, "
               "8, 5, 8]");
  expectKernel(singleKernel(fb::OpCode::AttentionQkvGrad,
                            {{F32, {2, 5, 4, 8}},
                             {F32, {2, 5, 3, 4, 8}},
                             {F32, {2, 5, 4, 8}},
                             {F32, {2, 4, 6}}},
                            {{F32, {2, 5, 3, 4, 8}}}, {3}, {0.25, 0.0}, 1),
               "kernel 0 (attention_qkv_grad): lse [2, 4, 6] should be [2, 4, "
               "5]");
  expectValid(singleKernel(fb::OpCode::Rotary, {{F32, {2, 4, 9, 16}}},
                           {{F32, {2, 4, 9, 16}}}, {5}, {10000.0}));
  expectKernel(singleKernel(fb::OpCode::Rotary, {{F32, {2, 4, 9, 15}}},
                            {{F32, {2, 4, 9, 15}}}, {0}, {10000.0}),
               "input [2, 4, 9, 15] has an odd head dimension 15");
  expectKernel(singleKernel(fb::OpCode::Rotary, {{F32, {2, 4, 9, 16}}},
                            {{F32, {2, 4, 9, 16}}}, {0}, {0.0}),
               "theta (float_attrs[0]) is 0, expected a finite value > 0");
  expectKernel(singleKernel(fb::OpCode::Rotary, {{F32, {2, 4, 9, 16}}},
                            {{F32, {2, 4, 9, 16}}}, {-1}, {1e4}),
               "position offset (int_attrs[0]) is -1, expected >= 0");
}

TEST_F(KernelMeaningTest, LossKernels) {
  expectValid(singleKernel(fb::OpCode::CrossEntropy,
                           {{BF16, {2, 3, 10}}, {I64, {2, 3}}},
                           {{F32, {}}, {I64, {}}}, {-100}));
  expectKernel(singleKernel(fb::OpCode::CrossEntropy,
                            {{F32, {2, 3, 10}}, {I64, {3, 2}}},
                            {{F32, {}}, {I64, {}}}, {-100}),
               "kernel 0 (cross_entropy): labels [3, 2] should be [2, 3]");
  expectKernel(singleKernel(fb::OpCode::CrossEntropy,
                            {{F32, {2, 3, 10}}, {I64, {2, 3}}},
                            {{F32, {}}, {F32, {}}}, {-100}),
               "kernel 0 (cross_entropy): count is f32, expected i64");
  expectKernel(singleKernel(fb::OpCode::CrossEntropy,
                            {{F32, {2, 3, 10}}, {I64, {2, 3}}},
                            {{F32, {1}}, {I64, {}}}, {-100}),
               "kernel 0 (cross_entropy): loss_sum [1] should be []");
  expectValid(
      singleKernel(fb::OpCode::LossMean, {{F32, {}}, {I64, {}}}, {{F32, {}}}));
  expectKernel(
      singleKernel(fb::OpCode::LossMean, {{F32, {}}, {F32, {}}}, {{F32, {}}}),
      "kernel 0 (loss_mean): count is f32, expected i64");
}

// The test-only opcode (Kernels.def: TestCopy): its row's counts and the
// rule of the decoder the row names (copy's) are the loader's.
TEST_F(KernelMeaningTest, TheTestOpcodeFollowsItsRow) {
  expectValid(singleKernel(fb::OpCode::TestCopy, {{F32, {2, 6}}}, {{F32, {12}}}));
  expectKernel(singleKernel(fb::OpCode::TestCopy, {{F32, {12}}, {F32, {12}}},
                            {{F32, {12}}}),
               "kernel 0 (test_copy): has 2 operands, expected 1");
  expectKernel(singleKernel(fb::OpCode::TestCopy, {{F32, {2, 6}}}, {{F32, {13}}}),
               "kernel 0 (test_copy): input [2, 6] and result [13] have "
               "different element counts");
}

TEST_F(KernelMeaningTest, ShapeKernels) {
  expectValid(singleKernel(fb::OpCode::Copy, {{I64, {2, 6}}}, {{I64, {3, 4}}}));
  expectKernel(singleKernel(fb::OpCode::Copy, {{F32, {2, 6}}}, {{F32, {13}}}),
               "kernel 0 (copy): input [2, 6] and result [13] have different "
               "element counts");
  expectKernel(singleKernel(fb::OpCode::Copy, {{F32, {2, 6}}}, {{BF16, {12}}}),
               "kernel 0 (copy): input is f32 but result is bf16");
  expectValid(singleKernel(fb::OpCode::Transpose, {{F32, {2, 3, 4}}},
                           {{F32, {4, 2, 3}}}, {2, 0, 1}));
  expectKernel(singleKernel(fb::OpCode::Transpose, {{F32, {2, 3, 4}}},
                            {{F32, {4, 2, 3}}}, {2, 0}),
               "kernel 0 (transpose): permutation of input [2, 3, 4]: has 2 "
               "int_attrs, expected 3");
  expectKernel(singleKernel(fb::OpCode::Transpose, {{F32, {2, 3, 4}}},
                            {{F32, {4, 2, 3}}}, {2, 0, 2}),
               "int_attrs [2, 0, 2] is not a permutation of 3 dimensions");
  expectKernel(singleKernel(fb::OpCode::Transpose, {{F32, {2, 3, 4}}},
                            {{F32, {4, 3, 2}}}, {2, 0, 1}),
               "result [4, 3, 2] should be [4, 2, 3]");
  expectValid(singleKernel(fb::OpCode::Slice, {{F32, {4, 10}}}, {{F32, {4, 5}}},
                           {1, 5, 5}));
  expectKernel(singleKernel(fb::OpCode::Slice, {{F32, {4, 10}}},
                            {{F32, {4, 5}}}, {1, 6, 5}),
               "kernel 0 (slice): slice [6, +5) of dimension 1 is outside "
               "input [4, 10]");
  expectKernel(singleKernel(fb::OpCode::Slice, {{F32, {4, 10}}},
                            {{F32, {4, 5}}}, {2, 0, 5}),
               "dimension 2 (int_attrs[0]) is outside input [4, 10]");
  expectValid(singleKernel(fb::OpCode::Repeat, {{F32, {2, 4, 3}}},
                           {{F32, {2, 8, 3}}}, {1, 2}));
  expectKernel(singleKernel(fb::OpCode::Repeat, {{F32, {2, 4, 3}}},
                            {{F32, {2, 4, 3}}}, {1, 0}),
               "repeats (int_attrs[1]) is 0, expected >= 1");
  expectValid(
      singleKernel(fb::OpCode::Cast, {{F32, {3, 4}}}, {{BF16, {3, 4}}}));
  expectKernel(singleKernel(fb::OpCode::Cast, {{F32, {3, 4}}}, {{I64, {3, 4}}}),
               "kernel 0 (cast): result is i64, expected f32, bf16 or f16");
}

TEST_F(KernelMeaningTest, InPlaceOnlyWhereTheKernelAllowsIt) {
  // gelu over its own input: the very same bytes, allowed.
  fb::ExecutableT exe =
      singleKernel(fb::OpCode::Gelu, {{F32, {4, 4}}}, {{F32, {4, 4}}});
  exe.buffers[1]->offset = 0;
  exe.inputs.clear();
  exe.outputs.clear();
  // The input must be written first: a copy from a third buffer.
  exe.buffers.push_back(makeBuffer(128, F32, {16}));
  exe.inputs.push_back(makeBinding("x", 2));
  exe.kernels.insert(exe.kernels.begin(),
                     makeKernel(fb::OpCode::Copy, {2}, {0}));
  exe.kernels[1]->results = {1};
  exe.outputs.push_back(makeBinding("y", 1));
  exe.arena_bytes = 192;
  expectValid(exe);
  // A cast cannot run in place; a partial overlap never can.
  fb::ExecutableT cast = exe;
  cast.kernels[1]->op = fb::OpCode::Cast;
  expectKernel(cast, "kernel 1 (cast): result (buffer 1, bytes [0, +64)) "
                     "overlaps input (buffer 0, bytes [0, +64)): this kernel "
                     "does not run in place");
  exe.buffers[1]->offset = 4;
  exe.buffers[1]->shape = {15};
  exe.buffers[1]->size = 60;
  exe.buffers[0]->shape = {15};
  exe.buffers[0]->size = 60;
  exe.buffers[2]->shape = {15};
  exe.buffers[2]->size = 60;
  expectKernel(exe, "kernel 1 (gelu): result (buffer 1, bytes [4, +60)) "
                    "overlaps input (buffer 0, bytes [0, +60))");
}

constexpr fb::DType U8 = fb::DType::U8;

TEST_F(KernelMeaningTest, BackwardKernels) {
  using Op = fb::OpCode;
  expectValid(singleKernel(Op::EmbeddingGrad, {{F32, {2, 3, 4}}, {I64, {2, 3}}},
                           {{F32, {10, 4}}}));
  expectKernel(singleKernel(Op::EmbeddingGrad,
                            {{F32, {2, 3, 5}}, {I64, {2, 3}}},
                            {{F32, {10, 4}}}),
               "kernel 0 (embedding_grad): dY [2, 3, 5] should be [2, 3, 4]");
  // linear_input_grad: dY [2, 5, 12] (n = 3 x 4) and an in_out weight.
  expectValid(singleKernel(Op::LinearInputGrad,
                           {{F32, {2, 5, 12}}, {F32, {8, 3, 4}}},
                           {{BF16, {2, 5, 8}}}));
  expectKernel(singleKernel(Op::LinearInputGrad,
                            {{F32, {2, 5, 12}}, {F32, {8, 3, 4}}},
                            {{F32, {2, 5, 7}}}),
               "kernel 0 (linear_input_grad): weight [8, 3, 4] (in_out) "
               "contracts 8 but input grad [2, 5, 7] has 7");
  expectValid(singleKernel(Op::LinearWeightGrad,
                           {{F32, {2, 5, 8}}, {F32, {2, 5, 6}}},
                           {{F32, {6, 8}}}, {}, {}, 1));
  expectKernel(singleKernel(Op::LinearWeightGrad,
                            {{F32, {2, 5, 8}}, {F32, {2, 4, 6}}},
                            {{F32, {6, 8}}}, {}, {}, 1),
               "kernel 0 (linear_weight_grad): dY [2, 4, 6] has 48 elements, "
               "expected m 10 x n 6");
  // linear_weight_grad_accumulate: the sum f32, of the result's shape, and
  // the result's very buffer.
  expectKernel(singleKernel(Op::LinearWeightGradAccumulate,
                            {{F32, {2, 5, 8}}, {F32, {2, 5, 6}}, {F32, {6, 8}}},
                            {{F32, {6, 8}}}, {}, {}, 1),
               "kernel 0 (linear_weight_grad_accumulate): weight grad is "
               "buffer 3 but weight grad is buffer 2: this kernel updates it "
               "in place");
  expectKernel(
      singleKernel(Op::LinearWeightGradAccumulate,
                   {{BF16, {2, 5, 8}}, {BF16, {2, 5, 6}}, {BF16, {6, 8}}},
                   {{BF16, {6, 8}}}, {}, {}, 1),
      "kernel 0 (linear_weight_grad_accumulate): weight grad is bf16, "
      "expected f32");
  expectKernel(singleKernel(Op::LinearWeightGradAccumulate,
                            {{F32, {2, 5, 8}}, {F32, {2, 5, 6}}, {F32, {8, 6}}},
                            {{F32, {6, 8}}}, {}, {}, 1),
               "kernel 0 (linear_weight_grad_accumulate): weight grad [8, 6] "
               "should be [6, 8]");
  expectValid(singleKernel(Op::SumTo, {{F32, {4, 6, 8}}}, {{F32, {6, 8}}}));
  expectKernel(singleKernel(Op::SumTo, {{F32, {4, 6, 8}}}, {{F32, {4, 8}}}),
               "kernel 0 (sum_to): result [4, 8] is not a suffix of input "
               "[4, 6, 8]");
  expectValid(singleKernel(Op::LayerNormInputGrad,
                           {{F32, {3, 8}}, {BF16, {3, 8}}, {F32, {8}}},
                           {{F32, {3, 8}}}, {}, {1e-5}));
  expectKernel(singleKernel(Op::LayerNormInputGrad,
                            {{F32, {3, 8}}, {F32, {3, 8}}, {F32, {7}}},
                            {{F32, {3, 8}}}, {}, {1e-5}),
               "kernel 0 (layer_norm_input_grad): weight [7] should be [8]");
  expectValid(singleKernel(Op::LayerNormParamGrad,
                           {{F32, {3, 8}}, {F32, {3, 8}}},
                           {{F32, {8}}, {F32, {8}}}, {}, {1e-5}));
  expectKernel(singleKernel(Op::RmsNormParamGrad,
                            {{F32, {3, 8}}, {F32, {3, 8}}}, {{F32, {8}}}, {},
                            {-1.0}),
               "kernel 0 (rms_norm_param_grad): epsilon (float_attrs[0]) is "
               "-1, expected a finite value >= 0");
  expectValid(singleKernel(Op::GeluGrad, {{F32, {5}}, {F32, {5}}}, {{F32, {5}}},
                           {}, {}, 1));
  expectKernel(singleKernel(Op::SiluGrad, {{F32, {5}}, {F32, {5}}},
                            {{F32, {5}}}, {}, {}, 1),
               "kernel 0 (silu_grad): flags 1 set bits this opcode does not "
               "define (allowed 0)");
  expectValid(
      singleKernel(Op::DropoutMask, {}, {{U8, {4, 5}}}, {3, 40}, {0.1}));
  expectKernel(singleKernel(Op::DropoutMask, {}, {{F32, {4, 5}}}, {3}, {0.1}),
               "kernel 0 (dropout_mask): mask is f32, expected u8");
  expectKernel(
      singleKernel(Op::DropoutMask, {}, {{U8, {4, 5}}}, {3, -1}, {0.1}),
      "kernel 0 (dropout_mask): first index (int_attrs[1]) is -1");
  expectValid(singleKernel(Op::ApplyMask, {{F32, {4, 5}}, {U8, {4, 5}}},
                           {{F32, {4, 5}}}, {}, {0.1}));
  expectKernel(singleKernel(Op::ApplyMask, {{F32, {4, 5}}, {U8, {5, 4}}},
                            {{F32, {4, 5}}}, {}, {1.0}),
               "kernel 0 (apply_mask): dropout rate (float_attrs[0]) is 1, "
               "expected [0, 1)");
  expectValid(singleKernel(Op::SoftmaxGrad,
                           {{F32, {2, 3, 5}}, {F32, {2, 3, 5}}},
                           {{F32, {2, 3, 5}}}, {}, {}, 1));
  expectKernel(singleKernel(Op::SoftmaxGrad,
                            {{F32, {2, 5, 3}}, {F32, {2, 5, 3}}},
                            {{F32, {2, 5, 3}}}, {}, {}, 1),
               "kernel 0 (softmax_grad): causal softmax output [2, 5, 3] has 5 "
               "queries but only 3 keys");
  std::vector<Tensor> attentionOperands = {{F32, {1, 4, 6, 8}},
                                           {F32, {1, 4, 6, 8}},
                                           {F32, {1, 2, 6, 8}},
                                           {F32, {1, 2, 6, 8}}};
  std::vector<Tensor> attentionGrads = {
      {F32, {1, 4, 6, 8}}, {F32, {1, 2, 6, 8}}, {F32, {1, 2, 6, 8}}};
  expectValid(singleKernel(Op::AttentionGrad, attentionOperands, attentionGrads,
                           {5, 0}, {0.35, 0.1}, 1));
  attentionGrads[1] = {F32, {1, 4, 6, 8}};
  expectKernel(singleKernel(Op::AttentionGrad, attentionOperands,
                            attentionGrads, {5}, {0.35, 0.1}, 1),
               "kernel 0 (attention_grad): key grad [1, 4, 6, 8] should be "
               "[1, 2, 6, 8]");
  // Sequence-major (flag bit 1): [b, s, heads, d], 4 heads and 2 kv heads
  // over 6 positions; the head-major shapes are then wrong.
  std::vector<Tensor> seqMajor = {{F32, {1, 6, 4, 8}},
                                  {F32, {1, 6, 4, 8}},
                                  {F32, {1, 6, 2, 8}},
                                  {F32, {1, 6, 2, 8}}};
  expectValid(singleKernel(Op::AttentionGrad, seqMajor,
                           {seqMajor[1], seqMajor[2], seqMajor[3]}, {5, 0},
                           {0.35, 0.1}, 3));
  expectValid(singleKernel(Op::Attention,
                           {seqMajor[1], seqMajor[2], seqMajor[3]},
                           {seqMajor[0]}, {5}, {0.35, 0.1}, 2));
  expectKernel(singleKernel(Op::Attention,
                            {seqMajor[1], seqMajor[2], seqMajor[3]},
                            {{F32, {1, 4, 6, 8}}}, {5}, {0.35, 0.1}, 2),
               "kernel 0 (attention): result [1, 4, 6, 8] should be "
               "[1, 6, 4, 8]");
  expectKernel(singleKernel(Op::Attention,
                            {seqMajor[1], attentionOperands[2], seqMajor[3]},
                            {seqMajor[0]}, {5}, {0.35, 0.1}, 2),
               "kernel 0 (attention): value [1, 6, 2, 8] should be "
               "[1, 2, 6, 8]");
  expectValid(singleKernel(Op::CrossEntropyGrad,
                           {{BF16, {2, 3, 10}}, {I64, {2, 3}}, {F32, {}}},
                           {{F32, {2, 3, 10}}}, {-100}));
  expectKernel(singleKernel(Op::CrossEntropyGrad,
                            {{F32, {2, 3, 10}}, {I64, {2, 3}}, {F32, {1}}},
                            {{F32, {2, 3, 10}}}, {-100}),
               "kernel 0 (cross_entropy_grad): loss_sum grad [1] should be []");
  expectValid(
      singleKernel(Op::Pad, {{F32, {4, 5, 6}}}, {{F32, {4, 10, 6}}}, {1, 2}));
  expectKernel(
      singleKernel(Op::Pad, {{F32, {4, 5, 6}}}, {{F32, {4, 10, 6}}}, {1, 6}),
      "kernel 0 (pad): input's 5 at offset 6 (int_attrs[1]) of "
      "dimension 1 lie outside result [4, 10, 6]");
  expectValid(singleKernel(Op::SumGroups, {{F32, {2, 12, 7}}},
                           {{F32, {2, 4, 7}}}, {1, 3}));
  expectKernel(singleKernel(Op::SumGroups, {{F32, {2, 12, 7}}},
                            {{F32, {2, 4, 7}}}, {1, 5}),
               "kernel 0 (sum_groups): repeats (int_attrs[1]) is 5, expected a "
               "positive divisor of input [2, 12, 7]'s dimension 1");
  expectValid(singleKernel(Op::Rotary, {{F32, {2, 4, 8}}}, {{F32, {2, 4, 8}}},
                           {0}, {10000.0}, 1));
  expectValid(
      singleKernel(Op::Slice, {{I64, {4, 5}}}, {{I64, {2, 5}}}, {0, 2, 2}));
  expectKernel(
      singleKernel(Op::Slice, {{I64, {4, 5}}}, {{F32, {2, 5}}}, {0, 2, 2}),
      "kernel 0 (slice): input is i64 but result is f32");
}

TEST_F(KernelMeaningTest, TrainingDriverAndOptimizerKernels) {
  using Op = fb::OpCode;
  expectValid(
      singleKernel(Op::CountTargets, {{I64, {2, 3}}}, {{I64, {}}}, {-100}));
  expectValid(singleKernel(Op::InverseCount, {{I64, {}}}, {{F32, {}}}));
  expectKernel(singleKernel(Op::InverseCount, {{F32, {}}}, {{F32, {}}}),
               "kernel 0 (inverse_count): count is f32, expected i64");
  expectValid(singleKernel(Op::SumSquares,
                           {{F32, {3}},
                            {BF16, {2, 2}},
                            {F32, {1}},
                            {F32, {5}},
                            {F32, {6}},
                            {F32, {7}},
                            {F32, {8}},
                            {F32, {9}}},
                           {{F32, {}}}));
  expectKernel(
      singleKernel(Op::SumSquares, {{F32, {3}}, {I64, {2}}}, {{F32, {}}}),
      "kernel 0 (sum_squares): operand 1 is i64, expected f32, bf16 "
      "or f16");
  expectValid(singleKernel(Op::ClipCoefficient, {{F32, {}}},
                           {{F32, {}}, {F32, {}}}, {}, {1.0}));
  expectKernel(singleKernel(Op::ClipCoefficient, {{F32, {}}},
                            {{F32, {}}, {F32, {}}}, {}, {-1.0}),
               "kernel 0 (clip_coefficient): max_norm (float_attrs[0]) is -1");
  expectValid(singleKernel(Op::LrSchedule, {{I64, {}}}, {{F32, {}}}, {2, 10},
                           {1e-3, 1e-4}, 1));
  expectKernel(singleKernel(Op::LrSchedule, {{I64, {}}}, {{F32, {}}}, {10, 10},
                            {1e-3, 1e-4}, 1),
               "kernel 0 (lr_schedule): cosine decay steps 10 (int_attrs[1]) "
               "do not exceed the warm-up steps 10");
  // param, grad, exp_avg, exp_avg_sq, lr, step -> param, exp_avg, exp_avg_sq.
  const std::vector<Tensor> adamwOperands = {{F32, {4}}, {F32, {4}}, {F32, {4}},
                                             {F32, {4}}, {F32, {}},  {I64, {}}};
  const std::vector<Tensor> adamwResults = {{F32, {4}}, {F32, {4}}, {F32, {4}}};
  // An update whose results are not its param and state operands.
  expectKernel(singleKernel(Op::AdamWUpdate, adamwOperands, adamwResults, {},
                            {0.9, 0.999, 1e-8, 0.01}),
               "kernel 0 (adamw_update): param is buffer 6 but param is buffer "
               "0: this kernel updates it in place");
  expectKernel(singleKernel(Op::SgdUpdate,
                            {{F32, {4}}, {F32, {4}}, {F32, {5}}, {F32, {}}},
                            {{F32, {4}}, {F32, {5}}}, {}, {0.9, 0.0}),
               "kernel 0 (sgd_update): momentum [5] should be [4]");
  expectKernel(singleKernel(Op::AdamWUpdate, adamwOperands, adamwResults, {},
                            {1.0, 0.999, 1e-8, 0.01}),
               "kernel 0 (adamw_update): beta1 (float_attrs[0]) is 1, expected "
               "[0, 1)");
}

/// The training model of TestExecutables.h, and what breaks it.
TEST_F(ExecutableTest, TrainingExecutables) {
  auto valid = [] {
    TrainingOptions options;
    options.microbatches = 2;
    options.dropout = 0.1;
    return tinyTrainingModel(options);
  };
  std::vector<uint8_t> image = fileImage(valid());
  LoadedExecutable loaded;
  Status s =
      loadExecutableFromBytes("t.tpcx", image.data(), image.size(), loaded);
  ASSERT_TRUE(s.isOk()) << s.message();
  fb::ExecutableT sgd = valid();
  {
    TrainingOptions options;
    options.optimizer = fb::OpCode::SgdUpdate;
    sgd = tinyTrainingModel(options);
  }
  image = fileImage(sgd);
  ASSERT_TRUE(
      loadExecutableFromBytes("t.tpcx", image.data(), image.size(), loaded));

  auto expect = [&](const std::function<void(fb::ExecutableT &)> &breakIt,
                    const std::string &expected) {
    fb::ExecutableT exe = valid();
    breakIt(exe);
    expectRefused(fileImage(exe), expected);
  };
  expect([](fb::ExecutableT &e) { e.state[0]->param = 99; },
         "state 0 ('exp_avg'): param 99 but the executable has 7 params");
  expect([](fb::ExecutableT &e) { e.state[1]->name = "exp_avg"; },
         "state 1 ('exp_avg') of param 'transformer.wte.weight': duplicate "
         "state name for this param");
  expect([](fb::ExecutableT &e) { e.state[0]->param = 1; },
         "state 0 ('exp_avg') of param 'transformer.ln_f.weight': buffer");
  expect([](fb::ExecutableT &e) { e.grads[0]->name = "nothing"; },
         "grad 0 ('nothing'): no param has this name");
  expect([](fb::ExecutableT &e) { e.grads[0]->buffer = e.grads[1]->buffer; },
         "grad 0 ('transformer.wte.weight'): buffer");
  expect(
      [](fb::ExecutableT &e) {
        for (auto &input : e.inputs)
          if (input->name == "step")
            input->buffer = e.outputs[1]->buffer; // an f32 scalar
      },
      "expected an i64 scalar");
  // A state buffer written by a kernel other than the optimizer.
  expect(
      [](fb::ExecutableT &e) {
        e.kernels.push_back(makeKernel(fb::OpCode::Copy, {e.grads[0]->buffer},
                                       {e.state[0]->buffer}));
      },
      "which only the optimizer updates in place");
  // One buffer for two states.
  expect([](fb::ExecutableT &e) { e.state[1]->buffer = e.state[0]->buffer; },
         "which is already state 0");
}

} // namespace
