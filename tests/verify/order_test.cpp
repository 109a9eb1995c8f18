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

// Replays `order` on `workers` workers with the durations `costs` (a greedy pool): each record's
// start and end, and the wall time.
struct Replay {
  std::vector<double> start, end;
  double wall = 0;
};
Replay replay(const std::vector<double>& costs, const std::vector<std::size_t>& order,
              int workers) {
  Replay r;
  r.start.assign(costs.size(), 0.0);
  r.end.assign(costs.size(), 0.0);
  std::vector<double> free_at(static_cast<std::size_t>(workers), 0.0);
  for (std::size_t i : order) {
    auto w = std::min_element(free_at.begin(), free_at.end());
    r.start[i] = *w;
    *w += costs[i];
    r.end[i] = *w;
    r.wall = std::max(r.wall, *w);
  }
  return r;
}

// early_long over a batch of 300 samples on 8 workers: 294 of 1 s and six of 10 to 20 s (more than
// a fifth of the 47.5 s per worker) at input positions 10 to 299. The six go first, the longest
// first, at most 2 (a quarter of 8) running at once as a pool with the predicted durations would
// run them and at least 4 positions apart; the others keep their input order; the same input
// gives the same order; the batch ends near sum / workers, where input order ends with the
// 10 s sample started last.
TEST(VerifyOrder, EarlyLongMovesTheLongSamplesEarlySpreadAndKeepsTheRestInInputOrder) {
  std::vector<double> costs(300, 1.0);
  const std::map<std::size_t, double> longs = {{10, 20.0},  {150, 18.0}, {200, 15.0},
                                               {240, 12.0}, {270, 11.0}, {299, 10.0}};
  for (const auto& [at, c] : longs) costs[at] = c;
  auto plan = verify::plan_dispatch(costs, VerifyOrder::early_long, 8);
  EXPECT_DOUBLE_EQ(plan.per_worker_s, 380.0 / 8);
  EXPECT_DOUBLE_EQ(plan.long_s, 0.2 * 380.0 / 8);
  EXPECT_EQ(plan.long_at_once, 2);
  EXPECT_EQ(plan.spacing, 4);
  ASSERT_EQ(plan.order.size(), costs.size());
  for (std::size_t i = 0; i < costs.size(); ++i)
    EXPECT_EQ(plan.is_long[i], longs.count(i) > 0) << i;
  EXPECT_EQ(plan.order, verify::plan_dispatch(costs, VerifyOrder::early_long, 8).order);
  EXPECT_EQ(plan.order, verify::dispatch_order(costs, VerifyOrder::early_long, 8));

  std::vector<std::size_t> long_pos, long_seq, others;
  for (std::size_t p = 0; p < plan.order.size(); ++p) {
    if (plan.is_long[plan.order[p]]) {
      long_pos.push_back(p);
      long_seq.push_back(plan.order[p]);
    } else {
      others.push_back(plan.order[p]);
    }
  }
  EXPECT_EQ(long_seq, (std::vector<std::size_t>{10, 150, 200, 240, 270, 299}));  // longest first
  EXPECT_TRUE(std::is_sorted(others.begin(), others.end()));                     // input order
  ASSERT_EQ(long_pos.size(), 6u);
  EXPECT_EQ(long_pos[0], 0u);
  EXPECT_EQ(long_pos[1], 4u);  // both start at once, among the first 8, 4 positions apart
  for (std::size_t k = 1; k < long_pos.size(); ++k) EXPECT_GE(long_pos[k] - long_pos[k - 1], 4u);
  // Replayed with the predicted durations: never more than 2 long ones at once, each next one
  // as one ends, and every long one ends before the last sample starts.
  auto r = replay(costs, plan.order, 8);
  double last_start = *std::max_element(r.start.begin(), r.start.end());
  for (std::size_t i : long_seq) {
    int at_once = 0;
    for (std::size_t j : long_seq)
      at_once += r.start[j] <= r.start[i] && r.start[i] < r.end[j] ? 1 : 0;
    EXPECT_LE(at_once, 2) << "long sample " << i << " starting at " << r.start[i];
    EXPECT_LT(r.end[i], last_start) << "long sample " << i;
  }
  EXPECT_EQ(r.start[200], 18.0);  // as the 18 s one ends
  EXPECT_LE(r.wall, 380.0 / 8 + 1.0);
  EXPECT_EQ(replay(costs, verify::dispatch_order(costs, VerifyOrder::input, 8), 8).wall, 55.0);
}

// A batch too short for the long ones to run two at a time (94 samples of 1 s, the same six, 8
// workers: 22.5 s per worker): a long one that would end after 22.5 s if it waited longer starts
// anyway, so none ends the run late; the others still keep their input order.
TEST(VerifyOrder, EarlyLongStartsALongSampleThatCannotWaitBeyondTheCap) {
  std::vector<double> costs(100, 1.0);
  const std::map<std::size_t, double> longs = {{10, 20.0}, {50, 18.0}, {70, 15.0},
                                               {80, 12.0}, {90, 11.0}, {99, 10.0}};
  for (const auto& [at, c] : longs) costs[at] = c;
  auto plan = verify::plan_dispatch(costs, VerifyOrder::early_long, 8);
  auto r = replay(costs, plan.order, 8);
  for (const auto& [i, c] : longs) {
    EXPECT_TRUE(plan.is_long[i]) << i;
    EXPECT_LE(r.end[i], 180.0 / 8 + 1.0) << "long sample " << i;
  }
  EXPECT_LE(r.wall, 180.0 / 8 + 1.0);
  EXPECT_EQ(replay(costs, verify::dispatch_order(costs, VerifyOrder::input, 8), 8).wall, 27.0);
  std::vector<std::size_t> others;
  for (std::size_t i : plan.order)
    if (!plan.is_long[i]) others.push_back(i);
  EXPECT_TRUE(std::is_sorted(others.begin(), others.end()));
}

// Small and degenerate batches: nothing long (every cost alike) keeps input order; with fewer
// samples than workers everything is long and goes longest first; one worker: the long ones
// first, then the rest as given.
TEST(VerifyOrder, EarlyLongOnSmallBatches) {
  EXPECT_EQ(verify::dispatch_order(std::vector<double>(20, 2.0), VerifyOrder::early_long, 4),
            verify::dispatch_order(std::vector<double>(20, 2.0), VerifyOrder::input, 4));
  const std::vector<double> costs = {1.0, 3.0, 2.0, 3.0, 0.5};
  EXPECT_EQ(verify::dispatch_order(costs, VerifyOrder::early_long, 16),
            (std::vector<std::size_t>{1, 3, 2, 0, 4}));
  // One worker: 9.5 s in all; the 3 s and 2 s ones are long (over 1.9 s), one at a time, first.
  auto plan = verify::plan_dispatch(costs, VerifyOrder::early_long, 1);
  EXPECT_EQ(plan.long_at_once, 1);
  EXPECT_EQ(plan.spacing, 1);
  EXPECT_EQ(plan.order, (std::vector<std::size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(verify::dispatch_order({}, VerifyOrder::early_long, 16).empty());
  // A worker count below one is taken as one.
  EXPECT_EQ(verify::dispatch_order(costs, VerifyOrder::early_long, 0), plan.order);
}

// verifier.order: input by default, input, cost or early_long read, anything else refused at
// its line; a reload takes it.
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
  ASSERT_TRUE(read("verifier:\n  order: early_long\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::early_long);
  ASSERT_TRUE(read("verifier:\n  order: input\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::input);
  for (const char* wrong : {"shortest", "early-long", "Early_Long"}) {
    verify::VerifierConfig bad;
    auto st = read(std::string("verifier:\n  order: ") + wrong + "\n", bad);
    ASSERT_FALSE(st.ok()) << wrong;
    EXPECT_NE(st.error().message.find("k.yaml:2: verifier.order: '" + std::string(wrong) +
                                      "' is not one of cost, input, early_long"),
              std::string::npos)
        << st.error().message;
  }
  verify::VerifierConfig running;
  running.order = VerifyOrder::cost;
  EXPECT_TRUE(verify::apply_reloadable(running, c));
  EXPECT_EQ(running.order, VerifyOrder::input);
  verify::VerifierConfig spread;
  spread.order = VerifyOrder::early_long;
  EXPECT_TRUE(verify::apply_reloadable(running, spread));
  EXPECT_EQ(running.order, VerifyOrder::early_long);
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
// first; by input, as submitted; by early_long too (the submitter plans that order, the pool
// keeps it). Either way each result comes to its own callback, verdicts alike.
TEST(VerifyOrder, APoolOfOneWorkerTakesTheLongestPredictedFirst) {
  const std::vector<int> dots = {0, 4, 1, 9};
  std::vector<verify::VerifyRequest> requests;
  for (int d : dots) requests.push_back(costed(d));
  for (VerifyOrder order : {VerifyOrder::cost, VerifyOrder::input, VerifyOrder::early_long}) {
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
