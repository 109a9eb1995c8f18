#include "kforge/pipeline/verify_queue.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kforge/pipeline/jobs.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/store/states.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::pipeline {

using store::JobErrorKind;
using store::JobState;
using store::JobStep;
using verify::VerdictOutcome;

namespace {
const store::QuerySet& q() {
  return pipeline_queries();
}
}  // namespace

Result<std::optional<verify::LeasedSample>> JobsVerifyQueue::lease(const std::string& owner,
                                                                   std::int64_t expires_ms,
                                                                   std::int64_t now) {
  // Nothing was leasable, and no other connection has committed since: still nothing, unless a
  // lease expired meanwhile (looked at again after kRecheckEmptyMs).
  KF_TRY(std::int64_t version, db_.data_version());
  if (version == empty_version_ && now >= empty_at_ms_ && now - empty_at_ms_ < kRecheckEmptyMs &&
      (empty_due_ms_ == 0 || now < empty_due_ms_))
    return std::nullopt;
  verify::LeasedSample out;
  verify::VerifyJob& job = out.job;
  // Scored items' turn: fewer than score_share_ of the leases since scored items last found
  // the queue empty were theirs.
  bool found = false;
  if (score_share_ > 0 &&
      static_cast<double>(score_leases_) < score_share_ * static_cast<double>(leases_ + 1)) {
    KF_TRY(found, lease_job(q()["vstage_lease_score"], owner, expires_ms, now, job));
    if (found)
      ++score_leases_;
    else
      leases_ = score_leases_ = 0;
  }
  if (!found) {
    KF_TRY(found, lease_job(q()["vstage_lease"], owner, expires_ms, now, job));
  }
  if (!found) {
    empty_version_ = version;
    empty_at_ms_ = now;
    // A job requeued with a back-off is leasable again at its not_before_ms.
    KF_TRY(store::Stmt * due, db_.cached(q()["vstage_next_due"]));
    due->bind(1, now);
    KF_TRY(auto next, due->one([](store::Stmt& r) { return r.opt_int64(0); }));
    empty_due_ms_ = next && *next ? **next : 0;
    return std::nullopt;
  }
  ++leases_;
  empty_version_ = -1;
  verify::VerifyRequest& req = out.request;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_sample"]));
    st->bind(1, job.sample_id);
    KF_TRY(auto sample,
           st->one([](store::Stmt& r) { return std::make_pair(r.text(0), r.text(1)); }));
    if (sample) {
      req.key = sample->first;
      req.code = sample->second;
    }
  }
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["round_code"]));
    st->bind(1, job.job_id).bind(2, job.round);  // the code of the job's repair round
    KF_TRY(auto text, st->one([](store::Stmt& r) { return r.opt_text(0); }));
    if (text && *text) {
      auto j = nlohmann::json::parse(**text, nullptr, false);
      if (j.is_object()) {
        if (j.contains("kernel_wrapper") && j["kernel_wrapper"].is_string())
          req.kernel_wrapper = j["kernel_wrapper"].get<std::string>();
        if (j.contains("unitest_code") && j["unitest_code"].is_string())
          req.unitest_code = j["unitest_code"].get<std::string>();
      }
    }
  }
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_next_attempt"]));
    st->bind(1, job.job_id);
    KF_TRY(auto next, st->one([](store::Stmt& r) { return r.int64(0); }));
    if (next) job.attempt = static_cast<int>(*next);
  }
  KF_TRY(const store::RunParams* params, run_params_of(job.run_id));
  req.cross_compile = params->require_targets;
  req.require_speedup = params->require_speedup;
  return out;
}

Result<bool> JobsVerifyQueue::lease_job(std::string_view query, const std::string& owner,
                                        std::int64_t expires_ms, std::int64_t now,
                                        verify::VerifyJob& job) {
  KF_TRY(store::Stmt * st, db_.cached(query));
  st->bind(1, owner).bind(2, expires_ms).bind(3, now);
  KF_TRY(bool row, st->step());
  if (!row) {
    st->reset();
    return false;
  }
  job.job_id = st->int64(0);
  job.run_id = st->int64(1);
  job.sample_id = st->int64(2);
  job.round = static_cast<int>(st->int64(3));
  KF_TRY(bool more, st->step());  // finish the statement (RETURNING yields one row)
  (void)more;
  st->reset();
  return true;
}

Result<const store::RunParams*> JobsVerifyQueue::run_params_of(std::int64_t run_id) {
  auto it = run_params_.find(run_id);
  if (it == run_params_.end()) {
    KF_TRY(auto params, run_params(db_, run_id));
    it = run_params_.emplace(run_id, std::move(params)).first;  // fixed at creation
  }
  return &it->second;
}

Result<std::int64_t> JobsVerifyQueue::waiting() {
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_waiting"]));
  KF_TRY(auto n, st->one([](store::Stmt& r) { return r.int64(0); }));
  return n.value_or(0);
}

Status JobsVerifyQueue::renew(const std::string& owner, std::int64_t expires_ms) {
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_renew"]));
  st->bind(1, owner).bind(2, expires_ms);
  return st->run();
}

Result<VerdictOutcome> JobsVerifyQueue::store_verdict(const std::string& owner,
                                                      const verify::VerifyJob& job,
                                                      const verify::VerifyResult& result,
                                                      std::int64_t now) {
  empty_version_ = -1;  // an infrastructure verdict puts the job back in the queue
  KF_TRY(const store::RunParams* params, run_params_of(job.run_id));
  return store_job_verdict(db_, owner, job, result, now, *params, requeue_);
}

Result<bool> JobsVerifyQueue::release(std::int64_t job_id, const std::string& owner,
                                      verify::Release how, const std::optional<std::string>& why,
                                      std::int64_t now) {
  empty_version_ = -1;  // this connection's own writes do not move data_version
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_finish"]));
  st->bind(1, job_id).bind(2, owner).bind(4, to_string(JobStep::verify)).bind(7, now);
  switch (how) {
    case verify::Release::requeue:
      st->bind(3, to_string(JobState::verify_queued));
      break;
    case verify::Release::fail:
      st->bind(3, to_string(JobState::failed));
      break;
    case verify::Release::cancel:
      st->bind(3, to_string(JobState::cancelled));
      break;
  }
  if (!why) {
    st->bind(5, nullptr).bind(6, nullptr);
  } else {
    st->bind(5, to_string(how == verify::Release::cancel ? JobErrorKind::cancelled
                                                         : JobErrorKind::verifier))
        .bind(6, *why);
  }
  KF_CHECK(st->run());
  return db_.changes() > 0;
}

Status JobsVerifyQueue::release_all(const std::string& owner, std::int64_t now) {
  empty_version_ = -1;
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_release"]));
  st->bind(1, owner).bind(2, now);
  return st->run();
}

Result<std::vector<std::int64_t>> JobsVerifyQueue::not_held(
    const std::string& owner, const std::vector<std::int64_t>& job_ids) {
  std::vector<std::int64_t> out;
  if (job_ids.empty()) return out;
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_not_held"]));
  st->bind(1, owner).bind(2, nlohmann::json(job_ids).dump());
  KF_CHECK(st->each([&](store::Stmt& r) { out.push_back(r.int64(0)); }));
  return out;
}

Result<std::int64_t> JobsVerifyQueue::adopt(const std::vector<std::int64_t>& job_ids,
                                            const std::string& owner, const std::string& owner_glob,
                                            std::int64_t expires_ms, std::int64_t now) {
  empty_version_ = -1;
  std::int64_t adopted = 0;
  for (std::int64_t id : job_ids) {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_adopt"]));
    st->bind(1, owner).bind(2, expires_ms).bind(3, owner_glob).bind(4, now).bind(5, id);
    KF_CHECK(st->run());
    adopted += db_.changes();
  }
  return adopted;
}

Result<std::int64_t> JobsVerifyQueue::reclaim(const std::string& owner_glob, std::int64_t now,
                                              const std::string& keep_owner) {
  empty_version_ = -1;
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_reclaim"]));
  st->bind(1, owner_glob).bind(2, now).bind(3, now);
  if (keep_owner.empty())
    st->bind(4, nullptr);
  else
    st->bind(4, keep_owner);
  KF_CHECK(st->run());
  return db_.changes();
}

Result<std::optional<verify::QueuedJob>> JobsVerifyQueue::job(std::int64_t job_id) {
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_job"]));
  st->bind(1, job_id);
  KF_TRY(auto row, st->one([&](store::Stmt& r) {
    verify::QueuedJob j;
    j.job.job_id = job_id;
    j.job.run_id = r.int64(0);
    j.job.sample_id = r.int64(1);
    j.key = r.text(2);
    j.job.round = static_cast<int>(r.int64(3));
    return j;
  }));
  return row;
}

Result<bool> JobsVerifyQueue::run_cancelled(std::int64_t run_id) {
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_run_state"]));
  st->bind(1, run_id);
  KF_TRY(auto state, st->one([](store::Stmt& r) { return r.text(0); }));
  return state && value_of(store::kRunStateNames, *state) == store::RunState::cancelled;
}

Result<store::RunParams> run_params(store::Db& db, std::int64_t run_id) {
  KF_TRY(store::Stmt * st, db.cached(q()["vstage_run_params"]));
  st->bind(1, run_id);
  KF_TRY(auto text, st->one([](store::Stmt& r) { return r.text(0); }));
  if (!text) return store::RunParams{};  // the run is gone: nothing will be stored for it
  auto params = store::parse_run_params(*text);
  if (!params.ok())
    return fail(params.error().kind,
                "run " + std::to_string(run_id) + ": " + params.error().message);
  return params;
}

namespace {

bool infrastructure_failure(const verify::VerifyResult& r) {
  return std::find(r.flags.begin(), r.flags.end(), verify::kInfrastructure) != r.flags.end();
}

// An infrastructure failure: back to the queue after a back-off, or, past the policy's cap, the
// result to store as the job's verdict (std::nullopt with `out` set when requeued or lost).
Result<std::optional<verify::VerifyResult>> requeue_or_give_up(
    store::Db& db, const std::string& owner, const verify::VerifyJob& job,
    const verify::VerifyResult& r, std::int64_t now, const RequeuePolicy& policy,
    VerdictOutcome& out) {
  KF_TRY(store::Stmt * c, db.cached(q()["vstage_requeues"]));
  c->bind(1, job.job_id);
  KF_TRY(auto count, c->one([](store::Stmt& row) { return row.int64(0); }));
  const std::int64_t before = count.value_or(0);
  if (before + 1 >= policy.max_requeues) {
    verify::VerifyResult ended = r;
    ended.verdict = verify::Verdict::error;
    ended.detail = "the verifier could not run this sample " + std::to_string(before + 1) +
                   " times in a row (verifier.max_requeues " + std::to_string(policy.max_requeues) +
                   "); the last time: " + r.detail;
    return std::optional<verify::VerifyResult>(std::move(ended));
  }
  std::int64_t wait = policy.backoff_ms;
  for (std::int64_t i = 0; i < before && wait < policy.max_backoff_ms; ++i) wait *= 2;
  wait = std::min(wait, policy.max_backoff_ms);
  KF_TRY(store::Stmt * st, db.cached(q()["vstage_requeue"]));
  st->bind(1, job.job_id)
      .bind(2, owner)
      .bind(3, r.detail)
      .bind(4, now)
      .bind(5, now + wait)
      .bind(6, to_string(JobState::verify_queued))
      .bind(7, to_string(JobStep::verify))
      .bind(8, to_string(JobErrorKind::verifier));
  KF_CHECK(st->run());
  out = db.changes() == 0 ? VerdictOutcome::lost : VerdictOutcome::requeued;
  return std::optional<verify::VerifyResult>();
}

// Stores the verdict and moves the job on (store_job_verdict, once required targets applied).
Result<VerdictOutcome> store_job_verdict_as(store::Db& db, const std::string& owner,
                                            const verify::VerifyJob& job,
                                            const verify::VerifyResult& r, std::int64_t now,
                                            int repair_rounds);
}  // namespace

Result<VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                         const verify::VerifyJob& job,
                                         const verify::VerifyResult& r, std::int64_t now) {
  KF_TRY(auto params, run_params(db, job.run_id));
  return store_job_verdict(db, owner, job, r, now, params);
}

Result<VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                         const verify::VerifyJob& job,
                                         const verify::VerifyResult& r, std::int64_t now,
                                         const store::RunParams& params,
                                         const RequeuePolicy& requeue) {
  if (infrastructure_failure(r)) {
    VerdictOutcome out = VerdictOutcome::requeued;
    KF_TRY(auto ended, requeue_or_give_up(db, owner, job, r, now, requeue, out));
    if (!ended) return out;
    // Given up: the verdict is final (no repair: the sample's code is not what failed).
    return store_job_verdict_as(db, owner, job, *ended, now, job.round);
  }
  // A run that requires targets (--require-target): a sample that does not compile for one of
  // them is not verified, and its repair prompt carries the compiler's error. One that requires
  // a speedup (--require-speedup): a sample whose speed label has no pass_perf is not verified,
  // and its repair prompt carries the label.
  if (params.require_targets.empty() && params.require_speedup <= 0)
    return store_job_verdict_as(db, owner, job, r, now, params.repair_rounds);
  verify::VerifyResult copy = r;
  if (!params.require_targets.empty()) verify::require_targets(copy, params.require_targets);
  if (params.require_speedup > 0) verify::require_speedup(copy, params.require_speedup);
  return store_job_verdict_as(db, owner, job, copy, now, params.repair_rounds);
}

namespace {

Result<VerdictOutcome> store_job_verdict_as(store::Db& db, const std::string& owner,
                                            const verify::VerifyJob& job,
                                            const verify::VerifyResult& r, std::int64_t now,
                                            int repair_rounds) {
  auto flagged = [&](const char* f) {
    return std::find(r.flags.begin(), r.flags.end(), f) != r.flags.end();
  };
  // Infrastructure failures reach here only once given up (requeue_or_give_up), to be stored.
  // What the verifier's Python lacks is no evidence against the sample: no repair for it.
  const bool environment = flagged(verify::kEnvironment);
  // Not verified, and the run has rounds left: back to the LLM with this verdict as evidence.
  const bool repair = !environment && !r.verified() && job.round < repair_rounds;
  if (repair) {
    KF_TRY(store::Stmt * st, db.cached(q()["vstage_to_repair"]));
    st->bind(1, job.job_id).bind(2, owner).bind(3, job.round + 1).bind(4, now);
    KF_CHECK(st->run());
  } else {
    KF_TRY(store::Stmt * st, db.cached(q()["vstage_finish"]));
    st->bind(1, job.job_id).bind(2, owner);
    st->bind(3, to_string(JobState::done))
        .bind(4, to_string(JobStep::none))
        .bind(5, nullptr)
        .bind(6, nullptr);
    st->bind(7, now);
    KF_CHECK(st->run());
  }
  if (db.changes() == 0) return VerdictOutcome::lost;
  verify::VerificationKey key{job.job_id, job.run_id, job.sample_id, job.attempt, job.round};
  KF_CHECK(verify::store_verification(db, key, r, now));
  if (!repair) return VerdictOutcome::stored;
  std::string flags;
  for (const auto& f : r.flags) flags += (flags.empty() ? " [" : ", ") + f;
  if (!flags.empty()) flags += "]";
  KF_TRY(store::Stmt * ev, db.cached(q()["insert_event"]));
  ev->bind(1, job.run_id)
      .bind(2, job.job_id)
      .bind(3, job.sample_id)
      .bind(4, to_string(JobStep::verify))
      .bind(5, job.attempt)
      .bind(6, "info")
      .bind(7, store::kRepairStage)
      .bind(8, std::string(verify::to_string(r.verdict)) + flags + ": repair round " +
                   std::to_string(job.round + 1) + " of " + std::to_string(repair_rounds))
      .bind(9, owner)
      .bind(10, now);
  KF_CHECK(ev->run());
  return VerdictOutcome::to_repair;
}

}  // namespace

}  // namespace kforge::pipeline
