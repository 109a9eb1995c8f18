// kforge compare on report's fixture database (tests/report/fixture.hpp): exit codes (0
// success, 1 failure, 2 bad usage) and messages.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report_cli_fixture.hpp"

namespace kforge::test {
namespace {

TEST_F(ReportCli, Compare) {
  auto r = kforge({"compare", "v1", "v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "exact McNemar p = 0.7266 (3 lost, 5 gained): not significant at 0.05"))
      << r.out;
  r = kforge({"compare", "v1", "v2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["comparisons"][0]["paired"]["only_b"], 5);
  auto html = fx.dir() / "report.html";
  r = kforge({"compare", "v1", "v2", "v2-qwen", "--html", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "v2-qwen vs v1 (baseline): 4 samples finished in both"));
  EXPECT_EQ(read_text(html).rfind("<!DOCTYPE html>", 0), 0u);
  // A different confidence level widens the intervals: 99% for v1's 5/13.
  r = kforge({"compare", "v1", "v2", "--confidence", "0.99"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "verified [99% CI]")) << r.out;
  r = kforge({"compare", "v1", "v2", "--confidence", "0.99", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j99 = nlohmann::json::parse(r.out);
  EXPECT_EQ(j99["confidence"], 0.99);
  const auto& v1_95 = j["comparisons"][0]["runs"]["v1"];
  const auto& v1_99 = j99["comparisons"][0]["runs"]["v1"];
  ASSERT_EQ(v1_99["samples"], 13);
  ASSERT_EQ(v1_99["verified"], 5);
  // Wilson score intervals for 5/13, worked out here from the formula (z = 1.959964, 2.575829).
  auto wilson = [](double k, double n, double z) {
    double p = k / n, z2 = z * z, mid = (p + z2 / (2 * n)) / (1 + z2 / n);
    double half = z / (1 + z2 / n) * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    return std::make_pair(mid - half, mid + half);
  };
  auto [lo95, hi95] = wilson(5, 13, 1.959964);
  auto [lo99, hi99] = wilson(5, 13, 2.575829);
  EXPECT_NEAR(v1_95["interval"][0].get<double>(), lo95, 1e-4);
  EXPECT_NEAR(v1_95["interval"][1].get<double>(), hi95, 1e-4);
  EXPECT_NEAR(v1_99["interval"][0].get<double>(), lo99, 1e-4);
  EXPECT_NEAR(v1_99["interval"][1].get<double>(), hi99, 1e-4);
  EXPECT_LT(v1_99["interval"][0].get<double>(), v1_95["interval"][0].get<double>() - 0.03);
  EXPECT_GT(v1_99["interval"][1].get<double>(), v1_95["interval"][1].get<double>() + 0.03);
  // The paired difference's interval widens too, around the same difference.
  const auto& p95 = j["comparisons"][0]["paired"];
  const auto& p99 = j99["comparisons"][0]["paired"];
  EXPECT_EQ(p99["difference"], p95["difference"]);
  EXPECT_LT(p99["interval"][0].get<double>(), p95["interval"][0].get<double>());
  EXPECT_GT(p99["interval"][1].get<double>(), p95["interval"][1].get<double>());
}

TEST_F(ReportCli, CompareErrors) {
  auto r = kforge({"compare", "v1", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "kforge: error: unknown tag 'nope'")) << r.err;
  EXPECT_TRUE(has(r.err, "known tags: v1, v2, v2-qwen")) << r.err;
  EXPECT_EQ(kforge({"compare", "v1"}).exit_code, 2);
  EXPECT_EQ(kforge({"compare", "v1", "v1"}).exit_code, 2);
  EXPECT_EQ(kforge({"compare", "v1", "v2", "--confidence", "2"}).exit_code, 2);
  // A report that cannot be written is a failure naming the path.
  r = kforge({"compare", "v1", "v2", "--html", (fx.dir() / "no" / "r.html").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "no/r.html")) << r.err;
}

// Every verdict of v2 an error of the verifier's environment (its Python lacks torch): the report
// says so, names the fix, and calls no difference, in text, JSON and HTML.
TEST_F(ReportCli, CompareRefusesToCallADifferenceFromEnvironmentErrors) {
  ASSERT_TRUE(fx.db()
                  .exec("UPDATE verifications SET verdict = 'error', flags_json = "
                        "'[\"environment\"]', detail = 'ModuleNotFoundError: No module named "
                        "''torch''' WHERE run_id = (SELECT id FROM runs WHERE tag = 'v2')")
                  .ok());
  auto r = kforge({"compare", "v1", "v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "no difference can be called: run v2 has no verdict that depends on its "
                  "samples: all "))
      << r.out;
  EXPECT_TRUE(has(r.out, "are errors of the verifier's environment")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "set verifier.python to a Python with torch and triton, then kforge "
                  "retry v2 --verdict error"))
      << r.out;
  EXPECT_TRUE(has(r.out, "    environment")) << r.out;
  EXPECT_TRUE(has(r.out, "No module named 'torch'")) << r.out;
  EXPECT_FALSE(has(r.out, "exact McNemar")) << r.out;
  // No rates with intervals before the note: the counts only.
  EXPECT_FALSE(has(r.out, "% CI]")) << r.out;
  EXPECT_TRUE(has(r.out, "  verified   ")) << r.out;
  r = kforge({"compare", "v1", "v2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& paired = j["comparisons"][0]["paired"];
  // Beside no_call there is no test result to misread.
  for (const char* k : {"significant", "mcnemar_exact_p", "difference", "interval"})
    EXPECT_FALSE(paired.contains(k)) << k << ": " << paired.dump();
  EXPECT_TRUE(has(paired["no_call"].get<std::string>(), "verifier.python")) << paired.dump();
  const auto& v2 = j["comparisons"][0]["runs"]["v2"];
  EXPECT_EQ(v2["sample_verdicts"], 0);
  EXPECT_GT(v2["verdict_causes"]["environment"]["count"].get<int>(), 0);
  EXPECT_EQ(j["comparisons"][0]["runs"]["v1"]["verdict_causes"].count("environment"), 0u);
  auto html = fx.dir() / "env.html";
  r = kforge({"compare", "v1", "v2", "--html", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string page = read_text(html);
  EXPECT_TRUE(has(page, "No difference can be called")) << page.substr(0, 2000);
  EXPECT_TRUE(has(page, "environment")) << page.substr(0, 2000);
  // With verdicts that depend on the samples, the difference is called again.
  r = kforge({"compare", "v1", "v2-qwen"});
  EXPECT_TRUE(has(r.out, "exact McNemar")) << r.out;
}

// Runs that finished no sample in common: no "0/0 [0.0, 100.0]", but why nothing is compared.
TEST_F(ReportCli, CompareWithoutCommonSamplesSaysSo) {
  ASSERT_TRUE(fx.db()
                  .exec("UPDATE jobs SET state = 'cancelled' WHERE run_id = (SELECT id FROM runs "
                        "WHERE tag = 'v2')")
                  .ok());
  auto r = kforge({"compare", "v1", "v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.out, "0/0")) << r.out;
  EXPECT_FALSE(has(r.out, "[0.0, 100.0]")) << r.out;
  EXPECT_TRUE(has(r.out, "no difference can be called: no sample finished in both runs")) << r.out;
  r = kforge({"compare", "v1", "v2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto paired = nlohmann::json::parse(r.out)["comparisons"][0]["paired"];
  EXPECT_FALSE(paired.contains("mcnemar_exact_p")) << paired.dump();
  EXPECT_TRUE(paired["no_call"].is_string()) << paired.dump();
}

// Repair rounds a run was created with, but which never ran, get no "after repair" rows.
TEST_F(ReportCli, RepairRowsOnlyWhereRepairRan) {
  ASSERT_TRUE(fx.db()
                  .exec("UPDATE runs SET params_json = json_set(params_json, '$.repair_rounds', "
                        "2) WHERE tag IN ('v1', 'v2')")
                  .ok());
  auto r = kforge({"compare", "v1", "v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "repair rounds (none ran)")) << r.out;
  EXPECT_FALSE(has(r.out, "after repair")) << r.out;
  EXPECT_FALSE(has(r.out, "flips produced by repair")) << r.out;
  auto html = fx.dir() / "norepair.html";
  r = kforge({"compare", "v1", "v2", "--html", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(read_text(html), "Repair rounds</h3>"));
}

}  // namespace
}  // namespace kforge::test
