// kforge compare on the fixture database: every figure worked out by hand from
// fixtures/ab_runs.sql.

#include <gtest/gtest.h>
#include <spdlog/fmt/fmt.h>

#include "fixture.hpp"
#include "kforge/report/compare.hpp"

namespace kforge::report {
namespace {

using test::ReportFixture;

std::int64_t count(const Counts& c, const std::string& name) {
  for (const auto& [k, n] : c)
    if (k == name) return n;
  return -1;  // absent
}

std::vector<std::string> keys(const std::vector<Flip>& flips) {
  std::vector<std::string> out;
  for (const auto& f : flips) out.push_back(f.key);
  return out;
}

class ReportCompare : public ::testing::Test {
 protected:
  ReportFixture fx;
};

TEST_F(ReportCompare, V1AgainstV2OnTheSamplesBothFinished) {
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->pairs.size(), 1u);
  const PairComparison& p = c->pairs[0];
  EXPECT_EQ(p.tag_a, "v1");
  EXPECT_EQ(p.tag_b, "v2");
  // v1 has 15 jobs, v2 14. slow_pending.py is still queued for the verifier in v2 and v1_only.py
  // has no v2 job: 13 samples finished in both.
  EXPECT_EQ(p.samples, 13);
  EXPECT_EQ(p.excluded_a, 2);
  EXPECT_EQ(p.excluded_b, 1);

  // Verified in v1: add_kernel, layernorm, softmax, garbled_output, retry_gen = 5 (vacuous_test
  // and no_launch passed with a quality flag: not verified).
  // Verified in v2: add_kernel, copy_transpose, matmul_autotune (its second verification),
  // softmax, vacuous_test, syntax_typo, flaky_provider = 7.
  EXPECT_EQ(p.a.verified, 5);
  EXPECT_EQ(p.b.verified, 7);
  EXPECT_NEAR(p.a.rate, 5.0 / 13.0, 1e-12);
  EXPECT_NEAR(p.a.interval.low, 0.177096, 5e-6);  // stats_test.cpp works these out
  EXPECT_NEAR(p.a.interval.high, 0.644772, 5e-6);
  EXPECT_NEAR(p.b.interval.low, 0.291438, 5e-6);
  EXPECT_NEAR(p.b.interval.high, 0.767939, 5e-6);

  // Paired: both = add_kernel, softmax; only v1 = layernorm, garbled_output, retry_gen; only v2 =
  // copy_transpose, flaky_provider, matmul_autotune, syntax_typo, vacuous_test; neither =
  // llvm_abort, no_launch, wrong_launch.
  EXPECT_EQ(p.table.both, 2);
  EXPECT_EQ(p.table.only_a, 3);
  EXPECT_EQ(p.table.only_b, 5);
  EXPECT_EQ(p.table.neither, 3);
  // McNemar: b=3, c=5 -> (1 + 8 + 28 + 56) * 2 / 256 = 0.7265625; difference 2/13.
  EXPECT_DOUBLE_EQ(p.p_value, 0.7265625);
  EXPECT_FALSE(p.significant);
  EXPECT_NEAR(p.difference, 2.0 / 13.0, 1e-12);
  EXPECT_NEAR(p.difference_interval.low, -0.242293, 1e-5);
  EXPECT_NEAR(p.difference_interval.high, 0.495368, 1e-5);

  EXPECT_EQ(keys(p.gained),
            (std::vector<std::string>{"copy_transpose.py", "flaky_provider.py",
                                      "matmul_autotune.py", "syntax_typo.py", "vacuous_test.py"}));
  EXPECT_EQ(keys(p.lost),
            (std::vector<std::string>{"garbled_output.py", "layernorm.py", "retry_gen.py"}));
  EXPECT_EQ(p.gained[0].from, Category::failed);
  EXPECT_EQ(p.gained[1].from, Category::llm_error);
  EXPECT_EQ(p.gained[4].from, Category::flagged);
  EXPECT_EQ(p.lost[0].to, Category::parse_error);
  EXPECT_EQ(p.lost[1].to, Category::failed);
  // retry_gen's latest verification (crashed) predates its re-generation, which was rejected:
  // the sample counts as rejected, not crashed.
  EXPECT_EQ(p.lost[2].to, Category::rejected);
}

TEST_F(ReportCompare, CountsByVerdictFailureAndFlag) {
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const RunSummary& a = c->pairs[0].a;
  const RunSummary& b = c->pairs[0].b;
  // v1 verdicts over the 13: passed 7 (5 clean + 2 flagged), failed 1 (copy_transpose),
  // timeout 1 (matmul), crashed 1 (llvm_abort), invalid 1 (syntax_typo), skipped 1
  // (wrong_launch), none 1 (flaky_provider never got code).
  EXPECT_EQ(count(a.verdicts, "passed"), 7);
  EXPECT_EQ(count(a.verdicts, "failed"), 1);
  EXPECT_EQ(count(a.verdicts, "error"), 0);
  EXPECT_EQ(count(a.verdicts, "timeout"), 1);
  EXPECT_EQ(count(a.verdicts, "crashed"), 1);
  EXPECT_EQ(count(a.verdicts, "invalid"), 1);
  EXPECT_EQ(count(a.verdicts, "skipped"), 1);
  EXPECT_EQ(count(a.verdicts, "none"), 1);
  // v2: passed 7, failed 1 (layernorm), error 1 (no_launch), crashed 1 (llvm_abort), none 3
  // (garbled_output, wrong_launch, retry_gen: its old crash no longer applies).
  EXPECT_EQ(count(b.verdicts, "passed"), 7);
  EXPECT_EQ(count(b.verdicts, "failed"), 1);
  EXPECT_EQ(count(b.verdicts, "error"), 1);
  EXPECT_EQ(count(b.verdicts, "timeout"), 0);
  EXPECT_EQ(count(b.verdicts, "crashed"), 1);
  EXPECT_EQ(count(b.verdicts, "none"), 3);

  EXPECT_EQ(count(a.failures, "llm_error"), 1);
  EXPECT_EQ(count(a.failures, "parse_error"), 0);
  EXPECT_EQ(count(a.failures, "rejected"), 0);
  EXPECT_EQ(count(a.failure_kinds, "generate/http"), 1);
  EXPECT_EQ(count(b.failures, "llm_error"), 0);
  EXPECT_EQ(count(b.failures, "parse_error"), 1);
  EXPECT_EQ(count(b.failures, "rejected"), 2);
  EXPECT_EQ(count(b.failures, "other"), 0);
  // By the kinds the scheduler stores: one each, in name order.
  ASSERT_EQ(b.failure_kinds.size(), 3u);
  EXPECT_EQ(b.failure_kinds[0], (std::pair<std::string, std::int64_t>{"analyze/parse", 1}));
  EXPECT_EQ(b.failure_kinds[1],
            (std::pair<std::string, std::int64_t>{"generate/no_kernel_launch", 1}));
  EXPECT_EQ(b.failure_kinds[2],
            (std::pair<std::string, std::int64_t>{"generate/no_test_function", 1}));

  EXPECT_EQ(count(a.flags, "mutant_survived"), 1);
  EXPECT_EQ(count(a.flags, "no_kernel_launch"), 1);
  EXPECT_TRUE(b.flags.empty());

  // Categories add up to the compared samples.
  std::int64_t sum = 0;
  for (const auto& [k, n] : a.categories) sum += n;
  EXPECT_EQ(sum, 13);
  EXPECT_EQ(count(a.categories, "flagged"), 2);
}

TEST_F(ReportCompare, TheKernelBatteryRatePerRun) {
  // Two passing samples of v2 with a kernel battery (3 of 4 and 5 of 5 killed), none in v1.
  fx.exec("set_mutation_report", {"copy_transpose.py",
                                  R"({"killed": 6, "applicable": 6, "survived": [],
               "kernel": {"killed": 3, "applicable": 4, "equivalent": 1, "survived": []}})"});
  fx.exec("set_mutation_report", {"softmax.py", R"({"killed": 6, "applicable": 6, "survived": [],
                             "kernel": {"killed": 5, "applicable": 5, "equivalent": 0,
                                        "survived": []}})"});
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const RunSummary& b = c->pairs[0].b;
  EXPECT_EQ(b.kernel_samples, 2);
  EXPECT_EQ(b.kernel_killed, 8);
  EXPECT_EQ(b.kernel_applicable, 9);
  ASSERT_TRUE(b.kernel_rate.has_value());
  EXPECT_NEAR(*b.kernel_rate, 8.0 / 9.0, 1e-12);
  // softmax.py is compared in v1 too, where its verification has no kernel battery: none there.
  EXPECT_EQ(c->pairs[0].a.kernel_samples, 1);  // the fixture shares softmax.py's sample
  std::string text = format_text(*c, 10);
  EXPECT_NE(text.find("kernel mutants killed"), std::string::npos) << text;
  EXPECT_NE(text.find("8/9 88.9%"), std::string::npos) << text;
  // The HTML report shows the same rate per run (v1 shares softmax.py's battery: 5 of 5).
  std::string html = render_html(*c);
  EXPECT_NE(html.find("kernel mutants killed (the battery&#39;s rate)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="num">8/9 88.9% (2 samples)</td>)"), std::string::npos) << html;
  EXPECT_NE(html.find(R"(<td class="num">5/5 100.0% (1 samples)</td>)"), std::string::npos);
}

TEST_F(ReportCompare, CostPerVerifiedSample) {
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const RunSummary& a = c->pairs[0].a;
  const RunSummary& b = c->pairs[0].b;
  // v1: 12 good generations at 1000 + 500 tokens, $0.01, 2 s, and 3 LLM errors (flaky_provider)
  // at 0 tokens, 30 s: 12000 + 6000 tokens, $0.12, 24 + 90 = 114 s of LLM time.
  // Verifier: 4 x 3 s + 3 s (retry_gen) + 2.5 + 120 + 0.8 + 2 x 6 + 0.1 + 0 = 150.4 s.
  // Per verified (5): 3600 tokens, $0.024, (114 + 150.4) / 5 = 52.88 s.
  EXPECT_EQ(a.prompt_tokens, 12000);
  EXPECT_EQ(a.completion_tokens, 6000);
  EXPECT_NEAR(a.cost_usd, 0.12, 1e-9);
  EXPECT_EQ(a.llm_ms, 114000);
  EXPECT_EQ(a.verify_ms, 150400);
  EXPECT_EQ(a.llm_calls, 15);
  EXPECT_NEAR(*a.tokens_per_verified, 3600.0, 1e-9);
  EXPECT_NEAR(*a.cost_per_verified, 0.024, 1e-9);
  EXPECT_NEAR(*a.seconds_per_verified, 52.88, 1e-9);
  // v2: 14 analyses (12 good, 2 unparsable) at 800 + 300, $0.005, 1.5 s; 14 generations (11
  // good, 3 rejected) at 1000 + 500, $0.01, 2 s; one LLM timeout at 30 s.
  // Tokens 11200 + 14000 = 25200 prompt, 4200 + 7000 = 11200 completion; $0.07 + $0.14 = $0.21;
  // LLM 21 + 28 + 30 = 79 s. Verifier: 6 x 3 s + 2.5 + (120 + 3) + 0.8 + 1.2 + 0.8 = 146.3 s.
  // Per verified (7): 36400 / 7 = 5200 tokens, $0.03, (79 + 146.3) / 7 = 32.185714 s.
  EXPECT_EQ(b.prompt_tokens, 25200);
  EXPECT_EQ(b.completion_tokens, 11200);
  EXPECT_NEAR(b.cost_usd, 0.21, 1e-9);
  EXPECT_EQ(b.llm_ms, 79000);
  EXPECT_EQ(b.verify_ms, 146300);
  EXPECT_EQ(b.llm_calls, 29);
  EXPECT_NEAR(*b.tokens_per_verified, 5200.0, 1e-9);
  EXPECT_NEAR(*b.cost_per_verified, 0.03, 1e-9);
  EXPECT_NEAR(*b.seconds_per_verified, 225.3 / 7.0, 1e-9);
}

TEST_F(ReportCompare, EachTagAgainstTheFirst) {
  auto c = compare(fx.db(), {"v1", "v2", "v2-qwen"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->pairs.size(), 2u);
  EXPECT_EQ(c->pairs[0].tag_b, "v2");
  const PairComparison& q = c->pairs[1];
  EXPECT_EQ(q.tag_a, "v1");
  EXPECT_EQ(q.tag_b, "v2-qwen");
  // v2-qwen verified add_kernel, copy_transpose and layernorm; its softmax job failed on an LLM
  // error (left at stage 'done'). v1 verified add_kernel, layernorm and softmax.
  // both 2, only v1 1 (softmax), only v2-qwen 1 (copy_transpose):
  // p = min(1, 2 * (C(2,0) + C(2,1)) / 4) = min(1, 6/4) = 1.
  EXPECT_EQ(q.samples, 4);
  EXPECT_EQ(q.excluded_a, 11);
  EXPECT_EQ(q.excluded_b, 0);
  EXPECT_EQ(q.table.both, 2);
  EXPECT_EQ(q.table.only_a, 1);
  EXPECT_EQ(q.table.only_b, 1);
  EXPECT_EQ(q.p_value, 1.0);
  EXPECT_EQ(keys(q.gained), std::vector<std::string>{"copy_transpose.py"});
  EXPECT_EQ(keys(q.lost), std::vector<std::string>{"softmax.py"});
  EXPECT_EQ(q.lost[0].to, Category::llm_error);
  EXPECT_EQ(count(q.b.failures, "llm_error"), 1);
  EXPECT_EQ(count(q.b.failure_kinds, "generate/rate_limit"), 1);
  // Cost: 3 x (700 + 200 + 900 + 400) + (700 + 200) = 6600 + 900 = 7500 tokens and
  // 3 x $0.003 + $0.001 = $0.010 over 3 verified: 2500 tokens and $0.003333 each.
  EXPECT_NEAR(*q.b.tokens_per_verified, 2500.0, 1e-9);
  EXPECT_NEAR(*q.b.cost_per_verified, 0.01 / 3.0, 1e-12);
}

TEST_F(ReportCompare, BadTagsAreErrors) {
  auto unknown = compare(fx.db(), {"v1", "v3"}, CompareOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, "not_found");
  EXPECT_NE(unknown.error().message.find("unknown tag 'v3'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("known tags: v1, v2, v2-qwen"), std::string::npos);
  auto one = compare(fx.db(), {"v1"}, CompareOptions{});
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().kind, "usage");
  auto twice = compare(fx.db(), {"v1", "v2", "v1"}, CompareOptions{});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().kind, "usage");
  EXPECT_NE(twice.error().message.find("'v1' is given twice"), std::string::npos);
}

TEST_F(ReportCompare, TerminalTable) {
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::string t = format_text(*c, 3);
  for (const char* want :
       {"v2 vs v1 (baseline): 13 samples finished in both (not compared: 2 of v1, 1 of v2)",
        "5/13 38.5% [17.7, 64.5]", "7/13 53.8% [29.1, 76.8]", "LLM error", "unparsable output",
        "rejected by kernel facts", "generate/no_kernel_launch", "mutant_survived",
        "difference v2 - v1: +15.4 pts [95% CI -24.2, +49.5]; exact McNemar p = 0.7266 "
        "(3 lost, 5 gained): not significant at 0.05",
        "gained by v2 (5):", "copy_transpose.py  (failed -> verified)",
        "flaky_provider.py  (LLM error -> verified)", "... and 2 more",
        "lost by v2 (3):", "retry_gen.py  (verified -> rejected by kernel facts)", "$0.0240",
        "$0.0300", "52.9", "32.2"})
    EXPECT_NE(t.find(want), std::string::npos) << "missing: " << want << "\n" << t;
}

TEST_F(ReportCompare, JsonHasEveryFigure) {
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{0.95, 1'700'000'000'000});
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto j = to_json(*c);
  EXPECT_EQ(j["baseline"], "v1");
  EXPECT_EQ(j["runs"][1]["pipeline"], "v2");
  EXPECT_EQ(j["runs"][1]["prompts"]["analyze"]["version"], "v2/analyze");
  const auto& p = j["comparisons"][0];
  EXPECT_EQ(p["samples"], 13);
  EXPECT_EQ(p["paired"]["only_a"], 3);
  EXPECT_EQ(p["paired"]["only_b"], 5);
  EXPECT_DOUBLE_EQ(p["paired"]["mcnemar_exact_p"].get<double>(), 0.7265625);
  EXPECT_EQ(p["paired"]["significant"], false);
  EXPECT_EQ(p["runs"]["v1"]["verified"], 5);
  EXPECT_EQ(p["runs"]["v2"]["stage_failures"]["rejected"], 2);
  EXPECT_EQ(p["runs"]["v1"]["flags"]["mutant_survived"], 1);
  EXPECT_NEAR(p["runs"]["v2"]["per_verified"]["cost_usd"].get<double>(), 0.03, 1e-9);
  EXPECT_EQ(p["gained"].size(), 5u);  // all of them, whatever the terminal limit
  EXPECT_EQ(p["lost"][2]["key"], "retry_gen.py");
  EXPECT_EQ(p["lost"][2]["to"], "rejected");
}

// A larger, decisive pair built directly: 40 samples, 1 lost and 12 gained.
TEST_F(ReportCompare, CrossCompileRatesPerTargetAndRun) {
  fx.exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx942", "ok", ""});
  fx.exec("set_cross_compile", {"copy_transpose.py", "v2", "hip:gfx942", "error", "amdgcn: x"});
  fx.exec("set_cross_compile", {"softmax.py", "v2", "hip:gfx942", "unavailable", "no backend"});
  fx.exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx90a", "ok", ""});
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const PairComparison& p = c->pairs[0];
  EXPECT_TRUE(p.a.targets.empty());  // v1 was not cross-compiled
  ASSERT_EQ(p.b.targets.size(), 2u);
  const TargetRate& t = p.b.targets[1];
  EXPECT_EQ(t.target, "hip:gfx942");
  EXPECT_EQ(t.ok, 1);
  EXPECT_EQ(t.error, 1);
  EXPECT_EQ(t.unavailable, 1);
  EXPECT_DOUBLE_EQ(t.rate, 0.5);  // unavailable is not counted for or against
  EXPECT_EQ(t.verified_ok, 1);
  EXPECT_GT(t.interval.high, 0.5);
  EXPECT_EQ(p.b.targets[0].target, "hip:gfx90a");
  EXPECT_DOUBLE_EQ(p.b.targets[0].rate, 1.0);
  auto j = to_json(*c);
  const auto& run = j["comparisons"][0]["runs"]["v2"]["cross_compile"];
  EXPECT_EQ(run["hip:gfx942"]["ok"], 1);
  EXPECT_EQ(run["hip:gfx942"]["error"], 1);
  EXPECT_EQ(run["hip:gfx942"]["rate"], 0.5);
  std::string text = format_text(*c, 10);
  EXPECT_NE(text.find("compiles for (of the passing samples cross-compiled; not run there)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1/2 50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 unavailable)"), std::string::npos) << text;
  std::string html = render_html(*c);
  EXPECT_NE(html.find("hip:gfx942 error"), std::string::npos);
}

// The speed label's flags over the passing samples: a label without figures (not_timed, why)
// and one flagged library_work, counted per run in the summary, its JSON, the text and HTML.
TEST_F(ReportCompare, SpeedFlagsPerRun) {
  fx.exec("set_speed", {"add_kernel.py", "v2", "41.5", "1.8", "1.6", "2.0", "0"});
  fx.exec("set_speed_flags", {"add_kernel.py", "v2", "[\"library_work\"]"});
  fx.exec("set_speed_not_timed", {"softmax.py", "v2", "timing failed: OutOfMemoryError"});
  fx.exec("set_speed_not_timed", {"copy_transpose.py", "v2", "GPU busy"});
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const SpeedSummary& s = c->pairs[0].b.speed;
  EXPECT_EQ(s.timed, 1);
  EXPECT_EQ(s.flags, (Counts{{"not_timed", 2}, {"library_work", 1}}));
  EXPECT_TRUE(c->pairs[0].a.speed.flags.empty());
  auto j = to_json(*c);
  EXPECT_EQ(j["comparisons"][0]["runs"]["v2"]["speed"]["flags"]["not_timed"], 2);
  std::string text = format_text(*c, 10);
  EXPECT_NE(text.find("not_timed 2, library_work 1"), std::string::npos) << text;
  std::string html = render_html(*c);
  EXPECT_NE(html.find("not_timed 2, library_work 1"), std::string::npos);
}

TEST_F(ReportCompare, SpeedLabelsPerRun) {
  fx.exec("set_speed", {"add_kernel.py", "v2", "41.5", "1.8", "1.6", "2.0", "1"});
  fx.exec("set_speed", {"softmax.py", "v2", "80", "0.9", "0.85", "0.95", "0"});
  fx.exec("set_speed", {"copy_transpose.py", "v2", "12.5", "", "", "", ""});
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  const PairComparison& p = c->pairs[0];
  EXPECT_EQ(p.a.speed.timed, 0);  // v1 was not timed
  const SpeedSummary& s = p.b.speed;
  EXPECT_EQ(s.timed, 3);
  EXPECT_EQ(s.with_reference, 2);
  EXPECT_EQ(s.pass_perf, 1);
  EXPECT_EQ(s.faster, 1);
  EXPECT_DOUBLE_EQ(s.pass_perf_rate, 0.5);
  EXPECT_LT(s.pass_perf_interval.low, 0.5);
  EXPECT_GT(s.pass_perf_interval.high, 0.5);
  ASSERT_EQ(s.speedup_quantiles.size(), 5u);
  EXPECT_DOUBLE_EQ(s.speedup_quantiles[2], 1.35);  // the median of 0.9 and 1.8
  // One verified sample passed pass_perf: the run's whole cost is what it cost.
  ASSERT_TRUE(s.cost_per_fast_verified);
  EXPECT_DOUBLE_EQ(*s.cost_per_fast_verified, p.b.cost_usd);
  auto j = to_json(*c);
  const auto& sj = j["comparisons"][0]["runs"]["v2"]["speed"];
  EXPECT_EQ(sj["pass_perf"], 1);
  EXPECT_DOUBLE_EQ(sj["speedup_quantiles"]["p50"].get<double>(), 1.35);
  EXPECT_TRUE(j["comparisons"][0]["runs"]["v1"]["speed"]["speedup_quantiles"].is_null());
  std::string text = format_text(*c, 10);
  EXPECT_NE(text.find("pass_perf (of timed with a reference)"), std::string::npos) << text;
  EXPECT_NE(text.find("1/2 50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("1.35x ("), std::string::npos) << text;
  // The HTML report: pass_perf with its interval, the speedups' spread (a box per run on a log
  // scale: the median 1.35x, quartiles 1.12 and 1.58), the cost per fast verified sample.
  std::string html = render_html(*c);
  auto pos = html.find("<h3>Kernel battery and speed</h3>");
  ASSERT_NE(pos, std::string::npos) << html;
  std::string section = html.substr(pos);
  EXPECT_NE(
      section.find(fmt::format(R"(<td class="num">1/2 50.0% [{:.1f}–{:.1f}%]</td>)",
                               s.pass_perf_interval.low * 100, s.pass_perf_interval.high * 100)),
      std::string::npos)
      << section;
  EXPECT_NE(section.find(R"(<td class="num">0 (0)</td><td class="num">3 (2)</td>)"),
            std::string::npos);
  EXPECT_NE(section.find("1.35x (1.12–1.58; 10%: 0.99, 90%: 1.71)"), std::string::npos) << section;
  EXPECT_NE(section.find(R"(<td class="num">1/2</td>)"), std::string::npos);  // faster
  EXPECT_NE(section.find(fmt::format("${:.4f}", *s.cost_per_fast_verified)), std::string::npos);
  EXPECT_NE(section.find(R"(aria-label="speedups over the reference")"), std::string::npos);
  EXPECT_NE(section.find("median 1.35x (2 timed)"), std::string::npos);
  EXPECT_NE(section.find("no speedups"), std::string::npos);  // v1 was not timed
}

TEST(ReportCompareOutcomes, SignificantDifference) {
  RunInfo a, b;
  a.tag = "old";
  b.tag = "new";
  std::vector<SampleOutcome> oa, ob;
  for (int i = 0; i < 40; ++i) {
    SampleOutcome x;
    x.sample_id = i;
    x.key = "k" + std::to_string(100 + i);
    x.state = store::JobState::done;
    x.stage = "done";
    SampleOutcome y = x;
    // i < 20: both verified; i == 20: lost; 21..32: gained; the rest fail in both.
    x.verdict = (i < 21) ? "passed" : "failed";
    y.verdict = (i < 20 || (i >= 21 && i <= 32)) ? "passed" : "failed";
    oa.push_back(x);
    ob.push_back(y);
  }
  PairComparison p = compare_outcomes(a, oa, b, ob, 0.95);
  EXPECT_EQ(p.table.both, 20);
  EXPECT_EQ(p.table.only_a, 1);
  EXPECT_EQ(p.table.only_b, 12);
  EXPECT_EQ(p.table.neither, 7);
  // b=1, c=12: n=13, (1 + 13) * 2 / 8192 = 28 / 8192 = 0.00341796875 < 0.05.
  EXPECT_DOUBLE_EQ(p.p_value, 28.0 / 8192.0);
  EXPECT_TRUE(p.significant);
  EXPECT_NEAR(p.difference, 11.0 / 40.0, 1e-12);
  EXPECT_GT(p.difference_interval.low, 0.0);  // the whole interval lies above zero
  // With no flags, a passed verdict is verified; a flag takes it out.
  ob[0].flags = {"mutant_survived"};
  PairComparison q = compare_outcomes(a, oa, b, ob, 0.95);
  EXPECT_EQ(q.table.both, 19);
  EXPECT_EQ(q.table.only_a, 2);
}

}  // namespace
}  // namespace kforge::report

namespace kforge::report {
namespace {

TEST(ReportCompareOutcomes, NothingInCommon) {
  RunInfo a, b;
  a.tag = "a";
  b.tag = "b";
  SampleOutcome only_a;
  only_a.sample_id = 1;
  only_a.key = "x.py";
  only_a.state = store::JobState::done;
  only_a.stage = "done";
  only_a.verdict = "passed";
  Comparison c;
  c.runs = {a, b};
  c.pairs.push_back(compare_outcomes(a, {only_a}, b, {}, 0.95));
  const PairComparison& p = c.pairs[0];
  EXPECT_EQ(p.samples, 0);
  EXPECT_EQ(p.excluded_a, 1);
  EXPECT_EQ(p.p_value, 1.0);
  EXPECT_FALSE(p.significant);
  EXPECT_FALSE(p.a.cost_per_verified.has_value());
  // No rate of nothing ("0/0 [0.0, 100.0]"): the report says why no difference is called.
  std::string text = format_text(c, 10);
  EXPECT_NE(text.find("no difference can be called: no sample finished in both runs (1 in a, 0 "
                      "in b;"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("0/0"), std::string::npos) << text;
  EXPECT_EQ(text.find("[0.0, 100.0]"), std::string::npos) << text;
  EXPECT_NE(render_html(c).find("no sample finished in both runs"), std::string::npos);
  auto j = to_json(c)["comparisons"][0]["paired"];
  EXPECT_FALSE(j.contains("mcnemar_exact_p")) << j.dump();
  EXPECT_TRUE(j["no_call"].is_string()) << j.dump();
}

}  // namespace
}  // namespace kforge::report
