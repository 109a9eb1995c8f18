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

// early_long's submission order over a batch of 300 samples on 8 workers: 294 of 1 s and six
// of 10 to 20 s (more than 6% of the 47.5 s per worker) at input positions 10 to 299. The six
// go first, the longest first, one every 2 positions (8 workers / 4, half of them, at once);
// the others keep their input order; the same input gives the same order. With a fifth and a
// quarter instead, one every 4 positions.
TEST(VerifyOrder, EarlyLongMovesTheLongSamplesEarlySpreadAndKeepsTheRestInInputOrder) {
  std::vector<double> costs(300, 1.0);
  const std::map<std::size_t, double> longs = {{10, 20.0},  {150, 18.0}, {200, 15.0},
                                               {240, 12.0}, {270, 11.0}, {299, 10.0}};
  for (const auto& [at, c] : longs) costs[at] = c;
  auto plan = verify::plan_dispatch(costs, VerifyOrder::early_long, 8);
  EXPECT_DOUBLE_EQ(plan.per_worker_s, 380.0 / 8);
  EXPECT_DOUBLE_EQ(plan.long_s, 0.06 * 380.0 / 8);
  EXPECT_EQ(plan.long_at_once, 4);
  EXPECT_EQ(plan.spacing, 2);
  EXPECT_EQ(verify::long_at_once(8), 4);
  EXPECT_EQ(verify::long_spacing(8), 2);
  ASSERT_EQ(plan.order.size(), costs.size());
  for (std::size_t i = 0; i < costs.size(); ++i)
    EXPECT_EQ(plan.is_long[i], longs.count(i) > 0) << i;
  EXPECT_EQ(plan.order, verify::plan_dispatch(costs, VerifyOrder::early_long, 8).order);
  EXPECT_EQ(plan.order, verify::dispatch_order(costs, VerifyOrder::early_long, 8));

  auto split = [&](const verify::DispatchPlan& p) {
    std::vector<std::size_t> long_pos, long_seq, others;
    for (std::size_t k = 0; k < p.order.size(); ++k) {
      if (p.is_long[p.order[k]]) {
        long_pos.push_back(k);
        long_seq.push_back(p.order[k]);
      } else {
        others.push_back(p.order[k]);
      }
    }
    EXPECT_EQ(long_seq, (std::vector<std::size_t>{10, 150, 200, 240, 270, 299}));  // longest first
    EXPECT_TRUE(std::is_sorted(others.begin(), others.end()));                     // input order
    EXPECT_EQ(others.size(), 294u);
    return long_pos;
  };
  EXPECT_EQ(split(plan), (std::vector<std::size_t>{0, 2, 4, 6, 8, 10}));
  verify::EarlyLong fifth;
  fifth.long_share = 0.2;
  fifth.busy_share = 0.25;
  auto spread = verify::plan_dispatch(costs, VerifyOrder::early_long, 8, fifth);
  EXPECT_DOUBLE_EQ(spread.long_s, 0.2 * 380.0 / 8);
  EXPECT_EQ(spread.long_at_once, 2);
  EXPECT_EQ(spread.spacing, 4);
  EXPECT_EQ(split(spread), (std::vector<std::size_t>{0, 4, 8, 12, 16, 20}));
  // Other orders carry no long marks.
  auto by_cost = verify::plan_dispatch(costs, VerifyOrder::cost, 8);
  EXPECT_EQ(std::count(by_cost.is_long.begin(), by_cost.is_long.end(), true), 0);
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
  // One worker: 9.5 s in all; all but the 0.5 s one are long (over 0.57 s), first.
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
  verify::VerifierConfig c;
  EXPECT_EQ(c.order, VerifyOrder::input);
  ASSERT_TRUE(read_verifier("verifier:\n  order: cost\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::cost);
  ASSERT_TRUE(read_verifier("verifier:\n  order: early_long\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::early_long);
  ASSERT_TRUE(read_verifier("verifier:\n  order: input\n", c).ok());
  EXPECT_EQ(c.order, VerifyOrder::input);
  for (const char* wrong : {"shortest", "early-long", "Early_Long"}) {
    verify::VerifierConfig bad;
    auto st = read_verifier(std::string("verifier:\n  order: ") + wrong + "\n", bad);
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
// first; by input, as submitted; by early_long with no long cost set (none is long), as
// submitted too. Either way each result comes to its own callback, verdicts alike.
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

// The CLOCK_MONOTONIC nanoseconds a result's test printed after `tag` (the first time).
long long printed_ns(const verify::VerifyResult& r, const std::string& tag) {
  auto at = r.stdout_text.find(tag + " ");
  EXPECT_NE(at, std::string::npos) << r.key << ": " << r.detail << "\n" << r.stdout_text;
  return at == std::string::npos ? 0 : std::stoll(r.stdout_text.substr(at + tag.size() + 1));
}

// A costed() sample whose test sleeps `seconds` and prints when it ends.
verify::VerifyRequest sleeping(int dots, double seconds, const std::string& key) {
  auto r = costed(dots);
  r.key = key;
  *r.unitest_code += "\n_kf_time.sleep(" + std::to_string(seconds) +
                     ")\nprint('KF_END', _kf_time.monotonic_ns(), flush=True)\n";
  return r;
}

// early_long in the pool: two workers, so one long sample at a time (half of two) and long ones
// two dispatches apart. Two long samples (9 tl.dot calls: above the long cost set) submitted
// first, then eight short ones that sleep 0.5 s each: the second long one waits until the
// first has ended, while the other worker takes the short ones in their order. In input order
// the two long ones run together.
TEST(VerifyOrder, APoolRunsAtMostItsShareOfLongSamplesAtOnce) {
  std::vector<verify::VerifyRequest> requests = {sleeping(9, 1.0, "L1"), sleeping(9, 1.0, "L2")};
  for (int k = 0; k < 8; ++k) requests.push_back(sleeping(0, 0.5, "S" + std::to_string(k)));
  double long_cost =
      (verify::predicted_cost_s(requests[0]) + verify::predicted_cost_s(requests[2])) / 2;
  for (VerifyOrder order : {VerifyOrder::early_long, VerifyOrder::input}) {
    SCOPED_TRACE(std::string(verify::to_string(order)));
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.cpu_workers = 2;
    cfg.timeout_s = 60;
    cfg.order = order;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    ASSERT_EQ(pool->slots(), 2);
    EXPECT_EQ(verify::long_at_once(2), 1);
    pool->set_long_cost(long_cost);
    auto results = run_all(*pool, requests);
    ASSERT_EQ(results.size(), requests.size());
    for (const auto& r : results)
      EXPECT_EQ(r.verdict, verify::Verdict::passed) << r.key << r.detail;
    long long l1_end = printed_ns(results[0], "KF_END");
    long long l2_start = printed_ns(results[1], "KF_START");
    auto starts = start_order(results);
    // The short ones are handed out in their order (report.pool.dispatched_ms: two processes
    // started a millisecond apart may print in either order).
    std::vector<std::pair<long long, std::string>> handed;
    for (const auto& r : results)
      if (r.key[0] == 'S')
        handed.emplace_back(r.report["pool"]["dispatched_ms"].get<long long>(), r.key);
    std::stable_sort(handed.begin(), handed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> shorts;
    for (const auto& h : handed) shorts.push_back(h.second);
    EXPECT_TRUE(std::is_sorted(shorts.begin(), shorts.end()));
    if (order == VerifyOrder::early_long) {
      EXPECT_GE(l2_start, l1_end) << "the second long sample ran beside the first";
      // The pool hands L1 out first (which process then prints first is the scheduler's).
      for (const auto& r : results)
        EXPECT_LE(results[0].report["pool"]["dispatched_ms"].get<long long>(),
                  r.report["pool"]["dispatched_ms"].get<long long>())
            << r.key;
      EXPECT_NE(starts.back(), "L2");  // not left to the end either: short ones were waiting
    } else {
      EXPECT_LT(l2_start, l1_end) << "in input order the two long samples run together";
    }
  }
}

}  // namespace
}  // namespace kforge::test
