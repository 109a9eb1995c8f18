#include <gtest/gtest.h>

#include <cmath>

#include "kforge/score/request.hpp"
#include "kforge/score/reward.hpp"
#include "kforge/score/service.hpp"
#include "kforge/verify/harness_report.hpp"

namespace kforge::score {
namespace {

Components judged(const std::string& verdict, std::vector<std::string> flags = {}) {
  Components c;
  c.judged = true;
  c.verdict = verdict;
  c.flags = std::move(flags);
  c.correct = verdict == "passed";
  c.ran = c.correct || verdict == "failed";
  c.verified = c.correct && c.flags.empty();
  return c;
}

TEST(Reward, TritonEvalIsMinusPointTwoZeroOrOnePlusLogSpeedup) {
  const auto none = nlohmann::json::object();
  EXPECT_EQ(reward("triton_eval", none, judged("error")), -0.2);
  EXPECT_EQ(reward("triton_eval", none, judged("timeout")), -0.2);
  EXPECT_EQ(reward("triton_eval", none, judged("failed")), 0.0);
  // Passing with a quality flag is not verified: no reward for a test that checks nothing.
  EXPECT_EQ(reward("triton_eval", none, judged("passed", {"mutant_survived"})), 0.0);
  EXPECT_EQ(reward("triton_eval", none, judged("passed")), 1.0);
  auto fast = judged("passed");
  fast.speedup = 2.0;
  EXPECT_DOUBLE_EQ(*reward("triton_eval", none, fast), 1.0 + std::log(2.0));
  fast.speedup = 0.01;  // clamped: a correct kernel stays above a wrong one
  EXPECT_DOUBLE_EQ(*reward("triton_eval", none, fast), 0.5);
}

TEST(Reward, AnItemNotJudgedHasNoRewardUnderEveryPreset) {
  Components c;  // a deadline, the environment, an infrastructure fault
  for (const auto& p : preset_names())
    EXPECT_FALSE(reward(p, nlohmann::json::object(), c).has_value()) << p;
}

TEST(Reward, FastPCountsAVerifiedSampleWhoseIntervalLiesAboveP) {
  auto c = judged("passed");
  c.speedup = 1.3;
  c.speedup_lo = 1.1;
  EXPECT_EQ(reward("fast_p", {{"p", 1.0}}, c), 1.0);
  EXPECT_EQ(reward("fast_p", {{"p", 1.2}}, c), 0.0);  // the point estimate is above, the bound not
  EXPECT_EQ(reward("fast_p", {{"p", 0}}, judged("passed")), 1.0);
  EXPECT_EQ(reward("fast_p", {{"p", 1.0}}, judged("passed")), 0.0);  // not timed
  EXPECT_EQ(reward("fast_p", {{"p", 0}}, judged("failed")), 0.0);
}

TEST(Reward, CoverageWeighsByTheKernelsShare) {
  auto c = judged("passed");
  c.kernel_share = 0.25;
  EXPECT_DOUBLE_EQ(*reward("coverage", nlohmann::json::object(), c), 0.25);
  c.speedup = std::exp(1.0);
  EXPECT_DOUBLE_EQ(*reward("coverage", nlohmann::json::object(), c), 0.5);
  EXPECT_EQ(reward("coverage", nlohmann::json::object(), judged("crashed")), -0.2);
}

TEST(Reward, PresetsAndTheirParametersAreChecked) {
  EXPECT_TRUE(check_preset("fast_p", {{"p", 1.5}}).ok());
  auto bad = check_preset("fastest", nlohmann::json::object());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("reward: 'fastest'"), std::string::npos);
  auto param = check_preset("binary", {{"p", 1}});
  ASSERT_FALSE(param.ok());
  EXPECT_NE(param.error().message.find("reward_params.p"), std::string::npos);
}

TEST(Request, ErrorsNameTheField) {
  ScoreConfig cfg;
  auto r = parse_request(nlohmann::json::parse(R"({"items": [{"code": "c", "kernel_wrapper": "w",
      "unitest_code": 3}]})"),
                         cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "items[0].unitest_code: must be a string");
  auto extra = parse_request(nlohmann::json::parse(R"({"items": [], "deadline": 3})"), cfg);
  ASSERT_FALSE(extra.ok());
  cfg.max_items = 1;
  auto many = parse_request(nlohmann::json::parse(R"({"items": [
      {"code": "c", "kernel_wrapper": "w", "unitest_code": "t"},
      {"code": "c", "kernel_wrapper": "w", "unitest_code": "t"}]})"),
                            cfg);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("score.max_items"), std::string::npos);
}

TEST(Request, TheContentKeyCoversCodeChecksHarnessAndGpu) {
  Item it{"a", "code", "", "wrapper", "test", nullptr};
  store::RunParams none, slow;
  slow.require_speedup = 1.5;
  Fingerprint f{"h1", "cpu"};
  const auto k = content_key(it, none, f);
  EXPECT_EQ(k,
            content_key(Item{"b", "code", "", "wrapper", "test", nullptr}, none, f));  // not the id
  EXPECT_NE(k, content_key(it, slow, f));
  EXPECT_NE(k, content_key(it, none, Fingerprint{"h2", "cpu"}));
  EXPECT_NE(k, content_key(it, none, Fingerprint{"h1", "NVIDIA H200"}));
  Item other = it;
  other.unitest_code += " ";
  EXPECT_NE(k, content_key(other, none, f));
}

// An item's answer reads its stored report through the pool's typed parse
// (verify::parse_stored_report): the speed label, the kernels' share of the timed call and the
// mutation score; a stored report that does not parse gives none of them, never a default.
TEST(ScoreResults, SpeedAndMutationComeFromTheParsedStoredReport) {
  nlohmann::json report = {
      {"harness", verify::harness_report_version()},
      {"pid", 1},
      {"verdict", "passed"},
      {"detail", "1 test passed"},
      {"phase", "done"},
      {"speed",
       {{"timed", true},
        {"kernels", nlohmann::json::array({{{"time_us", 10.0}}, {{"time_us", 5.0}}})},
        {"reference", {{"speedup", 2.0}, {"ci", {1.8, 2.2}}, {"time_us", 60.0}}},
        {"pass_perf", true},
        {"flags", nlohmann::json::array()}}},
      {"mutation",
       {{"killed", 4},
        {"applicable", 4},
        {"survived", nlohmann::json::array()},
        {"not_applicable", nlohmann::json::array()},
        {"not_run", nlohmann::json::array()}}}};
  ItemRow row;
  row.item_id = "a";
  row.verdict = "passed";
  row.flags_json = "[]";
  row.result_json = report.dump();
  auto out = item_result(row, "coverage", nlohmann::json::object(), std::nullopt);
  EXPECT_EQ(out["speed"]["speedup"], 2.0) << out.dump();
  EXPECT_EQ(out["mutation"]["killed"], 4) << out.dump();
  EXPECT_DOUBLE_EQ(out["reward_components"]["kernel_share"].get<double>(), 15.0 / 60.0)
      << out.dump();
  // A field of the speed label renamed: the report does not parse, so no speed and no mutation.
  report["speed"]["is_timed"] = report["speed"]["timed"];
  report["speed"].erase("timed");
  row.result_json = report.dump();
  out = item_result(row, "coverage", nlohmann::json::object(), std::nullopt);
  EXPECT_TRUE(out["speed"].is_null()) << out.dump();
  EXPECT_TRUE(out["mutation"].is_null()) << out.dump();
  EXPECT_TRUE(out["reward_components"]["kernel_share"].is_null()) << out.dump();
}

}  // namespace
}  // namespace kforge::score
