#include "kforge/pipeline/score_jobs.hpp"

#include <nlohmann/json.hpp>

#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/jobs.hpp"

namespace kforge::pipeline {

namespace {
const store::QuerySet& score_q() {
  return pipeline_queries();
}
}  // namespace

Result<std::int64_t> score_run(store::Db& db, const std::string& tag,
                               const store::RunParams& params, std::int64_t now) {
  if (tag.empty()) return fail("usage", "tag: must not be empty");
  const nlohmann::json prompts = {
      {"score", {{"version", "score"}, {"sha256", ""}, {"kind", "code"}}}};
  const nlohmann::json want = store::to_json(params);
  {
    KF_TRY(store::Stmt * st, db.cached(score_q()["score_run_insert"]));
    st->bind(1, tag).bind(2, want.dump()).bind(3, prompts.dump()).bind(4, now);
    KF_CHECK(st->run());
  }
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_run_get"]));
  st->bind(1, tag);
  struct Row {
    std::int64_t id;
    std::string pipeline, state, params;
  };
  KF_TRY(auto row, st->one([](store::Stmt& r) {
    return Row{r.int64(0), r.text(1), r.text(2), r.text(3)};
  }));
  if (!row) return fail("io", "run " + tag + " vanished while being created");
  if (row->pipeline != "score")
    return fail("conflict", "tag: '" + tag + "' names a dataset run (pipeline " + row->pipeline +
                                "); a scoring tag must name a run of its own");
  if (row->state == "paused" || row->state == "cancelled")
    return fail("conflict", "tag: the run '" + tag + "' is " + row->state +
                                " (kforge run resume, or another tag)");
  KF_TRY(auto have, store::parse_run_params(row->params));
  if (!(have == params))
    return fail("conflict", "checks: the run '" + tag + "' was created with other checks (" +
                                row->params + "); use another tag for these");
  KF_TRY(store::Stmt * re, db.cached(score_q()["score_run_reopen"]));
  re->bind(1, row->id).bind(2, now);
  KF_CHECK(re->run());
  return row->id;
}

Result<std::optional<std::int64_t>> score_sample(store::Db& db, const std::string& content_key) {
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_sample_id"]));
  st->bind(1, "score/" + content_key);
  return st->one([](store::Stmt& r) { return r.int64(0); });
}

namespace {

// The item's sample, created if new.
Result<std::int64_t> scored_sample(store::Db& db, const ScoredItem& item, std::int64_t now) {
  KF_TRY(auto existing, score_sample(db, item.content_key));
  if (existing) return *existing;
  std::string code = item.code;
  std::optional<std::string> d1, d2;
  if (!item.named_key.empty()) {
    KF_TRY(store::Stmt * st, db.cached(score_q()["score_named_sample"]));
    st->bind(1, item.named_key);
    KF_TRY(auto row, st->one([](store::Stmt& r) {
      return std::make_tuple(r.text(0), r.opt_text(1), r.opt_text(2));
    }));
    if (!row) return fail("usage", "key: no imported sample has the key '" + item.named_key + "'");
    if (code.empty()) code = std::get<0>(*row);
    d1 = std::get<1>(*row);
    d2 = std::get<2>(*row);
  }
  if (code.empty()) return fail("usage", "code: empty, and no key names an imported sample");
  nlohmann::json record = {{"tag", item.tag}, {"id", item.item_id}};
  if (!item.named_key.empty()) record["key"] = item.named_key;
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_sample_insert"]));
  st->bind(1, "score/" + item.content_key)
      .bind(2, sha256_hex(code))
      .bind(3, code)
      .bind(6, record.dump())
      .bind(7, "score:" + item.tag)
      .bind(8, 0)
      .bind(9, now);
  st->bind(4, d1).bind(5, d2);
  KF_CHECK(st->run());
  return db.last_insert_rowid();
}

}  // namespace

Result<ScoreJob> enqueue_scored(store::Db& db, std::int64_t run_id, const ScoredItem& item,
                                std::int64_t now) {
  ScoreJob out;
  KF_TRY(out.sample_id, scored_sample(db, item, now));
  KF_TRY(store::Stmt * get, db.cached(score_q()["score_job_get"]));
  get->bind(1, run_id).bind(2, out.sample_id);
  KF_TRY(auto job, get->one([](store::Stmt& r) { return std::make_pair(r.int64(0), r.text(1)); }));
  if (job) {
    out.job_id = job->first;
    out.waiting = job->second == "verify_queued" || job->second == "verifying";
    if (!out.waiting) {
      KF_TRY(store::Stmt * st, db.cached(score_q()["score_job_requeue"]));
      st->bind(1, out.job_id).bind(2, now);
      KF_CHECK(st->run());
    }
    return out;
  }
  {
    KF_TRY(store::Stmt * st, db.cached(score_q()["score_job_insert"]));
    st->bind(1, run_id).bind(2, out.sample_id).bind(3, now);
    KF_CHECK(st->run());
    out.job_id = db.last_insert_rowid();
  }
  const nlohmann::json answer = {{"kernel_wrapper", item.kernel_wrapper},
                                 {"unitest_code", item.unitest_code}};
  nlohmann::json messages = nlohmann::json::parse(item.messages_json, nullptr, false);
  if (!messages.is_array())
    messages = nlohmann::json::array({{{"role", "user"}, {"content", item.code}}});
  const nlohmann::json request = {{"model", "client"},
                                  {"messages", messages},
                                  {"score", {{"tag", item.tag}, {"id", item.item_id}}}};
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_output_insert"]));
  st->bind(1, out.job_id)
      .bind(2, run_id)
      .bind(3, out.sample_id)
      .bind(4, request.dump())
      .bind(5, answer.dump())
      .bind(6, now);
  KF_CHECK(st->run());
  return out;
}

Result<bool> cancel_scored(store::Db& db, std::int64_t job_id, const std::string& why,
                           std::int64_t now) {
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_job_cancel"]));
  st->bind(1, job_id).bind(2, why).bind(3, now);
  KF_CHECK(st->run());
  return db.changes() > 0;
}

Result<std::int64_t> forget_scored(store::Db& db, std::int64_t before_ms) {
  KF_TRY(store::Stmt * jobs, db.cached(score_q()["score_forget_jobs"]));
  jobs->bind(1, before_ms);
  KF_CHECK(jobs->run());
  const std::int64_t n = db.changes();
  if (n == 0) return n;
  KF_TRY(store::Stmt * samples, db.cached(score_q()["score_forget_samples"]));
  KF_CHECK(samples->run());
  return n;
}

Result<ScoreQueueDepth> score_queue_depth(store::Db& db) {
  KF_TRY(store::Stmt * st, db.cached(score_q()["score_queue_depth"]));
  KF_TRY(auto row, st->one([](store::Stmt& r) {
    ScoreQueueDepth d;
    d.score_waiting = r.opt_int64(0).value_or(0);
    d.score_running = r.opt_int64(1).value_or(0);
    d.runs_waiting = r.opt_int64(2).value_or(0);
    d.runs_running = r.opt_int64(3).value_or(0);
    d.oldest_score_wait_ms = r.opt_int64(4);
    return d;
  }));
  return row.value_or(ScoreQueueDepth{});
}

}  // namespace kforge::pipeline
