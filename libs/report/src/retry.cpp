#include "kforge/report/retry.hpp"

#include <algorithm>
#include <map>

#include "kforge/report/export.hpp"
#include "kforge/report/outcomes.hpp"

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

Result<RetrySelection> select_retry(store::Db& db, const std::string& tag,
                                    const RetryOptions& opts) {
  const bool by_what = !opts.verdicts.empty() || !opts.failures.empty();
  if (!by_what && !opts.keys)
    return fail("usage", "choose what to retry with --verdict, --failure and/or --keys");
  for (const auto& v : opts.verdicts)
    if (!contains(verdict_names(), v) && v != "flagged")
      return fail("usage", "--verdict: '" + v +
                               "' is not a verdict (passed, failed, error, timeout, crashed, "
                               "invalid, skipped, flagged)");
  static const std::vector<std::string> kFailures = {
      std::string(to_string(Category::llm_error)), std::string(to_string(Category::parse_error)),
      std::string(to_string(Category::rejected)), std::string(to_string(Category::other))};
  for (const auto& f : opts.failures)
    if (!contains(kFailures, f))
      return fail("usage",
                  "--failure: '" + f +
                      "' is not a stage failure (llm_error, parse_error, rejected, other)");
  const std::string verify(store::to_string(store::JobStep::verify));
  if (opts.stage && *opts.stage == verify && !opts.failures.empty())
    return fail("usage",
                "--stage verify: samples that failed before verification have no code to verify; "
                "use --stage generate (or leave --stage out)");

  KF_TRY(RunInfo run, find_run(db, tag));
  if (run.state == store::to_string(store::RunState::cancelled))
    return fail("conflict", "run '" + tag + "' is cancelled; nothing was re-queued");
  // Where a sample can start again: an analysis or the code stage of the run, as it recorded
  // them, or the verifier.
  const auto analysis = run.stages(store::StageKind::analysis);
  const auto code = run.stages(store::StageKind::code);
  if (code.empty()) return fail("data", "run '" + tag + "' recorded no stage of kind code");
  if (opts.stage && !contains(analysis, *opts.stage) && !contains(code, *opts.stage) &&
      *opts.stage != verify) {
    std::string known;
    for (const auto& n : analysis) known += n + ", ";
    for (const auto& n : code) known += n + ", ";
    return fail("usage", "--stage: '" + *opts.stage + "' is not a stage of run '" + tag + "' (" +
                             known + "or " + verify + ")" +
                             (analysis.empty()
                                  ? "; its pipeline, " + run.pipeline + ", has no analysis stage"
                                  : std::string()));
  }
  KF_TRY(auto outcomes, load_outcomes(db, run));
  RetrySelection sel;
  sel.run_id = run.id;
  sel.run_state = run.state;
  std::map<std::string, std::int64_t> by_stage, by_outcome;
  if (opts.keys) {
    std::set<std::string> run_keys;
    for (const auto& o : outcomes) run_keys.insert(o.key);
    for (const auto& k : *opts.keys)
      if (!run_keys.count(k))
        return fail("usage", "--keys: run '" + tag + "' has no sample '" + k + "'");
  }
  for (const auto& o : outcomes) {
    if (!o.finished()) continue;
    if (opts.keys && !opts.keys->count(o.key)) continue;
    Category c = o.category();
    std::string what(to_string(c));
    bool chosen = !by_what;
    if (by_what && o.verdict) {
      chosen = contains(opts.verdicts, *o.verdict) ||
               (c == Category::flagged && contains(opts.verdicts, "flagged"));
    } else if (by_what) {
      chosen = contains(opts.failures, what);
    }
    if (!chosen) continue;
    std::string failed_at = o.failure_stage.empty() ? o.stage : o.failure_stage;
    std::string stage = opts.stage.value_or(o.verdict ? verify : failed_at);
    // A failure elsewhere (a repair round) starts again at the code stage.
    if (!contains(analysis, stage) && !contains(code, stage) && stage != verify)
      stage = code.front();
    std::string reason = "re-queued by kforge retry from " + what;
    if (o.detail)
      reason += ": " + *o.detail;
    else if (o.stage_error)
      reason += ": " + *o.stage_error;
    else if (o.job_error)
      reason += ": " + *o.job_error;
    ++by_stage[stage];
    ++by_outcome[what];
    sel.jobs.push_back({o.job_id, o.key, stage, what, reason});
  }
  sel.by_stage = to_vector(by_stage);
  sel.by_outcome = to_vector(by_outcome);
  return sel;
}

}  // namespace kforge::report
