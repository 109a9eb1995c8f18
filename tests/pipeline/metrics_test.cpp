// The Prometheus page: names, labels, escaping, cumulative histogram buckets.

#include <gtest/gtest.h>

#include "kforge/pipeline/metrics.hpp"

namespace kforge::pipeline {
namespace {

TEST(Metrics, RendersThePrometheusTextFormat) {
  MetricsSnapshot m;
  m.jobs[{"v2-\"a\"", "queued"}] = 3;
  m.jobs[{"v2-\"a\"", "verify_queued"}] = 5;
  m.verdicts["passed"] = 2;
  m.scheduler.outputs["analyze:ok"] = 7;
  m.scheduler.outputs["generate:rejected"] = 1;
  m.scheduler.busy_ns = 1'500'000'000;
  m.llm.succeeded = 10;
  m.llm.from_store = 4;
  m.llm.failed = 1;
  m.llm.failures_by_kind["timeout"] = 1;
  m.llm.latency_bounds_ms = {50, 100};
  m.llm.latency_counts = {6, 3, 1};
  m.llm.latency_sum_ms = 700;
  m.llm.prompt_tokens = 1234;
  m.in_flight = 4;
  std::string t = render_prometheus(m);
  for (const char* line :
       {"# TYPE kforge_jobs gauge\n", "kforge_jobs{run=\"v2-\\\"a\\\"\",state=\"queued\"} 3\n",
        "kforge_verifications{verdict=\"passed\"} 2\n",
        "kforge_stage_outputs_total{stage=\"generate\",status=\"rejected\"} 1\n",
        "kforge_scheduler_busy_seconds_total 1.5\n", "kforge_stage_calls_in_flight 4\n",
        "kforge_llm_requests_total{outcome=\"ok\"} 6\n",
        "kforge_llm_requests_total{outcome=\"replayed\"} 4\n",
        "kforge_llm_failures_total{kind=\"timeout\"} 1\n",
        "# TYPE kforge_llm_request_duration_seconds histogram\n",
        "kforge_llm_request_duration_seconds_bucket{le=\"0.05\"} 6\n",
        "kforge_llm_request_duration_seconds_bucket{le=\"0.1\"} 9\n",
        "kforge_llm_request_duration_seconds_bucket{le=\"+Inf\"} 10\n",
        "kforge_llm_request_duration_seconds_sum 0.7\n",
        "kforge_llm_request_duration_seconds_count 10\n",
        "kforge_llm_tokens_total{kind=\"prompt\"} 1234\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line << "\n" << t;
}

}  // namespace
}  // namespace kforge::pipeline
