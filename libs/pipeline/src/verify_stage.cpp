#include "kforge/pipeline/verify_stage.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "kforge/pipeline/jobs.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::pipeline {

namespace {
const store::QuerySet& q() {
  return pipeline_queries();
}
}  // namespace

Result<std::unique_ptr<VerifyStage>> VerifyStage::create(store::Db& db, Clock& clock,
                                                         verify::PoolOptions options,
                                                         std::string owner,
                                                         const std::string& owner_glob) {
  std::unique_ptr<VerifyStage> s(new VerifyStage(db, clock, std::move(owner)));
  // A sample with targets (configured, or required by its run) gets the cross-compile's time on
  // top of its deadline, for the real run and again for the mutant run.
  s->timeout_s_ = options.config.timeout_s + options.config.cross_compile_timeout_s;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["vstage_reclaim"]));
    st->bind(1, owner_glob).bind(2, clock.wall_ms()).bind(3, clock.wall_ms());
    KF_CHECK(st->run());
    if (db.changes() > 0)
      spdlog::info("verifier: took back {} jobs an earlier kforged was verifying", db.changes());
  }
  KF_TRY(s->pool_, verify::Pool::create(std::move(options)));
  return s;
}

VerifyStage::~VerifyStage() {
  auto r = stop();
  if (!r.ok()) spdlog::error("verifier: {}", r.error().message);
}

std::int64_t VerifyStage::lease_ms() const {
  // The mutant re-run doubles a sample's time; the margin covers queueing in the pool.
  return static_cast<std::int64_t>(timeout_s_ * 2 * 1000) + 120'000;
}

std::string VerifyStage::describe() const {
  return "local pool, " + std::to_string(pool_ ? pool_->slots() : 0) + " slots";
}

bool VerifyStage::idle() const {
  return !pool_ || pool_->idle();
}

Result<bool> VerifyStage::lease_one() {
  const std::int64_t now = clock_.wall_ms();
  std::int64_t job_id, run_id, sample_id;
  int round = 0;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_lease"]));
    st->bind(1, owner_).bind(2, now + lease_ms()).bind(3, now);
    KF_TRY(bool row, st->step());
    if (!row) return false;
    job_id = st->int64(0);
    run_id = st->int64(1);
    sample_id = st->int64(2);
    round = static_cast<int>(st->int64(3));
    KF_TRY(bool more, st->step());  // finish the statement (RETURNING yields one row)
    (void)more;
    st->reset();
  }
  verify::VerifyRequest req;
  req.tag = job_id;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_sample"]));
    st->bind(1, sample_id);
    KF_TRY(auto sample,
           st->one([](store::Stmt& r) { return std::make_pair(r.text(0), r.text(1)); }));
    if (sample) {
      req.key = sample->first;
      req.code = sample->second;
    }
  }
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_generated"]));
    st->bind(1, job_id).bind(2, round);
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
  int attempt = 1;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_next_attempt"]));
    st->bind(1, job_id);
    KF_TRY(auto next, st->one([](store::Stmt& r) { return r.int64(0); }));
    if (next) attempt = static_cast<int>(*next);
  }
  KF_TRY(int rounds, repair_rounds(run_id));
  {
    auto it = required_targets_.find(run_id);
    if (it == required_targets_.end()) {
      KF_TRY(auto targets, run_required_targets(db_, run_id));
      it = required_targets_.emplace(run_id, std::move(targets)).first;  // fixed at creation
    }
    req.cross_compile = it->second;
  }
  ++stats_.leased;
  Leased leased{job_id, run_id, sample_id, attempt, round, rounds};
  auto id = pool_->submit(
      std::move(req), [this, leased](verify::VerifyResult&& r) { finish(leased, std::move(r)); });
  if (!id.ok()) {
    // The pool refused after saying it accepts: give the job back.
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_finish"]));
    st->bind(1, job_id)
        .bind(2, owner_)
        .bind(3, "verify_queued")
        .bind(4, "verify")
        .bind(5, nullptr)
        .bind(6, nullptr)
        .bind(7, clock_.wall_ms());
    KF_CHECK(st->run());
    return false;
  }
  return true;
}

Result<int> run_repair_rounds(store::Db& db, std::int64_t run_id) {
  KF_TRY(store::Stmt * st, db.cached(q()["vstage_run_params"]));
  st->bind(1, run_id);
  KF_TRY(auto params, st->one([](store::Stmt& r) { return r.text(0); }));
  return params ? store::repair_rounds_of_text(*params) : 0;
}

namespace {
// Stores the verdict and moves the job on (store_job_verdict, once required targets applied).
Result<VerdictOutcome> store_job_verdict_as(store::Db& db, const std::string& owner,
                                            const VerdictFor& job, const verify::VerifyResult& r,
                                            std::int64_t now);
}  // namespace

Result<std::vector<std::string>> run_required_targets(store::Db& db, std::int64_t run_id) {
  KF_TRY(store::Stmt * st, db.cached(q()["vstage_run_params"]));
  st->bind(1, run_id);
  KF_TRY(auto params, st->one([](store::Stmt& r) { return r.text(0); }));
  return params ? store::required_targets_of_text(*params) : std::vector<std::string>{};
}

Result<int> VerifyStage::repair_rounds(std::int64_t run_id) {
  if (auto it = repair_rounds_.find(run_id); it != repair_rounds_.end()) return it->second;
  KF_TRY(int rounds, run_repair_rounds(db_, run_id));
  repair_rounds_[run_id] = rounds;  // fixed when the run was created
  return rounds;
}

Result<VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                         const VerdictFor& job, const verify::VerifyResult& r,
                                         std::int64_t now) {
  // A run that requires targets (--require-target): a sample that does not compile for one of
  // them is not verified, and its repair prompt carries the compiler's error.
  KF_TRY(auto required, run_required_targets(db, job.run_id));
  if (required.empty()) return store_job_verdict_as(db, owner, job, r, now);
  verify::VerifyResult copy = r;
  verify::require_targets(copy, required);
  return store_job_verdict_as(db, owner, job, copy, now);
}

namespace {

Result<VerdictOutcome> store_job_verdict_as(store::Db& db, const std::string& owner,
                                            const VerdictFor& job, const verify::VerifyResult& r,
                                            std::int64_t now) {
  auto flagged = [&](const char* f) {
    return std::find(r.flags.begin(), r.flags.end(), f) != r.flags.end();
  };
  const bool infrastructure = flagged(verify::kInfrastructure);
  // What the verifier's Python lacks is no evidence against the sample: no repair for it.
  const bool environment = flagged(verify::kEnvironment);
  // Not verified, and the run has rounds left: back to the LLM with this verdict as evidence.
  const bool repair = !infrastructure && !environment && !r.verified() && job.round < job.rounds;
  if (repair) {
    KF_TRY(store::Stmt * st, db.cached(q()["vstage_to_repair"]));
    st->bind(1, job.job_id).bind(2, owner).bind(3, job.round + 1).bind(4, now);
    KF_CHECK(st->run());
  } else {
    KF_TRY(store::Stmt * st, db.cached(q()["vstage_finish"]));
    st->bind(1, job.job_id).bind(2, owner);
    if (infrastructure) {
      st->bind(3, "verify_queued").bind(4, "verify").bind(5, "verifier").bind(6, r.detail);
    } else {
      st->bind(3, "done").bind(4, "done").bind(5, nullptr).bind(6, nullptr);
    }
    st->bind(7, now);
    KF_CHECK(st->run());
  }
  if (db.changes() == 0) return VerdictOutcome::lost;
  if (infrastructure) return VerdictOutcome::requeued;
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
      .bind(4, "verify")
      .bind(5, job.attempt)
      .bind(6, "info")
      .bind(7, "repair")
      .bind(8, std::string(verify::to_string(r.verdict)) + flags + ": repair round " +
                   std::to_string(job.round + 1) + " of " + std::to_string(job.rounds))
      .bind(9, owner)
      .bind(10, now);
  KF_CHECK(ev->run());
  return VerdictOutcome::to_repair;
}

}  // namespace

void VerifyStage::finish(const Leased& job, verify::VerifyResult&& r) {
  auto write = [&]() -> Status {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
    KF_TRY(VerdictOutcome out, store_job_verdict(db_, owner_, job, r, clock_.wall_ms()));
    KF_CHECK(tx.commit());
    switch (out) {
      case VerdictOutcome::lost:
        ++stats_.lost;  // cancelled, or reclaimed after our lease expired: keep nothing
        break;
      case VerdictOutcome::requeued:
        ++stats_.requeued;
        // While stopping, every sample in flight comes back this way: the stop's summary
        // counts them, so one line per sample would only bury it.
        if (draining_)
          spdlog::debug("verifier: {} goes back to the queue: {}", r.key, r.detail);
        else
          spdlog::warn("verifier: {} goes back to the queue: {}", r.key, r.detail);
        break;
      case VerdictOutcome::to_repair:
      case VerdictOutcome::stored:
        if (out == VerdictOutcome::to_repair) ++stats_.to_repair;
        ++stats_.stored;
        ++stats_.by_verdict[std::string(verify::to_string(r.verdict))];
        if (r.verified()) ++stats_.verified;
        break;
    }
    return {};
  };
  auto st = write();
  if (!st.ok()) {
    // The lease stays ours until it expires; then the job is verified again.
    spdlog::error("verifier: storing the verdict of {}: {}", r.key, st.error().message);
    if (deferred_error_.ok()) deferred_error_ = st;
  }
}

Status VerifyStage::step(std::chrono::milliseconds max_wait) {
  if (!pool_) return {};
  while (!draining_ && pool_->accepting()) {
    KF_TRY(bool got, lease_one());
    if (!got) break;
  }
  pool_->step(max_wait);
  const std::int64_t now = clock_.wall_ms();
  if (now - last_renew_ms_ >= lease_ms() / 4) {
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_renew"]));
    st->bind(1, owner_).bind(2, now + lease_ms());
    KF_CHECK(st->run());
    last_renew_ms_ = now;
  }
  if (!deferred_error_.ok()) {
    Status e = deferred_error_;
    deferred_error_ = Status();
    return e;
  }
  return {};
}

Status VerifyStage::stop() {
  pool_.reset();  // callbacks of unfinished samples run with the infrastructure flag
  KF_TRY(store::Stmt * st, db_.cached(q()["vstage_release"]));
  st->bind(1, owner_).bind(2, clock_.wall_ms());
  return st->run();
}

}  // namespace kforge::pipeline
