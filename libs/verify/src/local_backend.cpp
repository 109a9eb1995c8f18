#include "kforge/verify/local_backend.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kforge/store/db.hpp"

namespace kforge::verify {

Result<std::unique_ptr<LocalBackend>> LocalBackend::create(VerifyQueue& queue, PoolOptions options,
                                                           std::string owner,
                                                           const std::string& owner_glob) {
  Clock& clock = (options.env != nullptr ? *options.env : default_env()).clock();
  std::unique_ptr<LocalBackend> s(new LocalBackend(queue, clock, std::move(owner)));
  // A sample with targets (configured, or required by its run) gets the cross-compile's time on
  // top of its deadline, for the real run and again for the mutant run.
  s->timeout_s_ = options.config.timeout_s + options.config.cross_compile_timeout_s;
  // So does one that is timed (verifier.timing, or a run's --require-speedup): the wait for the
  // device and the budget.
  const auto& t = options.config.timing;
  s->timeout_s_ += t.wait_s + 2 * t.budget_s + 5;
  KF_TRY(std::int64_t taken, queue.reclaim(owner_glob, clock.wall_ms(), ""));
  if (taken > 0)
    spdlog::info("verifier: took back {} jobs an earlier kforged was verifying", taken);
  KF_TRY(s->pool_, Pool::create(std::move(options)));
  return s;
}

LocalBackend::~LocalBackend() {
  auto r = stop();
  if (!r.ok()) spdlog::error("verifier: {}", r.error().message);
}

std::int64_t LocalBackend::lease_ms() const {
  // The mutant re-run doubles a sample's time; the margin covers queueing in the pool.
  return static_cast<std::int64_t>(timeout_s_ * 2 * 1000) + 120'000;
}

std::string LocalBackend::describe() const {
  return "local pool, " + std::to_string(pool_ ? pool_->slots() : 0) + " slots";
}

void LocalBackend::reconfigure(const VerifierConfig& config) {
  if (!pool_) return;
  pool_->reconfigure(config);
  const VerifierConfig& now = pool_->config();
  timeout_s_ = now.timeout_s + now.cross_compile_timeout_s;
}

void LocalBackend::wake() {
  if (pool_) pool_->wake();
}

bool LocalBackend::idle() const {
  return !pool_ || pool_->idle();
}

Result<bool> LocalBackend::lease_one() {
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(auto leased, queue_.lease(owner_, now + lease_ms(), now));
  if (!leased) return false;
  ++stats_.leased;
  const VerifyJob job = leased->job;
  // Leased again while an earlier sample of it still ends (it was cancelled and queued again
  // between two looks): the earlier one's verdict is not wanted.
  for (const auto& [t, h] : held_)
    if (h.job_id == job.job_id) pool_->cancel(h.sample, "its job was leased again");
  const std::uint64_t token = ++next_token_;
  auto id = pool_->submit(std::move(leased->request), [this, token, job](VerifyResult&& r) {
    finish(token, job, std::move(r));
  });
  if (id.ok()) held_[token] = {job.job_id, *id};
  if (!id.ok()) {
    // The pool refused after saying it accepts: give the job back.
    KF_TRY(bool ours,
           queue_.release(job.job_id, owner_, Release::requeue, std::nullopt, clock_.wall_ms()));
    (void)ours;
    return false;
  }
  return true;
}

Status LocalBackend::stop_lost_work() {
  const std::int64_t now = clock_.wall_ms();
  if (held_.empty() || now - last_held_check_ms_ < kHeldCheckMs) return {};
  last_held_check_ms_ = now;
  std::vector<std::int64_t> jobs;
  for (const auto& [t, h] : held_) jobs.push_back(h.job_id);
  KF_TRY(auto lost, queue_.not_held(owner_, jobs));
  int stopped = 0;
  for (std::int64_t job : lost)
    for (const auto& [t, h] : held_)
      if (h.job_id == job &&
          pool_->cancel(h.sample,
                        "its job is no longer this verifier's (cancelled, or taken back)"))
        ++stopped;
  if (stopped > 0)
    spdlog::info("verifier: stopping {} samples whose jobs were cancelled or taken back", stopped);
  return {};
}

void LocalBackend::finish(std::uint64_t token, const VerifyJob& job, VerifyResult&& r) {
  held_.erase(token);
  if (r.cancelled) {  // its job is no longer ours: nothing of it is stored
    ++stats_.cancelled;
    spdlog::debug("verifier: {} (job {}) stopped: {}", r.key, job.job_id, r.detail);
    return;
  }
  // While stopping, the samples in flight come back flagged `infrastructure`: that is the stop,
  // not a failure of the sample's, and does not count towards verifier.max_requeues.
  const bool stopped = draining_ && std::find(r.flags.begin(), r.flags.end(),
                                              std::string(kInfrastructure)) != r.flags.end();
  auto write = [&]() -> Status {
    KF_TRY(store::Transaction tx, store::Transaction::begin(queue_.db()));
    VerdictOutcome out = VerdictOutcome::requeued;
    if (stopped) {
      KF_TRY(bool ours,
             queue_.release(job.job_id, owner_, Release::requeue, std::nullopt, clock_.wall_ms()));
      if (!ours) out = VerdictOutcome::lost;
    } else {
      KF_TRY(VerdictOutcome stored, queue_.store_verdict(owner_, job, r, clock_.wall_ms()));
      out = stored;
    }
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
        ++stats_.by_verdict[std::string(to_string(r.verdict))];
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

Status LocalBackend::step(std::chrono::milliseconds max_wait) {
  if (!pool_) return {};
  KF_CHECK(stop_lost_work());
  while (!draining_ && pool_->accepting()) {
    KF_TRY(bool got, lease_one());
    if (!got) break;
  }
  pool_->step(max_wait);
  const std::int64_t now = clock_.wall_ms();
  if (now - last_renew_ms_ >= lease_ms() / 4) {
    KF_CHECK(queue_.renew(owner_, now + lease_ms()));
    last_renew_ms_ = now;
  }
  if (!deferred_error_.ok()) {
    Status e = deferred_error_;
    deferred_error_ = Status();
    return e;
  }
  return {};
}

Status LocalBackend::stop() {
  pool_.reset();  // callbacks of unfinished samples run with the infrastructure flag
  return queue_.release_all(owner_, clock_.wall_ms());
}

}  // namespace kforge::verify
