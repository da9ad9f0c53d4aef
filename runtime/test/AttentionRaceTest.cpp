//===- AttentionRaceTest.cpp - cuDNN or the own kernels, on the CPU -------===//
//
// cuda/AttentionRace.h and cuda/AttentionChoice.h without a GPU: the race
// times each shape (the calls of one cuDNN plan) on its first call, warm-up
// runs left out, and gives cuDNN only the shapes where its fastest run beats
// the own kernels' by the margin; a cuDNN error leaves the shape to the own
// kernels, an own kernel's error ends the race.
//
//===----------------------------------------------------------------------===//

#include "AttentionRace.h"
#include "AttentionChoice.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

using tpcrt::Status;
using tpcrt::cuda::AttentionChoice;
using tpcrt::cuda::AttentionRace;
using tpcrt::cuda::parseAttentionChoice;

namespace {

/// Made-up times: per call, the own kernels' and cuDNN's runs in order
/// (the last one repeats).
struct FakeTimes {
  std::map<std::pair<uint32_t, bool>, std::vector<double>> runs;
  std::map<std::pair<uint32_t, bool>, size_t> calls;
  std::map<std::pair<uint32_t, bool>, std::string> errors;

  Status operator()(uint32_t index, bool cudnn, double &seconds) {
    auto key = std::make_pair(index, cudnn);
    size_t n = calls[key]++;
    if (auto e = errors.find(key); e != errors.end())
      return Status::error(e->second);
    const std::vector<double> &r = runs.at(key);
    seconds = r[std::min(n, r.size() - 1)];
    return Status::ok();
  }
};

int a, b; // two cuDNN plans' keys

TEST(AttentionRaceTest, CudnnTakesTheShapesWhereItIsFaster) {
  AttentionRace race;
  race.add(&a, 3, "attention_qkv_lse [b 4, heads 16/16, s 2048, d 128]");
  race.add(&b, 7, "attention_qkv_grad [b 4, heads 16/16, s 2048, d 128]");
  race.add(&a, 11, "attention_qkv_lse, again");
  FakeTimes t;
  // The warm-up run (first) is left out: slow for both.
  t.runs[{3, false}] = {9.0, 2.0, 1.5, 1.6};
  t.runs[{3, true}] = {9.0, 1.2, 1.3};
  t.runs[{7, false}] = {9.0, 3.0};
  t.runs[{7, true}] = {9.0, 3.5, 3.1};
  ASSERT_TRUE(race.run(t));
  // Each shape timed on its first call only, 1 + 5 runs each way.
  EXPECT_EQ(t.calls[std::make_pair(3u, false)], 6u);
  EXPECT_EQ(t.calls[std::make_pair(3u, true)], 6u);
  EXPECT_EQ(t.calls[std::make_pair(7u, true)], 6u);
  EXPECT_EQ(t.calls.count(std::make_pair(11u, true)), 0u);
  EXPECT_TRUE(race.cudnnRuns(3));
  EXPECT_TRUE(race.cudnnRuns(11));
  EXPECT_FALSE(race.cudnnRuns(7));
  EXPECT_FALSE(race.cudnnRuns(5)); // not in the race
  ASSERT_EQ(race.shapes().size(), 2u);
  EXPECT_DOUBLE_EQ(race.shapes()[0].own, 1.5);
  EXPECT_DOUBLE_EQ(race.shapes()[0].cudnn, 1.2);
  EXPECT_DOUBLE_EQ(race.shapes()[1].cudnn, 3.1);
  EXPECT_EQ(race.summary(),
            "cuDNN measured faster for 1 of 2 shapes, runs 2 of 3 kernels "
            "(attention_qkv_lse [b 4, heads 16/16, s 2048, d 128]: own "
            "1500.000 ms, cuDNN 1200.000 ms; attention_qkv_grad [b 4, heads "
            "16/16, s 2048, d 128]: own 3000.000 ms, cuDNN 3100.000 ms)");
}

TEST(AttentionRaceTest, ANearTieStaysWithTheOwnKernels) {
  AttentionRace race;
  race.add(&a, 0, "x");
  FakeTimes t;
  t.runs[{0, false}] = {1.0};
  t.runs[{0, true}] = {1.0 - AttentionRace::kMargin / 2};
  ASSERT_TRUE(race.run(t));
  EXPECT_FALSE(race.cudnnRuns(0));
  // Past the margin cuDNN takes it.
  AttentionRace again;
  again.add(&a, 0, "x");
  t.runs[{0, true}] = {1.0 - AttentionRace::kMargin * 1.5};
  ASSERT_TRUE(again.run(t));
  EXPECT_TRUE(again.cudnnRuns(0));
}

TEST(AttentionRaceTest, ACudnnErrorLeavesTheShapeToTheOwnKernels) {
  AttentionRace race;
  race.add(&a, 1, "first");
  race.add(&b, 2, "second");
  FakeTimes t;
  t.runs[{1, false}] = {2.0};
  t.errors[{1, true}] =
      "attention: cuDNN's forward: CUDNN_STATUS_EXECUTION_FAILED";
  t.runs[{2, false}] = {2.0};
  t.runs[{2, true}] = {1.0};
  ASSERT_TRUE(race.run(t));
  EXPECT_FALSE(race.cudnnRuns(1));
  EXPECT_TRUE(race.cudnnRuns(2));                   // the race goes on
  EXPECT_EQ(t.calls[std::make_pair(1u, true)], 1u); // not tried again
  EXPECT_NE(race.summary().find("first: cuDNN failed, attention: cuDNN's "
                                "forward: CUDNN_STATUS_EXECUTION_FAILED"),
            std::string::npos)
      << race.summary();
}

TEST(AttentionRaceTest, AnOwnKernelsErrorEndsTheRace) {
  AttentionRace race;
  race.add(&a, 1, "attention_lse [b 2]");
  FakeTimes t;
  t.errors[{1, false}] = "kernel 1 (attention_lse): too many heads";
  Status s = race.run(t);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("attention_lse [b 2], timed on the own kernels"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("too many heads"), std::string::npos);
  EXPECT_EQ(t.calls.count(std::make_pair(1u, true)), 0u);
}

TEST(AttentionRaceTest, AnEmptyRaceSaysSo) {
  AttentionRace race;
  FakeTimes t;
  ASSERT_TRUE(race.run(t));
  EXPECT_EQ(race.summary(),
            "cuDNN measured faster for 0 of 0 shapes, runs 0 of 0 kernels");
}

TEST(AttentionChoiceTest, ParsesEveryValue) {
  bool known = false;
  EXPECT_EQ(parseAttentionChoice(nullptr, known), AttentionChoice::Auto);
  EXPECT_TRUE(known);
  const std::pair<const char *, AttentionChoice> values[] = {
      {"auto", AttentionChoice::Auto},
      {"own", AttentionChoice::Own},
      {"cudnn", AttentionChoice::Cudnn},
      {"mma", AttentionChoice::Mma},
      {"generic", AttentionChoice::Generic}};
  for (const auto &[text, choice] : values) {
    EXPECT_EQ(parseAttentionChoice(text, known), choice) << text;
    EXPECT_TRUE(known) << text;
  }
  EXPECT_EQ(parseAttentionChoice("cuDNN", known), AttentionChoice::Auto);
  EXPECT_FALSE(known);
}

} // namespace
