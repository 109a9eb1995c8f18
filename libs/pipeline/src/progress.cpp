#include "kforge/pipeline/progress.hpp"

#include <algorithm>
#include <cmath>

#include "kforge/core/clock.hpp"
#include "kforge/store/run_prompts.hpp"
#include "kforge/store/states.hpp"

namespace kforge::pipeline {

namespace {
using store::JobState;
using store::Stmt;
constexpr std::int64_t kRateWindowMs = 10 * 60 * 1000;
constexpr std::int64_t kRateSamples = 1000;
constexpr std::int64_t kErrorWindowMs = 24 * 60 * 60 * 1000;
}  // namespace

namespace {
Result<std::vector<RunProgress>> progress_of(store::Db& db, std::int64_t now_ms,
                                             std::vector<RunRow> runs);
}  // namespace

// The JobStores below only read runs: their clock stands still at the caller's now_ms.

Result<std::vector<RunProgress>> collect_progress(store::Db& db, std::int64_t now_ms,
                                                  const std::optional<std::string>& tag) {
  ManualClock at(now_ms);
  JobStore jobs(db, at);
  std::vector<RunRow> runs;
  if (tag) {
    KF_TRY(auto r, jobs.run_by_tag(*tag));
    if (!r) return fail("not_found", "no run '" + *tag + "' (kforge status lists the runs)");
    runs.push_back(std::move(*r));
  } else {
    KF_TRY(runs, jobs.all_runs());
  }
  return progress_of(db, now_ms, std::move(runs));
}

Result<std::vector<RunProgress>> collect_active_progress(store::Db& db, std::int64_t now_ms) {
  ManualClock at(now_ms);
  JobStore jobs(db, at);
  KF_TRY(auto runs, jobs.active_runs());
  return progress_of(db, now_ms, std::move(runs));
}

namespace {
// The speed label's flags of run `id`'s passing samples and why those not timed were not.
Status read_speed_flags(store::Db& db, std::int64_t id, RunProgress& p) {
  const auto& q = pipeline_queries();
  {
    KF_TRY(Stmt * s, db.cached(q["run_speed_flags"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) { p.speed_flags.emplace_back(r.text(0), r.int64(1)); }));
  }
  KF_TRY(Stmt * s, db.cached(q["run_not_timed_reasons"]));
  s->bind(1, id);
  return s->each([&](store::Stmt& r) { p.not_timed_reasons.emplace_back(r.text(0), r.int64(1)); });
}
}  // namespace

Result<std::map<std::string, std::int64_t>> jobs_by_state(store::Db& db) {
  std::map<std::string, std::int64_t> out;
  KF_TRY(Stmt * s, db.cached(pipeline_queries()["jobs_by_state_all"]));
  KF_CHECK(s->each([&](Stmt& r) { out[r.text(0)] = r.int64(1); }));
  return out;
}

namespace {
// A run's jobs by state and stage, and the counts made of them.
Status read_jobs(store::Db& db, RunProgress& p) {
  const auto& q = pipeline_queries();
  std::int64_t id = p.run.id;
  {
    KF_TRY(Stmt * s, db.cached(q["run_jobs_by_state_stage"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) {
      std::string state = r.text(0), stage = r.text(1);
      std::int64_t n = r.int64(2);
      p.by_state[state] += n;
      p.by_stage[stage][state] += n;
      p.total += n;
    }));
  }
  auto jobs_in = [&](std::initializer_list<JobState> states) {
    std::int64_t n = 0;
    for (JobState st : states)
      if (auto it = p.by_state.find(std::string(to_string(st))); it != p.by_state.end())
        n += it->second;
    return n;
  };
  p.past_llm =
      jobs_in({JobState::verify_queued, JobState::verifying, JobState::done, JobState::failed});
  // A cancelled job got past the LLM stages only if it was cancelled at the verifier.
  const std::string cancelled(to_string(JobState::cancelled));
  if (auto v = p.by_stage.find(std::string(to_string(store::JobStep::verify)));
      v != p.by_stage.end() && v->second.count(cancelled))
    p.past_llm += v->second.at(cancelled);
  p.cancelled = jobs_in({JobState::cancelled});
  p.remaining = jobs_in({JobState::queued, JobState::leased});
  p.verifying = jobs_in({JobState::verify_queued, JobState::verifying});
  p.ended = jobs_in({JobState::done, JobState::failed});
  return {};
}

// Tokens, cost, replayed answers, a provider's pause, mended answers, reasoning, stage outputs.
// Returns the run's first answer's time (0: none yet).
Result<std::int64_t> read_usage(store::Db& db, std::int64_t now_ms, RunProgress& p) {
  const auto& q = pipeline_queries();
  std::int64_t id = p.run.id;
  std::int64_t first_ms = 0;
  {
    KF_TRY(Stmt * s, db.cached(q["run_usage"]));
    s->bind(1, id);
    KF_TRY(bool row, s->step());
    if (row) {
      p.prompt_tokens = s->int64(0);
      p.completion_tokens = s->int64(1);
      p.cost_usd = s->real(2);
      first_ms = s->is_null(4) ? 0 : s->int64(4);
    }
    s->reset();
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_calls"]));
    s->bind(1, p.run.tag);
    bool any = false;
    std::int64_t pt = 0, ct = 0;
    double cost = 0;
    KF_CHECK(s->each([&](store::Stmt& r) {
      any = true;
      if (r.int64(0) != 0) {
        p.replayed_calls = r.int64(1);
        p.saved_usd = r.real(4);
      } else {
        pt = r.int64(2);
        ct = r.int64(3);
        cost = r.real(4);
      }
    }));
    if (any) {
      p.prompt_tokens = pt;
      p.completion_tokens = ct;
      p.cost_usd = cost;
    }
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_wait"]));
    s->bind(1, id);
    KF_TRY(bool row, s->step());
    if (row && s->int64(0) > now_ms) {
      p.wait_until_ms = s->int64(0);
      p.wait_reason = s->text(1);
    }
    s->reset();
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_mended"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) {
      std::string list = r.text(0);
      for (std::size_t b = 0; b <= list.size();) {
        std::size_t e = std::min(list.find(',', b), list.size());
        if (e > b) p.mended[list.substr(b, e - b)] += r.int64(1);
        b = e + 1;
      }
    }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_reasoning_usage"]));
    s->bind(1, id);
    KF_TRY(bool row, s->step());
    if (row) {
      p.reasoning_tokens = s->int64(0);
      p.cached_prompt_tokens = s->int64(1);
      p.with_reasoning = s->int64(2);
    }
    s->reset();
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_outputs_by_stage_status"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) { p.outputs[r.text(0)][r.text(1)] = r.int64(2); }));
  }
  return first_ms;
}

// The rate and the ETA, from the recent answers of the stage that holds the code.
Status read_rate(store::Db& db, std::int64_t now_ms, std::int64_t first_ms, RunProgress& p) {
  const auto& q = pipeline_queries();
  std::int64_t id = p.run.id;
  auto code_stages = store::stages_of_kind(p.run.prompts, store::StageKind::code);
  if (first_ms > 0 && p.run.state == store::RunState::active && !code_stages.empty()) {
    // The rate: answers of the stage that holds the code (its last stage before the verifier).
    KF_TRY(Stmt * s, db.cached(q["run_recent_finish_times"]));
    s->bind(1, id)
        .bind(2, code_stages.front())
        .bind(3, now_ms - kRateWindowMs)
        .bind(4, kRateSamples);
    std::vector<std::int64_t> times;
    KF_CHECK(s->each([&](store::Stmt& r) { times.push_back(r.int64(0)); }));
    p.per_minute = rate_per_minute(times, now_ms);
    if (p.per_minute > 0)
      p.eta_s = static_cast<std::int64_t>(
          std::ceil(static_cast<double>(p.remaining) * 60.0 / p.per_minute));
  }
  return {};
}

// Errors, failures, verdicts and their causes, quality flags, out of bounds, the speed label.
Status read_verdicts(store::Db& db, std::int64_t now_ms, RunProgress& p) {
  const auto& q = pipeline_queries();
  std::int64_t id = p.run.id;
  {
    KF_TRY(Stmt * s, db.cached(q["run_errors_by_kind"]));
    s->bind(1, id).bind(2, now_ms - kErrorWindowMs);
    KF_CHECK(s->each([&](store::Stmt& r) {
      p.errors.push_back(ErrorKind{r.text(0), r.int64(1), r.int64(2), r.text(3)});
    }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_failures_by_kind"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) {
      FailureKind f;
      f.stored = r.text(0);
      f.kind = f.stored;
      for (const char* family : {"rejected:", "llm:"})
        if (f.kind.rfind(family, 0) == 0) f.kind = f.kind.substr(std::string(family).size());
      f.count = r.int64(1);
      f.example_key = r.text(3);
      f.example = r.text(4);
      p.failures.push_back(std::move(f));
    }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_verdict_causes"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) {
      p.causes.push_back(VerdictCause{r.text(0), r.text(1), r.int64(2), r.text(4), r.text(5)});
    }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_verdicts"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) { p.verdicts[r.text(0)] = r.int64(1); }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_quality_flags"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) { p.flags[r.text(0)] = r.int64(1); }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_out_of_bounds"]));
    s->bind(1, id);
    KF_CHECK(s->each([&](store::Stmt& r) { p.out_of_bounds = r.int64(0); }));
  }
  {
    KF_TRY(Stmt * s, db.cached(q["run_speed"]));
    s->bind(1, id);
    std::vector<double> speedups;  // in order, NULLs first
    KF_CHECK(s->each([&](store::Stmt& r) {
      ++p.speed_timed;
      if (!r.is_null(0)) speedups.push_back(r.real(0));
      if (!r.is_null(1) && r.int64(1) == 1) ++p.speed_pass_perf;
    }));
    p.speed_with_reference = static_cast<std::int64_t>(speedups.size());
    if (!speedups.empty()) {
      std::size_t n = speedups.size();
      p.speed_median = n % 2 ? speedups[n / 2] : (speedups[n / 2 - 1] + speedups[n / 2]) / 2;
    }
  }
  return {};
}

Result<std::vector<RunProgress>> progress_of(store::Db& db, std::int64_t now_ms,
                                             std::vector<RunRow> runs) {
  std::vector<RunProgress> out;
  for (auto& run : runs) {
    RunProgress p;
    p.run = std::move(run);
    KF_CHECK(read_jobs(db, p));
    KF_TRY(std::int64_t first_ms, read_usage(db, now_ms, p));
    KF_CHECK(read_rate(db, now_ms, first_ms, p));
    KF_CHECK(read_verdicts(db, now_ms, p));
    KF_CHECK(read_speed_flags(db, p.run.id, p));
    out.push_back(std::move(p));
  }
  return out;
}
}  // namespace

nlohmann::ordered_json RunProgress::to_json() const {
  using nlohmann::ordered_json;
  ordered_json j;
  j["tag"] = run.tag;
  j["pipeline"] = run.pipeline;
  j["model"] = run.model;
  j["state"] = std::string(store::to_string(run.state));
  j["created_ms"] = run.created_ms;
  j["jobs_total"] = total;
  ordered_json states = ordered_json::object();
  for (const auto& [k, v] : by_state) states[k] = v;
  j["jobs"] = states;
  ordered_json stages = ordered_json::object();
  for (const auto& [stage, m] : by_stage) {
    ordered_json s = ordered_json::object();
    for (const auto& [k, v] : m) s[k] = v;
    stages[stage] = s;
  }
  j["jobs_by_stage"] = stages;
  j["progress"] = {{"past_llm", past_llm},   {"remaining", remaining},
                   {"fraction", fraction()}, {"verifying", verifying},
                   {"ended", ended},         {"ended_fraction", ended_fraction()},
                   {"cancelled", cancelled}};
  j["samples_per_minute"] = per_minute;
  j["eta_s"] = eta_s ? ordered_json(*eta_s) : ordered_json(nullptr);
  j["tokens"] = {{"prompt", prompt_tokens},
                 {"completion", completion_tokens},
                 {"reasoning", reasoning_tokens},
                 {"cached_prompt", cached_prompt_tokens}};
  ordered_json mends = ordered_json::object();
  for (const auto& [k, n] : mended) mends[k] = n;
  j["mended"] = mends;
  j["with_reasoning"] = with_reasoning;
  j["cost_usd"] = cost_usd;
  j["replayed"] = {{"calls", replayed_calls}, {"saved_usd", saved_usd}};
  j["waiting"] = wait_until_ms > 0
                     ? ordered_json({{"until_ms", wait_until_ms}, {"reason", wait_reason}})
                     : ordered_json(nullptr);
  ordered_json outs = ordered_json::object();
  for (const auto& [stage, m] : outputs) {
    ordered_json s = ordered_json::object();
    for (const auto& [k, v] : m) s[k] = v;
    outs[stage] = s;
  }
  j["stage_outputs"] = outs;
  ordered_json errs = ordered_json::array();
  for (const auto& e : errors)
    errs.push_back({{"kind", e.kind},
                    {"count", e.count},
                    {"last_ms", e.last_ms},
                    {"last_message", e.last_message}});
  j["errors"] = errs;
  ordered_json v = ordered_json::object();
  for (const auto& [k, n] : verdicts) v[k] = n;
  j["verdicts"] = v;
  ordered_json fl = ordered_json::object();
  for (const auto& [k, n] : flags) fl[k] = n;
  j["quality_flags"] = fl;
  j["out_of_bounds"] = out_of_bounds;
  j["speed"] = {{"timed", speed_timed},
                {"with_reference", speed_with_reference},
                {"pass_perf", speed_pass_perf},
                {"median_speedup", speed_median ? ordered_json(*speed_median) : ordered_json()},
                {"flags", ordered_json::object()},
                {"not_timed_reasons", ordered_json::array()}};
  for (const auto& [f, n] : speed_flags) j["speed"]["flags"][f] = n;
  for (const auto& [why, n] : not_timed_reasons)
    j["speed"]["not_timed_reasons"].push_back({{"reason", why}, {"count", n}});
  ordered_json fk = ordered_json::array();
  for (const auto& f : failures)
    fk.push_back({{"kind", f.kind},
                  {"stored_kind", f.stored},
                  {"count", f.count},
                  {"example_key", f.example_key},
                  {"example", f.example}});
  j["failures"] = fk;
  ordered_json vc = ordered_json::array();
  for (const auto& c : causes)
    vc.push_back({{"verdict", c.verdict},
                  {"cause", c.cause},
                  {"count", c.count},
                  {"example_key", c.example_key},
                  {"example", c.example}});
  j["verdict_causes"] = vc;
  j["refused"] = refused.empty() ? ordered_json(nullptr) : ordered_json(refused);
  return j;
}

double rate_per_minute(const std::vector<std::int64_t>& t, std::int64_t now_ms) {
  if (t.empty()) return 0;
  // Walk back from the newest finish while the gaps look like the same stretch of work.
  std::size_t n = 1;
  while (n < t.size()) {
    double mean_gap = static_cast<double>(now_ms - t[n - 1]) / static_cast<double>(n);
    double pause = std::max(60'000.0, 10.0 * mean_gap);
    if (static_cast<double>(t[n - 1] - t[n]) > pause) break;
    ++n;
  }
  // n finishes from t[n-1] to now: n-1 gaps between them, plus the time since the newest as
  // (at least) one more gap, so it decays while nothing finishes.
  double span = static_cast<double>(now_ms - t[n - 1]);
  if (n > 1)
    span = std::max(span, static_cast<double>(t[0] - t[n - 1]) * static_cast<double>(n) /
                              static_cast<double>(n - 1));
  span = std::max(span, 1.0);
  return static_cast<double>(n) * 60'000.0 / span;
}

std::string progress_bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  int filled = static_cast<int>(std::floor(fraction * width + 1e-9));
  std::string s = "[";
  s.append(static_cast<std::size_t>(filled), '#');
  s.append(static_cast<std::size_t>(width - filled), '.');
  s += "] " + std::to_string(static_cast<int>(std::floor(fraction * 100 + 1e-9))) + "%";
  return s;
}

}  // namespace kforge::pipeline
