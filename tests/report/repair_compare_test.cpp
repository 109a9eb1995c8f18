// compare for runs with repair rounds: the yield after each round, the cost per verified sample
// per round, the samples repair made verified and those answered unfixable (compare_outcomes is
// pure: outcomes built by hand, figures worked out beside them).

#include <gtest/gtest.h>

#include "kforge/report/compare.hpp"

namespace kforge::report {
namespace {

SampleOutcome sample(std::int64_t id, const std::string& key,
                     std::vector<std::pair<std::string, double>> rounds,
                     std::vector<std::string> first_flags = {}) {
  SampleOutcome o;
  o.sample_id = id;
  o.key = key;
  o.state = store::JobState::done;
  o.stage = "done";
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    RoundOutcome r;
    r.round = static_cast<int>(i);
    r.verdict = rounds[i].first;
    r.cost_usd = rounds[i].second;
    if (i == 0) r.flags = first_flags;
    o.cost_usd += r.cost_usd;
    o.rounds.push_back(r);
  }
  o.repair_round = static_cast<int>(rounds.size()) - 1;
  o.verdict = rounds.back().first;
  if (rounds.size() == 1) o.flags = first_flags;
  return o;
}

TEST(ReportRepair, YieldAndCostPerVerifiedAfterEachRoundAndTheFlipsRepairMade) {
  RunInfo a, b;
  a.tag = "plain";
  b.tag = "fix";
  b.params.repair_rounds = 2;
  // Without repair: a verified, b failed, c flagged, d error.
  std::vector<SampleOutcome> oa = {
      sample(1, "a", {{"passed", 0.10}}), sample(2, "b", {{"failed", 0.10}}),
      sample(3, "c", {{"passed", 0.10}}, {"mutant_survived"}), sample(4, "d", {{"error", 0.10}})};
  // With two rounds: a verified at once; b after repair 1; c (flagged) after repair 2; d ends
  // unfixable after repair 1's answer.
  std::vector<SampleOutcome> ob = {
      sample(1, "a", {{"passed", 0.10}}), sample(2, "b", {{"failed", 0.10}, {"passed", 0.20}}),
      sample(3, "c", {{"passed", 0.10}, {"failed", 0.20}, {"passed", 0.30}}, {"mutant_survived"}),
      sample(4, "d", {{"error", 0.10}})};
  ob[3].job_error_kind = "unfixable";
  RoundOutcome unfixable_answer;  // round 1: an answer, no code, no verdict
  unfixable_answer.round = 1;
  unfixable_answer.cost_usd = 0.05;
  ob[3].rounds.push_back(unfixable_answer);
  PairComparison p = compare_outcomes(a, oa, b, ob, 0.95);
  EXPECT_EQ(p.a.repair_rounds, 0);
  ASSERT_EQ(p.a.rounds.size(), 1u);
  EXPECT_EQ(p.a.rounds[0].verified, 1);
  EXPECT_TRUE(p.a.repaired.empty());

  EXPECT_EQ(p.b.repair_rounds, 2);
  ASSERT_EQ(p.b.rounds.size(), 3u);
  // After generate: a. Cost of round 0: 4 x 0.10.
  EXPECT_EQ(p.b.rounds[0].verified, 1);
  EXPECT_DOUBLE_EQ(p.b.rounds[0].rate, 0.25);
  EXPECT_NEAR(p.b.rounds[0].cost_usd, 0.40, 1e-12);
  EXPECT_NEAR(*p.b.rounds[0].cost_per_verified, 0.40, 1e-12);
  // After repair 1: a, b. Cost: 0.40 + 0.20 (b) + 0.20 (c) + 0.05 (d's unfixable answer).
  EXPECT_EQ(p.b.rounds[1].verified, 2);
  EXPECT_NEAR(p.b.rounds[1].cost_usd, 0.85, 1e-12);
  EXPECT_NEAR(*p.b.rounds[1].cost_per_verified, 0.425, 1e-12);
  // After repair 2: a, b, c. Cost: 0.85 + 0.30.
  EXPECT_EQ(p.b.rounds[2].verified, 3);
  EXPECT_DOUBLE_EQ(p.b.rounds[2].rate, 0.75);
  EXPECT_NEAR(p.b.rounds[2].cost_usd, 1.15, 1e-12);
  EXPECT_EQ(p.b.verified, 3);
  ASSERT_EQ(p.b.repaired.size(), 2u);
  EXPECT_EQ(p.b.repaired[0].key, "b");
  EXPECT_EQ(p.b.repaired[0].from, Category::failed);
  EXPECT_EQ(p.b.repaired[0].to, Category::verified);
  EXPECT_EQ(p.b.repaired[0].round, 1);
  EXPECT_EQ(p.b.repaired[1].key, "c");
  EXPECT_EQ(p.b.repaired[1].from, Category::flagged);
  EXPECT_EQ(p.b.repaired[1].round, 2);
  EXPECT_EQ(p.b.unfixable, 1);
  // The pair: b and c gained.
  EXPECT_EQ(p.gained.size(), 2u);

  Comparison c;
  c.runs = {a, b};
  c.pairs = {p};
  auto j = to_json(c);
  const auto& fix = j["comparisons"][0]["runs"]["fix"]["repair"];
  EXPECT_EQ(fix["rounds"][1]["after"], "repair 1");
  EXPECT_EQ(fix["repaired"][1]["round"], 2);
  EXPECT_EQ(j["runs"][1]["repair_rounds"], 2);
  std::string text = format_text(c, 10);
  EXPECT_NE(text.find("after repair 2"), std::string::npos) << text;
  EXPECT_NE(text.find("c  (passed, flagged -> verified in repair 2)"), std::string::npos) << text;
  std::string html = render_html(c);
  EXPECT_NE(html.find("<h3>Repair rounds</h3>"), std::string::npos);
}

}  // namespace
}  // namespace kforge::report
