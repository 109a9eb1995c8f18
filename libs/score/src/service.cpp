#include "kforge/score/service.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "kforge/core/embedded.hpp"
#include "kforge/pipeline/score_jobs.hpp"

namespace kforge::score {

std::span<const EmbeddedFile> score_sql();

namespace {
const store::QuerySet& q() {
  static const store::QuerySet set(score_sql());
  return set;
}

double percentile(std::vector<std::int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return static_cast<double>(v[std::min(i, v.size() - 1)]);
}
}  // namespace

ScoreService::ScoreService(std::unique_ptr<store::Db> db, ServiceOptions options, Clock& clock)
    : db_(std::move(db)), opts_(std::move(options)), clock_(clock) {}

Result<Submitted> ScoreService::submit(const Request& r) {
  const auto asked = clock_.steady_now();
  std::lock_guard l(mu_);
  const auto got = clock_.steady_now();
  KF_TRY(Submitted out, write_batch(r));
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  out.waited_ms = ms(got - asked);
  out.write_ms = ms(clock_.steady_now() - got);
  return out;
}

Result<Submitted> ScoreService::write_batch(const Request& r) {
  store::Db& db = *db_;
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(auto before, pipeline::score_queue_depth(db));
  KF_TRY(store::Transaction tx, store::Transaction::begin(db));
  KF_TRY(std::int64_t run_id, pipeline::score_run(db, r.tag, r.checks, now));
  Submitted out;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["batch_insert"]));
    st->bind(1, run_id)
        .bind(2, r.reward)
        .bind(3, r.reward_params.dump())
        .bind(4, now + static_cast<std::int64_t>(r.deadline_s * 1000))
        .bind(5, now);
    KF_CHECK(st->run());
    out.batch = db.last_insert_rowid();
  }
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    const Item& it = r.items[i];
    const std::string key = content_key(it, r.checks, opts_.fingerprint);
    KF_TRY(store::Stmt * c, db.cached(q()["item_cached"]));
    c->bind(1, "score/" + key);
    KF_TRY(auto cached, c->one([](store::Stmt& s) { return s.int64(0); }));
    std::optional<std::int64_t> job_id;
    if (!cached) {
      pipeline::ScoredItem si{key,
                              it.code,
                              it.key,
                              it.kernel_wrapper,
                              it.unitest_code,
                              r.tag,
                              it.id,
                              it.prompt.is_null() ? "" : it.prompt.dump()};
      auto job = pipeline::enqueue_scored(db, run_id, si, now);
      if (!job.ok())
        return fail(job.error().kind, "items[" + std::to_string(i) + "]." + job.error().message);
      job_id = job->job_id;
      if (!job->waiting) ++out.queued;
    }
    KF_TRY(store::Stmt * st, db.cached(q()["item_insert"]));
    st->bind(1, out.batch).bind(2, static_cast<std::int64_t>(i)).bind(3, it.id).bind(4, key);
    st->bind(5, job_id).bind(6, cached).bind(7, cached ? 1 : 0);
    if (cached)
      st->bind(8, "judged").bind(10, now);
    else
      st->bind(8, nullptr).bind(10, nullptr);
    st->bind(9, now);
    KF_CHECK(st->run());
  }
  const std::int64_t depth = before.score_waiting + before.score_running;
  if (out.queued > opts_.config.max_queue)
    return fail("usage", "items: " + std::to_string(out.queued) +
                             " new items (not cached, not already queued), above the whole "
                             "queue (score.max_queue " +
                             std::to_string(opts_.config.max_queue) + "): send fewer at once");
  if (out.queued > 0 && depth + out.queued > opts_.config.max_queue) {
    // Nothing is written (the transaction rolls back): how long until that much has drained.
    Submitted full;
    full.full = true;
    KF_TRY(store::Stmt * st, db.cached(q()["recent_waits"]));
    std::int64_t judged = 0;
    KF_CHECK(st->each([&](store::Stmt& s) {
      if (s.int64(2) >= now - 60'000) ++judged;
    }));
    const double rate = std::max(static_cast<double>(judged) / 60.0, 0.5);
    const double excess = static_cast<double>(depth + out.queued - opts_.config.max_queue);
    full.retry_after_s = static_cast<int>(std::clamp(std::ceil(excess / rate), 1.0, 120.0));
    return full;
  }
  KF_TRY(store::Stmt * end, db.cached(q()["batches_end"]));
  end->bind(1, now);
  KF_CHECK(end->run());
  KF_CHECK(tx.commit());
  return out;
}

Result<std::optional<bool>> ScoreService::ended(std::int64_t batch) {
  std::lock_guard l(mu_);
  KF_TRY(store::Stmt * b, db_->cached(q()["batch_get"]));
  b->bind(1, batch);
  KF_TRY(auto e, b->one([](store::Stmt& s) { return s.opt_int64(2).has_value(); }));
  return e;
}

Result<std::optional<nlohmann::json>> ScoreService::results(std::int64_t batch) {
  std::lock_guard l(mu_);
  store::Db& db = *db_;
  KF_TRY(store::Stmt * b, db.cached(q()["batch_get"]));
  b->bind(1, batch);
  KF_TRY(auto head, b->one([](store::Stmt& s) {
    return std::make_tuple(s.text(0), s.text(1), s.opt_int64(2), s.int64(3));
  }));
  if (!head) return std::optional<nlohmann::json>();
  const std::string preset = std::get<0>(*head);
  const auto params = nlohmann::json::parse(std::get<1>(*head), nullptr, false);
  const std::optional<std::int64_t> ended = std::get<2>(*head);
  const std::int64_t deadline = std::get<3>(*head);
  nlohmann::json results = nlohmann::json::array();
  KF_TRY(store::Stmt * st, db.cached(q()["batch_results"]));
  st->bind(1, batch);
  KF_CHECK(st->each([&](store::Stmt& s) {
    ItemRow row;
    row.idx = s.int64(0);
    row.item_id = s.text(1);
    row.cached = s.int64(2) != 0;
    row.outcome = s.opt_text(3);
    row.detail = s.opt_text(4);
    row.created_ms = s.int64(5);
    row.ended_ms = s.opt_int64(6);
    row.verdict = s.opt_text(7);
    row.flags_json = s.opt_text(8);
    row.vdetail = s.opt_text(9);
    row.result_json = s.opt_text(10);
    row.script = s.opt_text(11);
    row.stderr_tail = s.opt_text(12);
    row.duration_ms = s.opt_int64(13).value_or(0);
    row.verified_ms = s.opt_int64(14).value_or(0);
    results.push_back(item_result(row, preset, params, opts_.evidence));
  }));
  return std::optional<nlohmann::json>(nlohmann::json{{"batch", batch},
                                                      {"done", ended.has_value()},
                                                      {"deadline_ms", deadline},
                                                      {"results", results}});
}

Status ScoreService::end_items(std::optional<std::int64_t> batch, std::int64_t now) {
  store::Db& db = *db_;
  struct Open {
    std::int64_t batch, idx;
    std::optional<std::int64_t> job;
    std::optional<std::string> state;
  };
  std::vector<Open> open;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["items_to_end"]));
    st->bind(1, now).bind(2, batch);
    KF_CHECK(st->each([&](store::Stmt& s) {
      open.push_back({s.int64(0), s.int64(1), s.opt_int64(2), s.opt_text(3)});
    }));
  }
  std::set<std::int64_t> jobs;
  for (const auto& o : open) {
    const std::string why =
        batch ? "the client went away"
        : o.state == "verifying"
            ? "the deadline passed after the verifier took it (waiting in its pool or running)"
            : "the deadline passed while it waited in the queue";
    KF_TRY(store::Stmt * st, db.cached(q()["item_end"]));
    st->bind(1, o.batch).bind(2, o.idx).bind(3, batch ? "cancelled" : "deadline").bind(4, why);
    st->bind(5, now);
    KF_CHECK(st->run());
    if (o.job) jobs.insert(*o.job);
  }
  for (std::int64_t job : jobs) {
    KF_TRY(store::Stmt * st, db.cached(q()["job_still_wanted"]));
    st->bind(1, job);
    KF_TRY(auto n, st->one([](store::Stmt& s) { return s.int64(0); }));
    if (n.value_or(0) > 0) continue;  // another batch still waits on it
    KF_CHECK(pipeline::cancel_scored(
        db, job, batch ? "score: the client went away" : "score: the deadline passed", now));
  }
  return {};
}

Result<std::int64_t> ScoreService::settle(std::int64_t now) {
  std::int64_t n = 0;
  for (const char* name : {"settle_judged", "settle_failed"}) {
    KF_TRY(store::Stmt * st, db_->cached(q()[name]));
    st->bind(1, now);
    KF_CHECK(st->run());
    n += db_->changes();
  }
  return n;
}

Status ScoreService::cancel(std::int64_t batch) {
  std::lock_guard l(mu_);
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  KF_TRY(std::int64_t settled, settle(now));
  (void)settled;
  KF_CHECK(end_items(batch, now));
  KF_TRY(store::Stmt * end, db_->cached(q()["batches_end"]));
  end->bind(1, now);
  KF_CHECK(end->run());
  return tx.commit();
}

Result<ScoreService::Tick> ScoreService::tick() {
  std::lock_guard l(mu_);
  store::Db& db = *db_;
  const std::int64_t now = clock_.wall_ms();
  Tick out;
  KF_TRY(store::Transaction tx, store::Transaction::begin(db));
  KF_TRY(std::int64_t settled, settle(now));
  KF_CHECK(end_items(std::nullopt, now));
  KF_TRY(store::Stmt * end, db.cached(q()["batches_end"]));
  end->bind(1, now);
  KF_CHECK(end->run());
  out.changed = settled > 0 || db.changes() > 0;
  if (now - last_forget_ms_ >= 60'000) {
    last_forget_ms_ = now;
    KF_CHECK(forget(now));
  }
  KF_TRY(store::Stmt * open, db.cached(q()["open_batches"]));
  KF_TRY(auto n, open->one([](store::Stmt& s) { return s.int64(0); }));
  out.open = n.value_or(0) > 0;
  KF_CHECK(tx.commit());
  return out;
}

Status ScoreService::forget(std::int64_t now) {
  const auto hours = [now](double h) { return now - static_cast<std::int64_t>(h * 3'600'000); };
  const double keep_rollouts = opts_.config.keep_rollouts_h;
  double keep_batches = opts_.config.keep_batches_h;
  if (keep_rollouts > 0 && (keep_batches <= 0 || keep_batches > keep_rollouts))
    keep_batches = keep_rollouts;  // a batch does not outlive the verdicts it answers from
  if (keep_batches > 0) {
    KF_TRY(store::Stmt * st, db_->cached(q()["batches_forget"]));
    st->bind(1, hours(keep_batches));
    KF_CHECK(st->run());
  }
  if (keep_rollouts > 0) {
    KF_TRY(std::int64_t n, pipeline::forget_scored(*db_, hours(keep_rollouts)));
    (void)n;
  }
  return {};
}

Result<nlohmann::json> ScoreService::queue() {
  std::lock_guard l(mu_);
  store::Db& db = *db_;
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(auto d, pipeline::score_queue_depth(db));
  std::vector<std::int64_t> waits, runs;
  std::int64_t last_minute = 0;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["recent_waits"]));
    KF_CHECK(st->each([&](store::Stmt& s) {
      waits.push_back(s.int64(0));
      runs.push_back(s.int64(1));
      if (s.int64(2) >= now - 60'000) ++last_minute;
    }));
  }
  nlohmann::json workers = nlohmann::json::array();
  {
    KF_TRY(store::Stmt * st, db.cached(q()["workers"]));
    KF_CHECK(st->each([&](store::Stmt& s) {
      workers.push_back({{"device", s.text(0)},
                         {"in_rotation", s.int64(1) != 0},
                         {"workers", s.int64(2)},
                         {"ready_workers", s.int64(3)}});
    }));
  }
  KF_TRY(store::Stmt * open, db.cached(q()["open_batches"]));
  KF_TRY(auto batches, open->one([](store::Stmt& s) { return s.int64(0); }));
  nlohmann::json oldest;
  if (d.oldest_score_wait_ms) oldest = std::max<std::int64_t>(0, now - *d.oldest_score_wait_ms);
  return nlohmann::json{{"depth", {{"waiting", d.score_waiting}, {"running", d.score_running}}},
                        {"max_queue", opts_.config.max_queue},
                        {"share", opts_.config.share},
                        {"runs", {{"waiting", d.runs_waiting}, {"running", d.runs_running}}},
                        {"open_batches", batches.value_or(0)},
                        {"waits",
                         {{"oldest_waiting_ms", oldest},
                          {"recent", waits.size()},
                          {"queue_ms_p50", percentile(waits, 0.5)},
                          {"queue_ms_p95", percentile(waits, 0.95)},
                          {"run_ms_p50", percentile(runs, 0.5)},
                          {"run_ms_p95", percentile(runs, 0.95)},
                          {"items_per_s_last_minute", static_cast<double>(last_minute) / 60.0}}},
                        {"workers", workers}};
}

}  // namespace kforge::score
