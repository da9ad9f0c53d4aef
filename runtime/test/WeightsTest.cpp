#include "tpcrt/Weights.h"
#include "TestExecutables.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

/// One named tensor to write, its values given as floats.
struct Source {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

class WeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcrt-weights-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  /// Writes `sources`, each converted to its dtype, to `name` in dir.
  std::string write(const std::string &name,
                    const std::vector<Source> &sources) {
    std::vector<std::vector<uint8_t>> storage;
    std::map<std::string, TensorToWrite> tensors;
    for (const Source &src : sources) {
      std::vector<uint8_t> bytes(src.values.size() * dtypeSize(src.dtype));
      for (size_t i = 0; i < src.values.size(); ++i) {
        float v = src.values[i];
        if (src.dtype == DType::F32) {
          std::memcpy(&bytes[4 * i], &v, 4);
        } else if (src.dtype == DType::I64) {
          auto n = static_cast<int64_t>(v);
          std::memcpy(&bytes[8 * i], &n, 8);
        } else if (src.dtype == DType::I32) {
          auto n = static_cast<int32_t>(v);
          std::memcpy(&bytes[4 * i], &n, 4);
        } else {
          uint16_t bits =
              src.dtype == DType::BF16 ? floatToBFloat16(v) : floatToHalf(v);
          std::memcpy(&bytes[2 * i], &bits, 2);
        }
      }
      storage.push_back(std::move(bytes));
      tensors[src.name] = {src.dtype, src.shape, storage.back().data(),
                           storage.back().size()};
    }
    std::string path = pathOf(name);
    EXPECT_TRUE(writeSafetensors(path, tensors));
    return path;
  }

  std::vector<uint8_t> payload;

  void create(const fb::ExecutableT &exe, Interpreter &interpreter) {
    payload = pack(exe);
    const fb::Executable *root = fb::GetExecutable(payload.data());
    ASSERT_TRUE(checkExecutable(*root));
    ASSERT_TRUE(Interpreter::create(*root, createCpuDevice(), interpreter));
  }

  std::string dir;
};

std::vector<float> iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(i) - 1.0f;
  return v;
}

std::vector<float> readFloats(Interpreter &interpreter, uint32_t buffer) {
  const TensorRef &t = interpreter.program().buffers[buffer];
  std::vector<uint8_t> bytes(t.bytes);
  EXPECT_TRUE(interpreter.readBuffer(buffer, bytes.data(), bytes.size()));
  std::vector<float> out(static_cast<size_t>(t.elements));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == fb::DType::F32) {
      std::memcpy(&out[i], &bytes[4 * i], 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &bytes[2 * i], 2);
      out[i] = t.dtype == fb::DType::BF16 ? bfloat16ToFloat(bits)
                                          : halfToFloat(bits);
    }
  }
  return out;
}

/// Two params: "transformer.a" [2, 3] viewed as [6] in `dtype`, and "b" [4].
fb::ExecutableT twoParams(fb::DType dtype) {
  ExecutableBuilder b;
  b.param("transformer.a", dtype, {6}, fb::ParamInit::Normal, {2, 3});
  b.param("b", dtype, {4});
  return b.finish();
}

TEST_F(WeightsTest, PrefixRulesAndExtraTensors) {
  Interpreter interpreter;
  create(twoParams(fb::DType::F32), interpreter);
  // "a" without the prefix, "b" with it (both rules), and extras.
  std::string path =
      write("w.safetensors", {{"a", DType::F32, {2, 3}, iota(6, 0.5f)},
                              {"transformer.b", DType::F32, {4}, iota(4, 2)},
                              {"h.0.attn.bias", DType::F32, {2, 2}, iota(4, 1)},
                              {"lm_head.weight", DType::I64, {1}, {7}}});
  Status s = loadWeights(path, interpreter);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(readFloats(interpreter, 0), iota(6, 0.5f));
  EXPECT_EQ(readFloats(interpreter, 1), iota(4, 2));

  // An exact match wins over a prefixed one.
  path = write("both.safetensors",
               {{"a", DType::F32, {2, 3}, iota(6, 3)},
                {"transformer.a", DType::F32, {2, 3}, iota(6, 4)},
                {"b", DType::F32, {4}, iota(4, 5)},
                {"transformer.b", DType::F32, {4}, iota(4, 6)}});
  ASSERT_TRUE(loadWeights(path, interpreter));
  EXPECT_EQ(readFloats(interpreter, 0), iota(6, 4));
  EXPECT_EQ(readFloats(interpreter, 1), iota(4, 5));
}

TEST_F(WeightsTest, DTypesConvertToTheBuffer) {
  std::vector<float> values{1.0f + 0x1p-8f, -3.0f, 1e-3f, 65504.0f, 0.1f, 7.0f};
  struct Case {
    DType source;
    fb::DType target;
  };
  for (Case c :
       {Case{DType::F32, fb::DType::BF16}, Case{DType::BF16, fb::DType::F32},
        Case{DType::F16, fb::DType::BF16}, Case{DType::F32, fb::DType::F16},
        Case{DType::BF16, fb::DType::BF16}}) {
    Interpreter interpreter;
    create(twoParams(c.target), interpreter);
    std::string path =
        write("w.safetensors", {{"transformer.a", c.source, {2, 3}, values},
                                {"b", c.source, {4}, iota(4, 1)}});
    ASSERT_TRUE(loadWeights(path, interpreter));
    // What the checkpoint holds, rounded once more to the buffer's type.
    for (size_t i = 0; i < values.size(); ++i) {
      float stored = values[i];
      if (c.source == DType::BF16)
        stored = bfloat16ToFloat(floatToBFloat16(stored));
      if (c.source == DType::F16)
        stored = halfToFloat(floatToHalf(stored));
      if (c.target == fb::DType::BF16)
        stored = bfloat16ToFloat(floatToBFloat16(stored));
      if (c.target == fb::DType::F16)
        stored = halfToFloat(floatToHalf(stored));
      EXPECT_EQ(readFloats(interpreter, 0)[i], stored)
          << dtypeName(c.source) << " element " << i;
    }
  }
}

TEST_F(WeightsTest, ShardedCheckpoint) {
  Interpreter interpreter;
  create(twoParams(fb::DType::F32), interpreter);
  write("model-00001-of-00002.safetensors",
        {{"transformer.a", DType::F32, {2, 3}, iota(6, 7)}});
  write("model-00002-of-00002.safetensors",
        {{"b", DType::BF16, {4}, iota(4, 8)}});
  std::string index = pathOf("model.safetensors.index.json");
  std::ofstream(index) << R"({"metadata": {"total_size": 32}, "weight_map": {
      "transformer.a": "model-00001-of-00002.safetensors",
      "b": "model-00002-of-00002.safetensors"}})";
  Status s = loadWeights(index, interpreter);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(readFloats(interpreter, 0), iota(6, 7));
  EXPECT_EQ(readFloats(interpreter, 1), iota(4, 8));
}

TEST_F(WeightsTest, MissingWrongShapeAndWrongDType) {
  Interpreter interpreter;
  create(tinyModel(), interpreter);
  std::vector<Source> sources;
  for (const ParamRef &param : interpreter.program().params) {
    int64_t n = 1;
    for (int64_t d : param.hfShape)
      n *= d;
    if (param.hfName != "transformer.ln_f.weight")
      sources.push_back({param.hfName.substr(12), DType::F32, param.hfShape,
                         iota(static_cast<size_t>(n), 0.01f)});
  }
  std::string path = pathOf("w.safetensors");
  // Writes `sources` and loads them; the error, or "loaded".
  auto loadError = [&] {
    Status s = loadWeights(write("w.safetensors", sources), interpreter);
    return s ? std::string("loaded") : s.message();
  };
  EXPECT_EQ(loadError(), path + ": missing tensor 'transformer.ln_f.weight'");

  sources.push_back({"ln_f.weight", DType::F32, {4, 2}, iota(8, 1)});
  EXPECT_EQ(loadError(), path + ": tensor 'ln_f.weight' (param "
                                "'transformer.ln_f.weight') has shape [4, 2], "
                                "expected [8]");

  sources.back() = {"ln_f.weight", DType::I64, {8}, iota(8, 1)};
  EXPECT_EQ(loadError(), path + ": tensor 'ln_f.weight' (param "
                                "'transformer.ln_f.weight') is I64, expected "
                                "F32, BF16, F16 or F64");

  sources.back() = {"ln_f.weight", DType::F32, {8}, iota(8, 1)};
  EXPECT_EQ(loadError(), "loaded");

  Status s = loadWeights(pathOf("absent.safetensors"), interpreter);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("absent.safetensors: cannot open"),
            std::string::npos);
}

/// A Llama-family executable's params, as the compiler names them: "model."
/// and an untied head.
fb::ExecutableT llamaParams() {
  ExecutableBuilder b;
  b.param("model.embed_tokens.weight", fb::DType::F32, {16, 4});
  b.param("model.layers.0.self_attn.q_proj.weight", fb::DType::BF16, {4, 4});
  b.param("model.norm.weight", fb::DType::F32, {4}, fb::ParamInit::Ones);
  b.param("lm_head.weight", fb::DType::F32, {16, 4});
  return b.finish();
}

// LlamaModel.save_pretrained (and Qwen2Model's, MistralModel's) writes the
// names without "model." and no lm_head.weight.
TEST_F(WeightsTest, BaseModelNamesAndAMissingHead) {
  Interpreter interpreter;
  create(llamaParams(), interpreter);
  std::vector<Source> base = {
      {"embed_tokens.weight", DType::F32, {16, 4}, iota(64, 0.25f)},
      {"layers.0.self_attn.q_proj.weight", DType::BF16, {4, 4}, iota(16, 1)},
      {"norm.weight", DType::F32, {4}, iota(4, 2)}};
  std::vector<Source> withHead = base;
  withHead.push_back({"lm_head.weight", DType::F32, {16, 4}, iota(64, 3)});
  Status s = loadWeights(write("head.safetensors", withHead), interpreter);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(readFloats(interpreter, 0), iota(64, 0.25f));
  EXPECT_EQ(readFloats(interpreter, 1), iota(16, 1));
  EXPECT_EQ(readFloats(interpreter, 2), iota(4, 2));
  EXPECT_EQ(readFloats(interpreter, 3), iota(64, 3));

  std::string path = write("base.safetensors", base);
  s = loadWeights(path, interpreter);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            path + ": missing tensor 'lm_head.weight' (a base model without "
                   "its LM head, as LlamaModel.save_pretrained writes): use "
                   "the ...ForCausalLM checkpoint (LlamaForCausalLM, "
                   "Qwen2ForCausalLM, MistralForCausalLM), or add --init-seed "
                   "S to draw the tensors the file lacks");

  // With a seed the head is drawn exactly as --init-seed alone draws it.
  LoadWeightsOptions options;
  options.initSeed = 9;
  std::vector<std::string> drawn = {"stale"};
  s = loadWeights(path, interpreter, options, &drawn);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(drawn, std::vector<std::string>{"lm_head.weight"});
  EXPECT_EQ(readFloats(interpreter, 0), iota(64, 0.25f));
  Interpreter drawnAlone;
  create(llamaParams(), drawnAlone);
  ASSERT_TRUE(initWeights(9, drawnAlone));
  EXPECT_EQ(readFloats(interpreter, 3), readFloats(drawnAlone, 3));
  ASSERT_TRUE(loadWeights(write("head.safetensors", withHead), interpreter,
                          options, &drawn));
  EXPECT_TRUE(drawn.empty());

  // Other missing tensors keep the plain message, and a seed never hides a
  // tensor that is there but wrong.
  std::vector<Source> noNorm = {withHead[0], withHead[1], withHead[3]};
  path = write("nonorm.safetensors", noNorm);
  EXPECT_EQ(loadWeights(path, interpreter).message(),
            path + ": missing tensor 'model.norm.weight'");
  std::vector<Source> badNorm = withHead;
  badNorm[2].shape = {2, 2};
  path = write("badnorm.safetensors", badNorm);
  EXPECT_EQ(loadWeights(path, interpreter, options).message(),
            path + ": tensor 'norm.weight' (param 'model.norm.weight') has "
                   "shape [2, 2], expected [4]");
}

TEST_F(WeightsTest, ModelDirectories) {
  std::string out;
  std::string model = pathOf("model");
  std::filesystem::create_directory(model);
  Status s = resolveWeightsPath(model, out);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), model + ": no model.safetensors or "
                                 "model.safetensors.index.json in it");
  write("model/model.safetensors", {{"b", DType::F32, {4}, iota(4, 1)}});
  ASSERT_TRUE(resolveWeightsPath(model, out));
  EXPECT_EQ(out, model + "/model.safetensors");
  ASSERT_TRUE(resolveWeightsPath(model + "/", out));
  EXPECT_EQ(out, model + "/model.safetensors");
  std::ofstream(model + "/model.safetensors.index.json") << "{}";
  ASSERT_TRUE(resolveWeightsPath(model, out));
  EXPECT_EQ(out, model + "/model.safetensors.index.json");
  // Files and paths that do not exist are left to the reader.
  ASSERT_TRUE(resolveWeightsPath(model + "/model.safetensors", out));
  EXPECT_EQ(out, model + "/model.safetensors");
  ASSERT_TRUE(resolveWeightsPath(pathOf("absent"), out));
  EXPECT_EQ(out, pathOf("absent"));
}

TEST_F(WeightsTest, InitIsDeterministicPerName) {
  Interpreter first, second, reordered;
  create(tinyModel(), first);
  ASSERT_TRUE(initWeights(11, first));
  create(tinyModel(), second);
  ASSERT_TRUE(initWeights(11, second));
  const Program &program = first.program();
  for (const ParamRef &param : program.params)
    EXPECT_EQ(readFloats(first, param.buffer), readFloats(second, param.buffer))
        << param.hfName;

  ASSERT_TRUE(initWeights(12, second));
  uint32_t wte = program.params[0].buffer;
  EXPECT_NE(readFloats(first, wte), readFloats(second, wte));

  // A param's values depend on its name, not its place: "b" alone, then
  // after another param.
  ExecutableBuilder alone, after;
  alone.param("b", fb::DType::F32, {64});
  after.param("a", fb::DType::F32, {16});
  after.param("b", fb::DType::F32, {64});
  Interpreter x, y;
  create(alone.finish(), x);
  create(after.finish(), y);
  ASSERT_TRUE(initWeights(5, x));
  ASSERT_TRUE(initWeights(5, y));
  EXPECT_EQ(readFloats(x, 0), readFloats(y, 1));

  // Kinds: ones, zeros, normal with init_std.
  for (const ParamRef &param : program.params) {
    std::vector<float> v = readFloats(first, param.buffer);
    if (param.init == fb::ParamInit::Ones) {
      EXPECT_EQ(v, std::vector<float>(v.size(), 1.0f)) << param.hfName;
    } else if (param.init == fb::ParamInit::Zeros) {
      EXPECT_EQ(v, std::vector<float>(v.size(), 0.0f)) << param.hfName;
    }
  }
  std::vector<float> normal =
      readFloats(first, program.params[4].buffer); // c_fc.weight, 256 values
  double sum = 0, sq = 0;
  for (float v : normal) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  double mean = sum / normal.size();
  double std = std::sqrt(sq / normal.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(std, 0.02, 0.003);
}

TEST_F(WeightsTest, InputsFromSafetensors) {
  Interpreter interpreter;
  create(tinyModel(), interpreter);
  const Program &program = interpreter.program();
  std::vector<float> ids{0, 1, 2, 3, 15, 14, 13, 12};
  std::vector<float> labels{1, 2, 3, -100, 14, 13, 12, 11};
  HostInputs inputs;
  std::string path =
      write("b.safetensors", {{"input_ids", DType::I32, {2, 4}, ids},
                              {"labels", DType::I64, {2, 4}, labels},
                              {"attention_mask", DType::F32, {2, 4}, ids}});
  Status s = readInputs(path, program, inputs);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(inputs.tokens, 8);
  ASSERT_TRUE(inputs.copyTo(interpreter));
  std::vector<int64_t> stored(8);
  ASSERT_TRUE(interpreter.readBuffer(program.findInput("labels")->buffer,
                                     stored.data(), 64));
  EXPECT_EQ(stored, (std::vector<int64_t>{1, 2, 3, -100, 14, 13, 12, 11}));

  auto refused = [&](const std::vector<Source> &sources,
                     const std::string &expected) {
    std::string p = write("bad.safetensors", sources);
    Status st = readInputs(p, program, inputs);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.message(), p + ": " + expected);
  };
  std::vector<float> badIds = ids;
  badIds[6] = 16;
  refused({{"input_ids", DType::I64, {2, 4}, badIds},
           {"labels", DType::I64, {2, 4}, labels}},
          "input_ids[1, 2] is 16, outside [0, 16)");
  std::vector<float> badLabels = labels;
  badLabels[1] = -1;
  refused({{"input_ids", DType::I64, {2, 4}, ids},
           {"labels", DType::I64, {2, 4}, badLabels}},
          "labels[0, 1] is -1, outside [0, 16) and not the ignore index -100");
  badIds = ids;
  badIds[0] = -100;
  refused({{"input_ids", DType::I64, {2, 4}, badIds},
           {"labels", DType::I64, {2, 4}, labels}},
          "input_ids[0, 0] is -100, outside [0, 16)");
  refused({{"input_ids", DType::I64, {4, 2}, ids},
           {"labels", DType::I64, {2, 4}, labels}},
          "tensor 'input_ids' has shape [4, 2], expected [2, 4]");
  refused({{"input_ids", DType::F32, {2, 4}, ids},
           {"labels", DType::I64, {2, 4}, labels}},
          "tensor 'input_ids' is F32, expected I64 or I32");
  refused({{"input_ids", DType::I64, {2, 4}, ids}}, "missing tensor 'labels'");
}

// Hugging Face's labels (aligned with input_ids, shifted by the model)
// become the executable's shifted ones on load.
TEST_F(WeightsTest, UnshiftedLabels) {
  Interpreter interpreter;
  create(tinyModel(), interpreter);
  const Program &program = interpreter.program();
  std::vector<float> ids{0, 1, 2, 3, 15, 14, 13, 12};
  std::string same =
      write("same.safetensors", {{"input_ids", DType::I64, {2, 4}, ids},
                                 {"labels", DType::I64, {2, 4}, ids}});
  auto storedLabels = [&](const HostInputs &inputs) {
    EXPECT_TRUE(inputs.copyTo(interpreter));
    std::vector<int64_t> stored(8);
    EXPECT_TRUE(interpreter.readBuffer(program.findInput("labels")->buffer,
                                       stored.data(), 64));
    return stored;
  };
  HostInputs inputs;
  bool equal = false;
  ASSERT_TRUE(readInputs(same, program, inputs, LabelShift::Shifted, &equal));
  EXPECT_TRUE(equal);
  EXPECT_EQ(storedLabels(inputs),
            (std::vector<int64_t>{0, 1, 2, 3, 15, 14, 13, 12}));
  ASSERT_TRUE(readInputs(same, program, inputs, LabelShift::Unshifted, &equal));
  EXPECT_TRUE(equal);
  EXPECT_EQ(storedLabels(inputs),
            (std::vector<int64_t>{1, 2, 3, -100, 14, 13, 12, -100}));
  // The ids are not touched.
  std::vector<int64_t> storedIds(8);
  ASSERT_TRUE(interpreter.readBuffer(program.findInput("input_ids")->buffer,
                                     storedIds.data(), 64));
  EXPECT_EQ(storedIds, (std::vector<int64_t>{0, 1, 2, 3, 15, 14, 13, 12}));

  // The user's -100s (padding) move with their row.
  std::string padded = write(
      "padded.safetensors",
      {{"input_ids", DType::I32, {2, 4}, ids},
       {"labels", DType::I64, {2, 4}, {0, 1, -100, -100, -100, 14, 13, 12}}});
  ASSERT_TRUE(
      readInputs(padded, program, inputs, LabelShift::Unshifted, &equal));
  EXPECT_FALSE(equal);
  EXPECT_EQ(storedLabels(inputs),
            (std::vector<int64_t>{1, -100, -100, -100, 14, 13, 12, -100}));
  // Values are checked at their place in the file.
  std::string bad =
      write("bad.safetensors",
            {{"input_ids", DType::I64, {2, 4}, ids},
             {"labels", DType::I64, {2, 4}, {0, 1, 2, 3, 16, 14, 13, 12}}});
  Status s = readInputs(bad, program, inputs, LabelShift::Unshifted);
  EXPECT_EQ(s.message(), bad + ": labels[1, 0] is 16, outside [0, 16) and not "
                               "the ignore index -100");

  LabelShift shift = LabelShift::Shifted;
  ASSERT_TRUE(parseLabelShift("unshifted", shift));
  EXPECT_EQ(shift, LabelShift::Unshifted);
  ASSERT_TRUE(parseLabelShift("shifted", shift));
  EXPECT_EQ(shift, LabelShift::Shifted);
  EXPECT_EQ(parseLabelShift("hf", shift).message(),
            "--labels 'hf': expected shifted or unshifted");

  std::vector<int64_t> rows = {1, 2, 3, 4, 5, 6};
  shiftLabels(rows, {3, 2});
  EXPECT_EQ(rows, (std::vector<int64_t>{2, -100, 4, -100, 6, -100}));
  rows = {7};
  shiftLabels(rows, {1, 1});
  EXPECT_EQ(rows, std::vector<int64_t>{-100});
}

TEST_F(WeightsTest, SyntheticInputs) {
  Interpreter interpreter;
  create(tinyModel(), interpreter);
  const Program &program = interpreter.program();
  HostInputs a, b, c;
  ASSERT_TRUE(syntheticInputs(3, program, a));
  ASSERT_TRUE(syntheticInputs(3, program, b));
  ASSERT_TRUE(syntheticInputs(4, program, c));
  ASSERT_EQ(a.entries.size(), 2u);
  EXPECT_EQ(a.tokens, 8);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.entries[i].bytes, b.entries[i].bytes);
    EXPECT_NE(a.entries[i].bytes, c.entries[i].bytes);
    std::vector<int64_t> values(8);
    std::memcpy(values.data(), a.entries[i].bytes.data(), 64);
    for (int64_t v : values) {
      EXPECT_GE(v, 0);
      EXPECT_LT(v, 16);
    }
  }
  // ids and labels are different streams.
  EXPECT_NE(a.entries[0].bytes, a.entries[1].bytes);

  fb::ExecutableT unbounded = tinyModel();
  unbounded.inputs[1]->value_bound = 0;
  Interpreter other;
  create(unbounded, other);
  Status s = syntheticInputs(3, other.program(), a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "input 'labels' has no value_bound to draw synthetic values below");
}

} // namespace
