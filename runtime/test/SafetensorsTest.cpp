#include "tpcrt/Safetensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

#include <unistd.h>

using namespace tpcrt;

namespace {

/// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcrt-safetensors-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  void writeBytes(const std::string &path, const std::string &bytes) const {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  /// Opens `bytes` both from a file (mmap) and from memory and expects both
  /// to fail with a message naming the file and containing `expected`.
  void expectRefused(const std::string &bytes, const std::string &expected) {
    std::string path = pathOf("bad.safetensors");
    writeBytes(path, bytes);
    SafetensorsFile file;
    Status s = SafetensorsFile::open(path, file);
    ASSERT_FALSE(s.isOk()) << "accepted; expected: " << expected;
    EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(expected), std::string::npos)
        << "message: " << s.message() << "\nexpected: " << expected;
    EXPECT_EQ(file.size(), 0u);

    SafetensorsFile memory;
    Status m = SafetensorsFile::fromBytes("mem", bytes.data(), bytes.size(),
                                          memory);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.message(), "mem: " + s.message().substr(path.size() + 2));
  }

  std::string dir;
};

/// A file image: length prefix (or `length` when given), header, data.
std::string image(const std::string &header, const std::string &data = "",
                  std::optional<uint64_t> claimed = std::nullopt) {
  uint64_t length = claimed ? *claimed : header.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>(length >> (8 * i));
  return bytes + header + data;
}

/// One F32 tensor "t" of shape `shape` at `offsets`, and `dataBytes` zeros.
std::string oneTensor(const std::string &shape, const std::string &offsets,
                      size_t dataBytes, const std::string &dtype = "F32") {
  return image(R"({"t":{"dtype":")" + dtype + R"(","shape":)" + shape +
                   R"(,"data_offsets":)" + offsets + "}}",
               std::string(dataBytes, '\0'));
}

template <typename T> TensorToWrite tensorOf(const std::vector<T> &values,
                                             DType dtype,
                                             std::vector<int64_t> shape) {
  TensorToWrite t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = values.data();
  t.numBytes = values.size() * sizeof(T);
  return t;
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

} // namespace

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  std::vector<float> f32 = {1.5f, -2.f, 3.25f, 0.f, 1e-30f, -7.f};
  std::vector<uint16_t> bf16 = {0x3F80, 0xC000, 0x4049, 0x7F80};
  std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x7BFF, 0x0001};
  std::vector<int64_t> i64 = {-100, 0, (int64_t)1 << 40};
  std::vector<float> scalar = {42.f};
  std::map<std::string, TensorToWrite> tensors = {
      {"model.f32", tensorOf(f32, DType::F32, {2, 3})},
      {"model.bf16", tensorOf(bf16, DType::BF16, {4})},
      {"model.f16", tensorOf(f16, DType::F16, {2, 2})},
      {"labels", tensorOf(i64, DType::I64, {1, 3})},
      {"loss", tensorOf(scalar, DType::F32, {})},
      {"empty", TensorToWrite{DType::F32, {0, 5}, nullptr, 0}},
  };
  std::string path = pathOf("w.safetensors");
  ASSERT_TRUE(writeSafetensors(path, tensors, {{"format", "pt"}, {"step", "7"}}));

  SafetensorsFile file;
  Status s = SafetensorsFile::open(path, file);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(file.names(),
            (std::vector<std::string>{"empty", "labels", "loss", "model.bf16",
                                      "model.f16", "model.f32"}));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{
                                 {"format", "pt"}, {"step", "7"}}));
  for (const auto &entry : tensors) {
    TensorView view;
    ASSERT_TRUE(file.get(entry.first, view));
    EXPECT_EQ(view.name, entry.first);
    EXPECT_EQ(view.dtype, entry.second.dtype) << entry.first;
    EXPECT_EQ(view.shape, entry.second.shape) << entry.first;
    ASSERT_EQ(view.numBytes, entry.second.numBytes) << entry.first;
    if (view.numBytes) {
      EXPECT_EQ(std::memcmp(view.data, entry.second.data, view.numBytes), 0);
    }
  }
  EXPECT_EQ(file.find("loss")->numElements, 1);
  EXPECT_EQ(file.find("empty")->numElements, 0);
  EXPECT_EQ(file.find("missing"), nullptr);
  TensorView view;
  Status missing = file.get("missing", view);
  EXPECT_EQ(missing.message(), path + ": no tensor 'missing'");

  std::vector<float> floats;
  ASSERT_TRUE(toFloat32(*file.find("model.f32"), floats));
  EXPECT_EQ(floats, f32);
  ASSERT_TRUE(toFloat32(*file.find("model.bf16"), floats));
  EXPECT_EQ(floats, (std::vector<float>{1.f, -2.f, 3.140625f, INFINITY}));
  ASSERT_TRUE(toFloat32(*file.find("model.f16"), floats));
  EXPECT_EQ(floats, (std::vector<float>{1.f, -2.f, 65504.f,
                                        std::ldexp(1.f, -24)}));
  std::vector<int64_t> ints;
  ASSERT_TRUE(toInt64(*file.find("labels"), ints));
  EXPECT_EQ(ints, i64);

  // No temporary file is left behind.
  size_t entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(SafetensorsTest, WritesTheReferenceLayout) {
  std::vector<float> a = {1, 2};
  std::vector<int32_t> b = {3};
  std::map<std::string, TensorToWrite> tensors = {
      {"b", tensorOf(b, DType::I32, {1})}, {"a", tensorOf(a, DType::F32, {2})}};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(tensors, {{"format", "pt"}}, bytes));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes[i];
  EXPECT_EQ(n % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + n);
  // Compact JSON, names in order, contiguous offsets, space padding.
  std::string expected =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}})";
  ASSERT_GE(header.size(), expected.size());
  EXPECT_EQ(header.substr(0, expected.size()), expected);
  EXPECT_EQ(header.find_first_not_of(' ', expected.size()), std::string::npos);
  EXPECT_EQ(bytes.size(), 8 + n + 12);

  // The file writer produces the same bytes.
  std::string path = pathOf("x.safetensors");
  ASSERT_TRUE(writeSafetensors(path, tensors, {{"format", "pt"}}));
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> fileBytes((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  EXPECT_EQ(fileBytes, bytes);
}

TEST_F(SafetensorsTest, WriterEscapesNamesAndReplacesFiles) {
  std::vector<float> one = {1};
  std::vector<float> two = {2};
  std::string name = "quote\" back\\ tab\t \xC3\xA9";
  std::string path = pathOf("r.safetensors");
  ASSERT_TRUE(writeSafetensors(path, {{name, tensorOf(one, DType::F32, {1})}}));
  ASSERT_TRUE(writeSafetensors(path, {{name, tensorOf(two, DType::F32, {1})}}));
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file));
  std::vector<float> values;
  ASSERT_NE(file.find(name), nullptr);
  ASSERT_TRUE(toFloat32(*file.find(name), values));
  EXPECT_EQ(values, two);

  // An empty file set is a valid file.
  ASSERT_TRUE(writeSafetensors(path, {}));
  ASSERT_TRUE(SafetensorsFile::open(path, file));
  EXPECT_EQ(file.size(), 0u);
}

TEST_F(SafetensorsTest, WriterRefusesInconsistentTensors) {
  std::vector<float> v = {1, 2, 3};
  std::string path = pathOf("bad.safetensors");
  Status s = writeSafetensors(path, {{"w", tensorOf(v, DType::F32, {2, 2})}});
  EXPECT_EQ(s.message(), path + ": tensor 'w': shape [2, 2] of F32 needs 16 "
                                "bytes, but 12 were given");
  s = writeSafetensors(path, {{"w", tensorOf(v, DType::F32, {-3})}});
  EXPECT_EQ(s.message(), path + ": tensor 'w': invalid shape [-3]");
  s = writeSafetensors(path, {{"__metadata__", tensorOf(v, DType::F32, {3})}});
  EXPECT_NE(s.message().find("reserved"), std::string::npos);
  s = writeSafetensors(path, {{"bad\xFF", tensorOf(v, DType::F32, {3})}});
  EXPECT_NE(s.message().find("not valid UTF-8"), std::string::npos);
  s = writeSafetensors(path, {}, {{"k", "\xC0\x80"}});
  EXPECT_NE(s.message().find("not valid UTF-8"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));

  std::string nowhere = pathOf("no/such/dir/w.safetensors");
  s = writeSafetensors(nowhere, {{"w", tensorOf(v, DType::F32, {3})}});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("cannot create"), std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

TEST(SafetensorsConversionTest, KnownHalfValues) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(bitsOf(halfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(halfToFloat(0x7C00), INFINITY);
  EXPECT_EQ(halfToFloat(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7C01)));

  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // Tie to even: infinity.
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00); // Tie: even.
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);       // Tie: even.
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);       // Tie: even.
  EXPECT_EQ(floatToHalf(std::ldexp(1023.5f, -24)), 0x0400);    // To normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(NAN) & 0x7FFF, 0x7E00);
}

TEST(SafetensorsConversionTest, KnownBFloat16Values) {
  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(bfloat16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(bfloat16ToFloat(0x7F7F), 3.3895313892515355e38f);
  EXPECT_EQ(bfloat16ToFloat(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bfloat16ToFloat(0x7F80), INFINITY);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0x7FC0)));

  EXPECT_EQ(floatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBFloat16(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80); // Tie.
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(floatToBFloat16(3.4e38f), 0x7F80); // Rounds past the largest.
  EXPECT_EQ(floatToBFloat16(-INFINITY), 0xFF80);
  EXPECT_EQ(floatToBFloat16(NAN), 0x7FC0);
}

TEST(SafetensorsConversionTest, EveryHalfAndBFloat16RoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    auto bits = static_cast<uint16_t>(b);
    float h = halfToFloat(bits);
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(h))));
    } else {
      ASSERT_EQ(floatToHalf(h), bits) << std::hex << b;
    }
    float bf = bfloat16ToFloat(bits);
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(bf))));
    } else {
      ASSERT_EQ(floatToBFloat16(bf), bits) << std::hex << b;
    }
  }
}

TEST(SafetensorsConversionTest, NarrowingPicksTheNearest) {
  // Between consecutive representable values the result must be the nearer
  // one, compared in double precision.
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f;
    uint32_t b = any(rng);
    std::memcpy(&f, &b, 4);
    if (std::isnan(f))
      continue;
    double x = f;
    uint16_t h = floatToHalf(f);
    double got = halfToFloat(h);
    if (std::isfinite(got)) {
      double up = halfToFloat(static_cast<uint16_t>(h + 1));
      double down = halfToFloat(static_cast<uint16_t>(h - 1));
      if ((h & 0x7FFF) != 0 && (h & 0x7FFF) != 0x7BFF && std::isfinite(up)) {
        ASSERT_LE(std::fabs(x - got),
                  std::min(std::fabs(x - up), std::fabs(x - down)))
            << f;
      }
    }
    uint16_t bf = floatToBFloat16(f);
    double gotBf = bfloat16ToFloat(bf);
    if (std::isfinite(gotBf)) {
      ASSERT_LE(std::fabs(x - gotBf),
                std::max(std::ldexp(std::fabs(x), -8), std::ldexp(1.0, -134)))
          << f;
    }
  }
}

TEST(SafetensorsConversionTest, DTypeNames) {
  for (const char *name : {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32",
                           "U64", "I64", "F16", "BF16", "F32", "F64",
                           "F8_E4M3", "F8_E5M2", "F8_E8M0", "C64"}) {
    DType d;
    ASSERT_TRUE(parseDType(name, d)) << name;
    EXPECT_STREQ(dtypeName(d), name);
  }
  DType d;
  EXPECT_FALSE(parseDType("F4", d));
  EXPECT_FALSE(parseDType("f32", d));
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
}

TEST(SafetensorsConversionTest, IntegerAndRefusedConversions) {
  std::vector<int32_t> i32 = {-5, 7};
  std::vector<uint8_t> u8 = {0, 255};
  std::vector<uint8_t> boolean = {0, 1, 2};
  std::vector<uint64_t> u64 = {1, ~0ull};
  auto view = [](const std::string &name, DType dtype, const void *data,
                 int64_t n) {
    TensorView v;
    v.name = name;
    v.dtype = dtype;
    v.shape = {n};
    v.numElements = n;
    v.data = static_cast<const uint8_t *>(data);
    v.numBytes = n * dtypeSize(dtype);
    return v;
  };
  std::vector<int64_t> ints;
  ASSERT_TRUE(toInt64(view("a", DType::I32, i32.data(), 2), ints));
  EXPECT_EQ(ints, (std::vector<int64_t>{-5, 7}));
  ASSERT_TRUE(toInt64(view("b", DType::U8, u8.data(), 2), ints));
  EXPECT_EQ(ints, (std::vector<int64_t>{0, 255}));
  ASSERT_TRUE(toInt64(view("c", DType::Bool, boolean.data(), 3), ints));
  EXPECT_EQ(ints, (std::vector<int64_t>{0, 1, 1}));
  Status s = toInt64(view("d", DType::U64, u64.data(), 2), ints);
  EXPECT_EQ(s.message(),
            "tensor 'd': element 1 (18446744073709551615) does not fit int64");
  std::vector<float> f = {1};
  s = toInt64(view("e", DType::F32, f.data(), 1), ints);
  EXPECT_EQ(s.message(), "tensor 'e': dtype F32 does not convert to int64 (an "
                         "integer or BOOL dtype expected)");
  std::vector<float> floats;
  s = toFloat32(view("a", DType::I32, i32.data(), 2), floats);
  EXPECT_EQ(s.message(), "tensor 'a': dtype I32 does not convert to float32 "
                         "(F32, F16, BF16 or F64 expected)");
  std::vector<double> f64 = {0.5, -1e300};
  ASSERT_TRUE(toFloat32(view("g", DType::F64, f64.data(), 2), floats));
  EXPECT_EQ(floats, (std::vector<float>{0.5f, -INFINITY}));
}

TEST(SafetensorsConversionTest, ElementCounts) {
  int64_t n;
  ASSERT_TRUE(numElementsOf({}, n));
  EXPECT_EQ(n, 1);
  ASSERT_TRUE(numElementsOf({3, 0, 5}, n));
  EXPECT_EQ(n, 0);
  ASSERT_TRUE(numElementsOf({int64_t(1) << 62, int64_t(1) << 62, 0}, n));
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(numElementsOf({int64_t(1) << 40, int64_t(1) << 40}, n));
  EXPECT_FALSE(numElementsOf({2, -1}, n));
}

//===----------------------------------------------------------------------===//
// Hostile files
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, RefusesBadLengths) {
  expectRefused("", "file size 0 is too small for the 8-byte header length");
  expectRefused(std::string("\x02\0\0\0\0", 5), "file size 5 is too small");
  // A 120-byte file that claims a 1000000-byte header.
  expectRefused(image("{}", std::string(110, ' '), 1000000),
                "header length 1000000 exceeds file size 120");
  expectRefused(image("{}", "", 3), "header length 3 exceeds file size 10");
  expectRefused(image("{}", "", uint64_t(1) << 63),
                "header length 9223372036854775808 exceeds the limit of "
                "100000000 bytes");
  expectRefused(image("{}", "", ~uint64_t(0)),
                "header length 18446744073709551615 exceeds the limit");
  expectRefused(image("", ""), "header is not valid JSON");
}

TEST_F(SafetensorsTest, RefusesBadJson) {
  expectRefused(image(R"({"t": )"), "header is not valid JSON: ");
  expectRefused(image(R"({"t":{}} x)"), "header is not valid JSON: ");
  expectRefused(image("{\"t\xFF\":{}}"), "header is not valid JSON: ");
  expectRefused(image(R"([1, 2])"), "header is not a JSON object");
  expectRefused(image(R"("x")"), "header is not a JSON object");
  expectRefused(image(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                      R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
                      std::string(4, '\0')),
                "header is not valid JSON: duplicate key 'a'");
  expectRefused(image(std::string(100, '[') + std::string(100, ']')),
                "nesting deeper than 32 levels");
  expectRefused(image(R"({"__metadata__": [1]})"),
                "\"__metadata__\" is not an object");
  expectRefused(image(R"({"__metadata__": {"total_size": 12}})"),
                "\"__metadata__\" value of 'total_size' is not a string: 12");
}

TEST_F(SafetensorsTest, RefusesBadEntries) {
  expectRefused(image(R"({"t": 3})"), "tensor 't': entry is not an object: 3");
  expectRefused(image(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})"),
                "tensor 't': missing \"dtype\"");
  expectRefused(image(R"({"t": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})"),
                "tensor 't': \"dtype\" is not a string: 4");
  expectRefused(oneTensor("[1]", "[0, 1]", 1, "F4"),
                "tensor 't': unknown dtype 'F4'");
  expectRefused(oneTensor("[1]", "[0, 4]", 4, "float32"),
                "tensor 't': unknown dtype 'float32'");
  expectRefused(image(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})"),
                "tensor 't': missing \"shape\"");
  expectRefused(image(R"({"t": {"dtype": "F32", "shape": [1]}})"),
                "tensor 't': missing \"data_offsets\"");
  expectRefused(oneTensor("3", "[0, 12]", 12),
                "tensor 't': \"shape\" is not an array: 3");
  expectRefused(oneTensor("[2, -3]", "[0, 24]", 24),
                "tensor 't': \"shape\" [2,-3]: dimension 1 is not a "
                "non-negative integer");
  expectRefused(oneTensor("[2.5]", "[0, 4]", 4),
                "dimension 0 is not a non-negative integer");
  expectRefused(oneTensor("[\"2\"]", "[0, 8]", 8),
                "dimension 0 is not a non-negative integer");
  expectRefused(oneTensor("[18446744073709551615]", "[0, 8]", 8),
                "dimension 0 is not a non-negative integer");
  expectRefused(oneTensor("[1e30]", "[0, 8]", 8),
                "dimension 0 is not a non-negative integer");
  expectRefused(oneTensor("[1099511627776, 1099511627776]", "[0, 8]", 8),
                "tensor 't': shape [1099511627776, 1099511627776] of F32 "
                "overflows: too many elements");
  // 2^62 elements fit int64, but not their 2^64 bytes.
  expectRefused(oneTensor("[2147483648, 2147483648]", "[0, 8]", 8),
                "overflows: too many elements");
}

TEST_F(SafetensorsTest, RefusesBadOffsets) {
  const char *notTwo = "tensor 't': \"data_offsets\" is not two non-negative "
                       "integers: ";
  expectRefused(oneTensor("[1]", "[0]", 4), std::string(notTwo) + "[0]");
  expectRefused(oneTensor("[1]", "[0, 4, 8]", 8), notTwo);
  expectRefused(oneTensor("[1]", "[\"0\", 4]", 4), notTwo);
  expectRefused(oneTensor("[1]", "[-4, 0]", 4), notTwo);
  expectRefused(oneTensor("[1]", "{\"0\": 4}", 4), notTwo);
  expectRefused(oneTensor("[1]", "[0.0, 4]", 4), notTwo);
  expectRefused(oneTensor("[1]", "[8, 4]", 8),
                "tensor 't': data_offsets [8, 4]: begin is after end");
  expectRefused(oneTensor("[2, 3]", "[0, 24]", 10),
                "tensor 't': data_offsets [0, 24] end beyond the data section "
                "of 10 bytes");
  expectRefused(oneTensor("[1]", "[18446744073709551611, 18446744073709551615]",
                          4),
                "end beyond the data section of 4 bytes");
  expectRefused(oneTensor("[2, 3]", "[0, 20]", 24),
                "tensor 't': data_offsets [0, 20] hold 20 bytes, but shape "
                "[2, 3] of F32 needs 24");
  expectRefused(image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                      std::string(16, '\0')),
                "tensors 'a' [0, 16) and 'b' [8, 16) overlap");
}

TEST_F(SafetensorsTest, RefusesWhatIsNotAFile) {
  SafetensorsFile file;
  Status s = SafetensorsFile::open(pathOf("absent.safetensors"), file);
  EXPECT_EQ(s.message(), pathOf("absent.safetensors") +
                             ": cannot open: No such file or directory");
  s = SafetensorsFile::open(dir, file);
  EXPECT_EQ(s.message(), dir + ": not a regular file");
}

TEST_F(SafetensorsTest, AcceptsEdgeCases) {
  SafetensorsFile file;
  // Space padding, zero-size tensors where the data section is (before,
  // between and after the others), extra fields in an entry.
  std::string bytes = image(
      R"({"e":{"dtype":"BF16","shape":[0],"data_offsets":[99,99]},)"
      R"("s":{"dtype":"I64","shape":[],"data_offsets":[0,8],"x":1},)"
      R"("m":{"dtype":"U8","shape":[0],"data_offsets":[8,8]},)"
      R"("u":{"dtype":"U32","shape":[3],"data_offsets":[8,20]},)"
      R"("z":{"dtype":"F8_E4M3","shape":[2,0,7],"data_offsets":[0,0]}}   )",
      std::string(20, '\x01'));
  Status s =
      SafetensorsFile::fromBytes("edge", bytes.data(), bytes.size(), file);
  // [99, 99] is past the 20-byte data section.
  EXPECT_EQ(s.message(),
            "edge: tensor 'e': data_offsets [99, 99] end beyond "
            "the data section of 20 bytes: the file has " +
                std::to_string(bytes.size()) + " bytes, its header describes " +
                std::to_string(bytes.size() + 79) + " (truncated?)");
  std::string fixed = bytes;
  fixed.replace(fixed.find("[99,99]"), 7, "[20,20]");
  s = SafetensorsFile::fromBytes("edge", fixed.data(), fixed.size(), file);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(file.size(), 5u);
  std::vector<int64_t> ints;
  ASSERT_TRUE(toInt64(*file.find("s"), ints));
  EXPECT_EQ(ints, (std::vector<int64_t>{0x0101010101010101}));
  ASSERT_TRUE(toInt64(*file.find("u"), ints));
  EXPECT_EQ(ints, (std::vector<int64_t>(3, 0x01010101)));
  EXPECT_EQ(file.find("z")->numElements, 0);

  std::string empty = image("{}");
  ASSERT_TRUE(
      SafetensorsFile::fromBytes("e", empty.data(), empty.size(), file));
  EXPECT_EQ(file.size(), 0u);
  EXPECT_TRUE(file.metadata().empty());
}

// As the reference implementation: the tensors, in offset order, cover the
// data section exactly.
TEST_F(SafetensorsTest, RefusesGapsOverlapsAndTrailingBytes) {
  auto two = [](const std::string &a, const std::string &b, size_t bytes) {
    return image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a +
                     R"(},"b":{"dtype":"F32","shape":[2],"data_offsets":)" + b +
                     "}}",
                 std::string(bytes, '\0'));
  };
  const std::string exactly =
      " in the data section (safetensors requires the tensors to cover it "
      "exactly)";
  expectRefused(two("[0,8]", "[16,24]", 24),
                "tensors 'a' [0, 8) and 'b' [16, 24) leave the gap [8, 16)" +
                    exactly);
  expectRefused(two("[8,16]", "[16,24]", 24),
                "tensor 'a' [8, 16) leaves the gap [0, 8)" + exactly);
  expectRefused(two("[0,8]", "[4,12]", 12),
                "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  expectRefused(two("[0,8]", "[8,16]", 20),
                "4 trailing bytes [16, 20) after the last tensor 'b' [8, 16) "
                "(safetensors requires the tensors to cover the data section "
                "exactly)");
  expectRefused(image("{}", "xyz"),
                "3 trailing bytes [0, 3) after the header, which has no "
                "tensors");
  // A zero-size tensor inside another one is where no tensor starts.
  expectRefused(
      image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
            std::string(8, '\0')),
      "tensors 'a' [0, 8) and 'e' [4, 4) overlap");
  // The file is shorter than its header says.
  expectRefused(two("[0,8]", "[8,16]", 12),
                "tensor 'b': data_offsets [8, 16] end beyond the data section "
                "of 12 bytes");
  std::string good = two("[0,8]", "[8,16]", 16);
  SafetensorsFile file;
  EXPECT_TRUE(SafetensorsFile::fromBytes("ok", good.data(), good.size(), file));
}

// A file whose header promises more bytes than it has (written, then cut
// short) is refused with the offsets; a file cut short after it was opened
// does not fault (SIGBUS) the views, which hold what was read.
TEST_F(SafetensorsTest, TruncatedFilesAreErrorsNotSignals) {
  std::vector<float> big(1 << 18); // 1 MiB: many pages
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i);
  std::vector<float> small = {1, 2, 3};
  std::string path = pathOf("t.safetensors");
  auto writeFile = [&] {
    return writeSafetensors(path,
                            {{"a.big", tensorOf(big, DType::F32, {512, 512})},
                             {"b.small", tensorOf(small, DType::F32, {3})}});
  };
  ASSERT_TRUE(writeFile());
  uint64_t size = std::filesystem::file_size(path);
  uint64_t dataBytes = big.size() * 4 + small.size() * 4;
  uint64_t headerEnd = size - dataBytes;

  // Cut right after the header, then inside the first tensor, then by one
  // byte.
  for (uint64_t keep : {headerEnd, headerEnd + 4096, size - 1}) {
    ASSERT_TRUE(writeFile());
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(keep)), 0);
    SafetensorsFile file;
    Status s = SafetensorsFile::open(path, file);
    ASSERT_FALSE(s) << keep;
    EXPECT_EQ(s.message(), path + ": tensor 'b.small': data_offsets [" +
                               std::to_string(dataBytes - 12) + ", " +
                               std::to_string(dataBytes) +
                               "] end beyond the data section of " +
                               std::to_string(keep - headerEnd) +
                               " bytes: the file has " + std::to_string(keep) +
                               " bytes, its header describes " +
                               std::to_string(size) + " (truncated?)");
    ShardedSafetensors sharded;
    EXPECT_FALSE(ShardedSafetensors::open(path, sharded));
  }

  // Opened whole, then truncated in place (not replaced by rename): the
  // views still read every byte, as it was.
  ASSERT_TRUE(writeFile());
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file));
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  std::vector<float> values;
  ASSERT_TRUE(toFloat32(*file.find("a.big"), values));
  EXPECT_EQ(values, big);
  ASSERT_TRUE(toFloat32(*file.find("b.small"), values));
  EXPECT_EQ(values, small);
}

TEST_F(SafetensorsTest, SurvivesTruncationAndCorruption) {
  std::vector<float> a(10, 1.f);
  std::vector<int64_t> b = {1, 2, 3};
  std::vector<uint8_t> good;
  ASSERT_TRUE(serializeSafetensors({{"a", tensorOf(a, DType::F32, {2, 5})},
                                    {"b", tensorOf(b, DType::I64, {3})}},
                                   {{"format", "pt"}}, good));
  // Every truncation is refused (the data is needed to its last byte).
  for (size_t n = 0; n < good.size(); ++n) {
    SafetensorsFile file;
    EXPECT_FALSE(SafetensorsFile::fromBytes("t", good.data(), n, file).isOk())
        << n;
  }
  // Random byte changes never crash; whatever is accepted stays in bounds.
  std::mt19937 rng(42);
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> bytes = good;
    int changes = 1 + iter % 4;
    for (int c = 0; c < changes; ++c)
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    SafetensorsFile file;
    if (!SafetensorsFile::fromBytes("f", bytes.data(), bytes.size(), file))
      continue;
    // Touch every byte of every view (a sanitizer build turns an
    // out-of-bounds view into a failure).
    unsigned sum = 0;
    for (const auto &entry : file.tensors()) {
      const TensorView &v = entry.second;
      ASSERT_EQ(v.numBytes, v.numElements * dtypeSize(v.dtype));
      for (uint64_t i = 0; i < v.numBytes; ++i)
        sum += v.data[i];
    }
    (void)sum;
  }
}

//===----------------------------------------------------------------------===//
// Sharded checkpoints
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, OpensAShardedCheckpoint) {
  std::vector<float> wte = {1, 2, 3, 4};
  std::vector<uint16_t> h0 = {0x3F80, 0x4000};
  std::vector<float> lnf = {5};
  ASSERT_TRUE(writeSafetensors(
      pathOf("model-00001-of-00002.safetensors"),
      {{"wte", tensorOf(wte, DType::F32, {2, 2})},
       {"h.0.w", tensorOf(h0, DType::BF16, {2})}}));
  ASSERT_TRUE(writeSafetensors(pathOf("model-00002-of-00002.safetensors"),
                               {{"ln_f", tensorOf(lnf, DType::F32, {1})},
                                {"unlisted", tensorOf(lnf, DType::F32, {1})}}));
  std::string index = pathOf("model.safetensors.index.json");
  writeBytes(index, R"({"metadata": {"total_size": 28},
    "weight_map": {"wte": "model-00001-of-00002.safetensors",
                   "h.0.w": "model-00001-of-00002.safetensors",
                   "ln_f": "model-00002-of-00002.safetensors"}})");
  ShardedSafetensors sharded;
  Status s = ShardedSafetensors::open(index, sharded);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(sharded.names(),
            (std::vector<std::string>{"h.0.w", "ln_f", "wte"}));
  EXPECT_EQ(sharded.metadata().at("total_size"), "28");
  EXPECT_EQ(sharded.fileOf("ln_f"), pathOf("model-00002-of-00002.safetensors"));
  EXPECT_EQ(sharded.fileOf("nope"), "");
  EXPECT_EQ(sharded.find("unlisted"), nullptr);
  std::vector<float> values;
  TensorView view;
  ASSERT_TRUE(sharded.get("h.0.w", view));
  ASSERT_TRUE(toFloat32(view, values));
  EXPECT_EQ(values, (std::vector<float>{1, 2}));
  ASSERT_TRUE(toFloat32(*sharded.find("ln_f"), values));
  EXPECT_EQ(values, lnf);
  EXPECT_EQ(sharded.get("nope", view).message(), index + ": no tensor 'nope'");

  // Moving keeps the views valid.
  ShardedSafetensors moved = std::move(sharded);
  ASSERT_TRUE(toFloat32(*moved.find("wte"), values));
  EXPECT_EQ(values, wte);

  // A single file opens through the same interface.
  ShardedSafetensors single;
  ASSERT_TRUE(ShardedSafetensors::open(
      pathOf("model-00002-of-00002.safetensors"), single));
  EXPECT_EQ(single.names(), (std::vector<std::string>{"ln_f", "unlisted"}));
}

TEST_F(SafetensorsTest, RefusesBrokenIndexes) {
  std::vector<float> w = {1};
  ASSERT_TRUE(writeSafetensors(pathOf("a.safetensors"),
                               {{"w", tensorOf(w, DType::F32, {1})}}));
  std::string index = pathOf("model.safetensors.index.json");
  ShardedSafetensors sharded;
  auto refuse = [&](const std::string &text, const std::string &expected) {
    writeBytes(index, text);
    Status s = ShardedSafetensors::openIndex(index, sharded);
    ASSERT_FALSE(s.isOk()) << text;
    EXPECT_EQ(s.message(), index + ": " + expected);
    EXPECT_EQ(sharded.size(), 0u);
  };
  refuse(R"({"weight_map": {"w": "a.safetensors", "v": "b.safetensors"}})",
         "tensor 'v' is mapped to 'b.safetensors': " + pathOf("b.safetensors") +
             ": cannot open: No such file or directory");
  refuse(R"({"weight_map": {"x": "a.safetensors"}})",
         "tensor 'x' is mapped to 'a.safetensors', which has no such tensor");
  refuse(R"({"weight_map": {"w": 3}})",
         "tensor 'w' is mapped to 3, not a file name");
  refuse(R"({"weight_map": {"w": ""}})",
         "tensor 'w' is mapped to an empty file name");
  refuse(R"({"metadata": {}})", "missing \"weight_map\"");
  refuse(R"({"weight_map": []})", "\"weight_map\" is not an object");
  refuse(R"([])", "not a JSON object");
  refuse(R"({"weight_map": )",
         "not valid JSON: parse error at line 1, column 16: syntax error "
         "while parsing value - unexpected end of input; expected '[', '{', "
         "or a literal");

  // A shard that is itself corrupt: the message names the index entry too.
  writeBytes(pathOf("c.safetensors"), image("1"));
  refuse(R"({"weight_map": {"w": "c.safetensors"}})",
         "tensor 'w' is mapped to 'c.safetensors': " + pathOf("c.safetensors") +
             ": header is not a JSON object");
}
