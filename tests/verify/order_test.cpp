// The dispatch order (verifier.order; verify/cost.hpp): the predicted cost's features on real
// TritonBench kernels, the order it gives, and a real pool of one worker taking the samples
// longest predicted first (cost) or as submitted (input).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/core/config.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/cost.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::VerifyOrder;

// A TritonBench-G kernel of tests/data/tritonbench_g_code.json (by its file name) as a request
// with no wrapper and no test.
verify::VerifyRequest tritonbench(const std::string& file) {
  auto all =
      nlohmann::json::parse(read_text(source_dir() / "tests" / "data" / "tritonbench_g_code.json"));
  verify::VerifyRequest r;
  r.key = file;
  for (const auto& rec : all)
    if (rec["file"] == file) r.code = rec["output"].get<std::string>();
  EXPECT_TRUE(r.code) << file << " is not in tritonbench_g_code.json";
  r.kernel_wrapper = "";
  r.unitest_code = "";
  return r;
}

TEST(VerifyOrder, FeaturesOfRealTritonBenchKernels) {
  struct Want {
    const char* file;
    int dots, tl_calls, jit, constexprs;
  };
  for (const Want& w :
       {Want{"chunk_retention.py", 13, 151, 4, 33}, Want{"attention_fwd_triton1.py", 7, 26, 1, 5},
        Want{"streamk_matmul.py", 2, 58, 5, 23}, Want{"add_value.py", 0, 5, 1, 1}}) {
    SCOPED_TRACE(w.file);
    auto f = verify::cost_features(tritonbench(w.file));
    EXPECT_EQ(f.dots, w.dots);
    EXPECT_EQ(f.tl_calls, w.tl_calls);
    EXPECT_EQ(f.jit, w.jit);
    EXPECT_EQ(f.constexprs, w.constexprs);
    EXPECT_EQ(f.test_bytes, 0u);
  }
  // The kernels with many tl.dot calls (long compiles on a GPU) before the element-wise one.
  double retention = verify::predicted_cost_s(tritonbench("chunk_retention.py"));
  double attention = verify::predicted_cost_s(tritonbench("attention_fwd_triton1.py"));
  double add = verify::predicted_cost_s(tritonbench("add_value.py"));
  EXPECT_GT(retention, attention);
  EXPECT_GT(attention, 2 * add);
  // The test's length counts: the same kernel with a longer test costs more.
  auto tested = tritonbench("add_value.py");
  tested.unitest_code = std::string(4000, '#');
  EXPECT_EQ(verify::cost_features(tested).test_bytes, 4000u);
  EXPECT_GT(verify::predicted_cost_s(tested), add);
  // The wrapper's kernels count as the code's do.
  auto split = tritonbench("add_value.py");
  split.kernel_wrapper = "# tl.dot(a, b)\n";
  EXPECT_EQ(verify::cost_features(split).dots, 1);
}

TEST(VerifyOrder, LongestPredictedFirstTiesInInputOrder) {
  const std::vector<double> costs = {1.0, 3.0, 2.0, 3.0, 0.5};
  EXPECT_EQ(verify::dispatch_order(costs, VerifyOrder::cost),
            (std::vector<std::size_t>{1, 3, 2, 0, 4}));
  EXPECT_EQ(verify::dispatch_order(costs, VerifyOrder::input),
            (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(verify::dispatch_order({}, VerifyOrder::cost).empty());
}

// verifier.order: input by default, input or cost read, anything else refused at its line; a
// reload takes it.
TEST(VerifyOrder, TheSettingIsReadAndReloaded) {
  auto read = [](const std::string& yaml, verify::VerifierConfig& c) -> Status {
    auto r =
        ConfigReader::load_string(yaml, "k.yaml", [](const std::string&) { return std::nullopt; });
    if (!r.ok()) return r.error();
    verify::read_config((*r)->root().child("verifier"), c);
    return (*r)->finish();
  };
  verify::VerifierConfig c;
  EXPECT_EQ(c.order, VerifyOrder::input);
  ASSERT_TRUE(read("verifier:\n  order: cost\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::cost);
  ASSERT_TRUE(read("verifier:\n  order: input\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::input);
  verify::VerifierConfig bad;
  auto st = read("verifier:\n  order: shortest\n", bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("k.yaml:2: verifier.order"), std::string::npos)
      << st.error().message;
  verify::VerifierConfig running;
  running.order = VerifyOrder::cost;
  EXPECT_TRUE(verify::apply_reloadable(running, c));
  EXPECT_EQ(running.order, VerifyOrder::input);
}

// The "pass" sample with `dots` tl.dot calls in a comment (a higher predicted cost, the same
// run) and a test that prints when it starts (CLOCK_MONOTONIC, one clock for every process).
verify::VerifyRequest costed(int dots) {
  auto r = load_sample("pass");
  r.key = "k" + std::to_string(dots);
  for (int i = 0; i < dots; ++i) *r.code += "\n# tl.dot(a, b)";
  *r.code += "\n";
  r.unitest_code =
      "import time as _kf_time\nprint('KF_START', _kf_time.monotonic_ns(), flush=True)\n" +
      *r.unitest_code;
  return r;
}

// The keys of `results` in the order their tests started (the first KF_START of each).
std::vector<std::string> start_order(const std::vector<verify::VerifyResult>& results) {
  std::vector<std::pair<long long, std::string>> starts;
  for (const auto& r : results) {
    auto at = r.stdout_text.find("KF_START ");
    EXPECT_NE(at, std::string::npos) << r.key << ": " << r.detail << "\n" << r.stdout_text;
    if (at == std::string::npos) continue;
    starts.emplace_back(std::stoll(r.stdout_text.substr(at + 9)), r.key);
  }
  std::sort(starts.begin(), starts.end());
  std::vector<std::string> keys;
  for (const auto& s : starts) keys.push_back(s.second);
  return keys;
}

// One worker, four samples submitted before it takes any: by cost it takes the longest predicted
// first; by input, as submitted. Either way each result comes to its own callback, verdicts alike.
TEST(VerifyOrder, APoolOfOneWorkerTakesTheLongestPredictedFirst) {
  const std::vector<int> dots = {0, 4, 1, 9};
  std::vector<verify::VerifyRequest> requests;
  for (int d : dots) requests.push_back(costed(d));
  for (VerifyOrder order : {VerifyOrder::cost, VerifyOrder::input}) {
    SCOPED_TRACE(std::string(verify::to_string(order)));
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.cpu_workers = 1;
    cfg.timeout_s = 60;
    cfg.order = order;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto results = run_all(*pool, requests);
    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].key, requests[i].key);
      EXPECT_EQ(results[i].verdict, verify::Verdict::passed) << results[i].detail;
    }
    if (order == VerifyOrder::cost) {
      EXPECT_EQ(start_order(results), (std::vector<std::string>{"k9", "k4", "k1", "k0"}));
    } else {
      EXPECT_EQ(start_order(results), (std::vector<std::string>{"k0", "k4", "k1", "k9"}));
    }
  }
}

}  // namespace
}  // namespace kforge::test
