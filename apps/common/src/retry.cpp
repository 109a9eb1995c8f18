#include "kforge/app/retry.hpp"

namespace kforge::app {

Result<Retried> retry(store::Db& db, const std::string& tag, const report::RetryOptions& opts,
                      std::int64_t now_ms, pipeline::Commit commit) {
  Retried out;
  auto select = [&]() -> Result<pipeline::RequeueSelection> {
    KF_TRY(out.selection, report::select_retry(db, tag, opts));
    pipeline::RequeueSelection sel{out.selection.run_id, out.selection.run_state, {}};
    for (const auto& j : out.selection.jobs)
      sel.jobs.push_back({j.job_id, j.key, j.stage, j.outcome, j.reason});
    return sel;
  };
  KF_TRY(out.result, pipeline::requeue(db, select, now_ms, commit));
  return out;
}

}  // namespace kforge::app
