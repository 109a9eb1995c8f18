#include "kforge/pipeline/metrics.hpp"

#include <cstdio>
#include <cstdlib>

namespace kforge::pipeline {
namespace {

std::string esc(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o.push_back('\\');
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o.push_back(c);
  }
  return o;
}

// The shortest text that reads back as v (0.05, not 0.050000000000000003).
std::string num(double v) {
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

class Out {
 public:
  void head(const char* name, const char* type, const char* help) {
    s_ += "# HELP ";
    s_ += name;
    s_ += ' ';
    s_ += help;
    s_ += "\n# TYPE ";
    s_ += name;
    s_ += ' ';
    s_ += type;
    s_ += '\n';
  }
  void line(const std::string& name, const std::string& labels, double v) {
    s_ += name;
    if (!labels.empty()) s_ += "{" + labels + "}";
    s_ += ' ' + num(v) + '\n';
  }
  std::string str() && { return std::move(s_); }

 private:
  std::string s_;
};

std::string label(const char* k, const std::string& v) {
  return std::string(k) + "=\"" + esc(v) + "\"";
}

}  // namespace

Status collect_db_metrics(store::Db& db, MetricsSnapshot& m) {
  const auto& q = pipeline_queries();
  m.jobs.clear();
  m.verdicts.clear();
  {
    KF_TRY(store::Stmt * s, db.cached(q["jobs_by_run_state"]));
    KF_CHECK(s->each([&](store::Stmt& r) { m.jobs[{r.text(0), r.text(1)}] = r.int64(2); }));
  }
  KF_TRY(store::Stmt * s, db.cached(q["verdicts_all"]));
  KF_CHECK(s->each([&](store::Stmt& r) { m.verdicts[r.text(0)] = r.int64(1); }));
  return {};
}

std::string render_prometheus(const MetricsSnapshot& m) {
  Out o;
  o.head("kforge_up", "gauge", "1 while the daemon serves.");
  o.line("kforge_up", "", 1);
  o.head("kforge_uptime_seconds", "gauge", "Seconds since the daemon started.");
  o.line("kforge_uptime_seconds", "", m.uptime_s);
  o.head("kforge_draining", "gauge", "1 after SIGTERM: no new leases, calls in flight finish.");
  o.line("kforge_draining", "", m.draining ? 1 : 0);

  o.head("kforge_jobs", "gauge", "Jobs by run and state.");
  for (const auto& [k, v] : m.jobs)
    o.line("kforge_jobs", label("run", k.first) + "," + label("state", k.second),
           static_cast<double>(v));
  o.head("kforge_verifications", "gauge", "Verification attempts by verdict (all runs).");
  for (const auto& [k, v] : m.verdicts)
    o.line("kforge_verifications", label("verdict", k), static_cast<double>(v));

  const auto& s = m.scheduler;
  o.head("kforge_stage_calls_in_flight", "gauge", "Stage calls submitted and not yet answered.");
  o.line("kforge_stage_calls_in_flight", "", m.in_flight);
  o.head("kforge_stage_outputs_total", "counter",
         "Stage answers checkpointed, by stage and status.");
  for (const auto& [k, v] : s.outputs) {
    auto colon = k.find(':');
    o.line("kforge_stage_outputs_total",
           label("stage", k.substr(0, colon)) + "," + label("status", k.substr(colon + 1)),
           static_cast<double>(v));
  }
  o.head("kforge_jobs_leased_total", "counter", "Jobs leased by this process.");
  o.line("kforge_jobs_leased_total", "", static_cast<double>(s.leased));
  o.head("kforge_jobs_failed_total", "counter", "Jobs that ended failed in this process.");
  o.line("kforge_jobs_failed_total", "", static_cast<double>(s.jobs_failed));
  o.head("kforge_jobs_to_verify_total", "counter", "Jobs handed to the verifier queue.");
  o.line("kforge_jobs_to_verify_total", "", static_cast<double>(s.jobs_to_verify));
  o.head("kforge_leases_lost_total", "counter", "Answers dropped because the lease was lost.");
  o.line("kforge_leases_lost_total", "", static_cast<double>(s.lost_leases));
  o.head("kforge_scheduler_busy_seconds_total", "counter",
         "Time the scheduler spent on its own work (leasing, prompts, checks, checkpoints).");
  o.line("kforge_scheduler_busy_seconds_total", "", static_cast<double>(s.busy_ns) / 1e9);

  const auto& l = m.llm;
  o.head("kforge_llm_requests_total", "counter", "LLM requests delivered, by outcome.");
  o.line("kforge_llm_requests_total", label("outcome", "ok"),
         static_cast<double>(l.succeeded - std::min(l.succeeded, l.from_store)));
  o.line("kforge_llm_requests_total", label("outcome", "replayed"),
         static_cast<double>(l.from_store));
  o.line("kforge_llm_requests_total", label("outcome", "failed"), static_cast<double>(l.failed));
  o.head("kforge_llm_failures_total", "counter", "LLM requests failed, by error kind.");
  for (const auto& [k, v] : l.failures_by_kind)
    o.line("kforge_llm_failures_total", label("kind", k), static_cast<double>(v));
  o.head("kforge_llm_http_responses_total", "counter", "HTTP responses by status (0: none).");
  for (const auto& [k, v] : l.responses_by_status)
    o.line("kforge_llm_http_responses_total", label("status", std::to_string(k)),
           static_cast<double>(v));
  o.head("kforge_llm_http_attempts_total", "counter", "HTTP requests sent.");
  o.line("kforge_llm_http_attempts_total", "", static_cast<double>(l.http_attempts));
  o.head("kforge_llm_retries_total", "counter", "HTTP attempts beyond the first.");
  o.line("kforge_llm_retries_total", "", static_cast<double>(l.retries));
  o.head("kforge_llm_request_duration_seconds", "histogram",
         "Latency of LLM calls from submit to delivery, retries included.");
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < l.latency_bounds_ms.size() && i < l.latency_counts.size(); ++i) {
    cum += l.latency_counts[i];
    o.line("kforge_llm_request_duration_seconds_bucket",
           label("le", num(l.latency_bounds_ms[i] / 1000.0)), static_cast<double>(cum));
  }
  if (!l.latency_counts.empty())
    cum += l.latency_counts.size() > l.latency_bounds_ms.size() ? l.latency_counts.back() : 0;
  o.line("kforge_llm_request_duration_seconds_bucket", label("le", "+Inf"),
         static_cast<double>(cum));
  o.line("kforge_llm_request_duration_seconds_sum", "", l.latency_sum_ms / 1000.0);
  o.line("kforge_llm_request_duration_seconds_count", "", static_cast<double>(cum));
  o.head("kforge_llm_tokens_total", "counter", "Tokens reported by the provider.");
  o.line("kforge_llm_tokens_total", label("kind", "prompt"), static_cast<double>(l.prompt_tokens));
  o.line("kforge_llm_tokens_total", label("kind", "completion"),
         static_cast<double>(l.completion_tokens));
  o.head("kforge_llm_cost_usd_total", "counter", "Spent on LLM calls (from the price table).");
  o.line("kforge_llm_cost_usd_total", "", l.cost_usd);
  o.head("kforge_llm_in_flight", "gauge", "HTTP requests on the wire.");
  o.line("kforge_llm_in_flight", "", l.in_flight);
  o.head("kforge_llm_waiting", "gauge", "Requests accepted and not on the wire.");
  o.line("kforge_llm_waiting", "", l.waiting);
  o.head("kforge_llm_concurrency_limit", "gauge", "The client's adaptive concurrency limit.");
  o.line("kforge_llm_concurrency_limit", "", l.concurrency_limit);
  o.head("kforge_llm_batches_open", "gauge",
         "Batches recorded and not done (llm.mode batch): uploading, created or running.");
  o.line("kforge_llm_batches_open", "", l.batches_open);
  o.head("kforge_llm_batch_requests", "gauge",
         "Requests in open batches, and those collected for the next batch.");
  o.line("kforge_llm_batch_requests", label("state", "in_batch"), l.batch_lines_in_flight);
  o.line("kforge_llm_batch_requests", label("state", "collecting"), l.batch_lines_waiting);
  o.head("kforge_llm_batches_total", "counter",
         "Batches created by this process, and those found at the provider after a restart.");
  o.line("kforge_llm_batches_total", label("how", "created"),
         static_cast<double>(l.batches_created));
  o.line("kforge_llm_batches_total", label("how", "adopted"),
         static_cast<double>(l.batches_adopted));
  o.head("kforge_llm_batch_lines_total", "counter", "Batch lines by outcome.");
  o.line("kforge_llm_batch_lines_total", label("outcome", "answered"),
         static_cast<double>(l.batch_lines_answered));
  o.line("kforge_llm_batch_lines_total", label("outcome", "failed"),
         static_cast<double>(l.batch_lines_failed));
  o.head("kforge_llm_batch_poll_errors_total", "counter",
         "Batch polls that failed (5xx, timeouts, unreadable answers).");
  o.line("kforge_llm_batch_poll_errors_total", "", static_cast<double>(l.batch_poll_errors));
  return std::move(o).str();
}

}  // namespace kforge::pipeline
