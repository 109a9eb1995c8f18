#include "kforge/pipeline/requeue.hpp"

#include "kforge/pipeline/jobs.hpp"
#include "kforge/store/states.hpp"

namespace kforge::pipeline {

Result<RequeueResult> requeue(store::Db& db,
                              const std::function<Result<RequeueSelection>()>& select,
                              std::int64_t now_ms, Commit commit) {
  KF_TRY(store::Transaction tx, store::Transaction::begin(db, store::TxMode::immediate));
  KF_TRY(RequeueSelection sel, select());
  const store::QuerySet& q = pipeline_queries();
  RequeueResult out;
  out.run_state = sel.run_state;
  KF_TRY(store::Stmt upd, db.prepare(q["retry_requeue_job"]));
  for (const auto& r : sel.jobs) {
    upd.bind(1, r.job_id).bind(2, r.stage).bind(3, r.error_kind).bind(4, r.reason).bind(5, now_ms);
    KF_CHECK(upd.run());
    upd.reset();
    if (db.changes() != 1)
      return fail("conflict", "job of sample '" + r.key + "' changed while re-queueing");
    ++out.requeued;
  }
  if (out.requeued > 0 && sel.run_state == store::to_string(store::RunState::finished)) {
    KF_TRY(store::Stmt act, db.prepare(q["retry_reactivate_run"]));
    act.bind(1, sel.run_id).bind(2, now_ms);
    KF_CHECK(act.run());
    out.run_reactivated = true;
    out.run_state = store::to_string(store::RunState::active);
  }
  if (commit == Commit::yes) KF_CHECK(tx.commit());
  return out;
}

}  // namespace kforge::pipeline
