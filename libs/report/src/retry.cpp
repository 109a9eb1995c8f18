#include "kforge/report/retry.hpp"

#include <algorithm>
#include <map>

#include "kforge/report/export.hpp"
#include "kforge/report/outcomes.hpp"
#include "queries.hpp"

namespace kforge::report {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::pair<std::string, std::int64_t>> to_vector(
    const std::map<std::string, std::int64_t>& m) {
  return {m.begin(), m.end()};
}

}  // namespace

Result<RetrySummary> retry(store::Db& db, const std::string& tag, const RetryOptions& opts) {
  if (opts.verdicts.empty() && opts.failures.empty())
    return fail("usage", "choose what to retry with --verdict and/or --failure");
  for (const auto& v : opts.verdicts)
    if (!contains(verdict_names(), v) && v != "flagged")
      return fail("usage", "--verdict: '" + v +
                               "' is not a verdict (passed, failed, error, timeout, crashed, "
                               "invalid, skipped, flagged)");
  static const std::vector<std::string> kFailures = {"llm_error", "parse_error", "rejected",
                                                     "other"};
  for (const auto& f : opts.failures)
    if (!contains(kFailures, f))
      return fail("usage",
                  "--failure: '" + f +
                      "' is not a stage failure (llm_error, parse_error, rejected, other)");
  if (opts.stage && *opts.stage != "analyze" && *opts.stage != "generate" &&
      *opts.stage != "verify")
    return fail("usage", "--stage: '" + *opts.stage + "' is not analyze, generate or verify");
  if (opts.stage && *opts.stage == "verify" && !opts.failures.empty())
    return fail("usage",
                "--stage verify: samples that failed before verification have no code to verify; "
                "use --stage generate (or leave --stage out)");

  // IMMEDIATE: the selection and the updates see the same jobs, and no daemon moves them between.
  KF_TRY(store::Transaction tx, store::Transaction::begin(db, store::TxMode::immediate));
  KF_TRY(RunInfo run, find_run(db, tag));
  if (run.state == "cancelled")
    return fail("conflict", "run '" + tag + "' is cancelled; nothing was re-queued");
  if (opts.stage && *opts.stage == "analyze" && run.pipeline != "v2")
    return fail("usage", "--stage analyze: run '" + tag + "' uses pipeline " + run.pipeline +
                             ", which has no analysis stage");
  KF_TRY(auto outcomes, load_outcomes(db, run));
  RetrySummary sum;
  std::map<std::string, std::int64_t> by_stage, by_outcome;
  KF_TRY(store::Stmt upd, db.prepare(queries()["requeue_job"]));
  for (const auto& o : outcomes) {
    if (!o.finished()) continue;
    Category c = o.category();
    std::string what(to_string(c));
    bool chosen = false;
    if (o.verdict) {
      chosen = contains(opts.verdicts, *o.verdict) ||
               (c == Category::flagged && contains(opts.verdicts, "flagged"));
    } else {
      chosen = contains(opts.failures, what);
    }
    if (!chosen) continue;
    std::string failed_at = o.failure_stage.empty() ? o.stage : o.failure_stage;
    std::string stage = opts.stage.value_or(o.verdict ? "verify" : failed_at);
    if (stage != "analyze" && stage != "generate" && stage != "verify") stage = "generate";
    if (stage == "analyze" && run.pipeline != "v2") stage = "generate";
    std::string state = stage == "verify" ? "verify_queued" : "queued";
    std::string reason = "re-queued by kforge retry from " + what;
    if (o.detail)
      reason += ": " + *o.detail;
    else if (o.stage_error)
      reason += ": " + *o.stage_error;
    else if (o.job_error)
      reason += ": " + *o.job_error;
    upd.bind(1, o.job_id)
        .bind(2, state)
        .bind(3, stage)
        .bind(4, what)
        .bind(5, reason)
        .bind(6, opts.now_ms);
    KF_CHECK(upd.run());
    upd.reset();
    if (db.changes() != 1)
      return fail("conflict", "job of sample '" + o.key + "' changed while re-queueing");
    ++sum.requeued;
    ++by_stage[stage];
    ++by_outcome[what];
    sum.keys.push_back(o.key);
  }
  sum.by_stage = to_vector(by_stage);
  sum.by_outcome = to_vector(by_outcome);
  sum.run_state = run.state;
  if (sum.requeued > 0 && run.state == "finished") {
    KF_TRY(store::Stmt r, db.prepare(queries()["reactivate_run"]));
    r.bind(1, run.id).bind(2, opts.now_ms);
    KF_CHECK(r.run());
    sum.run_reactivated = true;
    sum.run_state = "active";
  }
  if (!opts.dry_run) KF_CHECK(tx.commit());
  return sum;
}

}  // namespace kforge::report
