#include "kforge/pipeline/jobs.hpp"

#include <algorithm>

namespace kforge::pipeline {

std::span<const EmbeddedFile> pipeline_sql();

const store::QuerySet& pipeline_queries() {
  static const store::QuerySet q(pipeline_sql());
  return q;
}

namespace {

using store::Stmt;

const store::QuerySet& Q() {
  return pipeline_queries();
}

// A stored run; its params and state read through store's parsers (an error names the run).
Result<RunRow> run_from(const Stmt& s) {
  RunRow r;
  r.id = s.int64(0);
  r.tag = s.text(1);
  r.pipeline = s.text(2);
  r.model = s.text(3);
  auto params = store::parse_run_params(s.text(4));
  if (!params.ok())
    return fail(params.error().kind, "run '" + r.tag + "': " + params.error().message);
  r.params = std::move(params.value());
  r.prompts = nlohmann::json::parse(s.text(5), nullptr, false);
  auto state = store::parse_run_state(s.text(6));
  if (!state.ok()) return fail("data", "run '" + r.tag + "': " + state.error().message);
  r.state = *state;
  r.created_ms = s.int64(7);
  r.updated_ms = s.int64(8);
  return r;
}

Result<std::optional<RunRow>> one_run(Stmt& s) {
  KF_TRY(auto row, s.one(run_from));
  if (!row) return std::optional<RunRow>();
  if (!row->ok()) return row->error();
  return std::optional<RunRow>(std::move(**row));
}

bool ended(store::RunState s) {
  return s == store::RunState::cancelled || s == store::RunState::finished;
}

}  // namespace

JobStore::JobStore(store::Db& db, Clock& clock, std::string owner)
    : db_(db), clock_(clock), owner_(std::move(owner)) {}

Result<std::int64_t> JobStore::create_run(const NewRun& run) {
  KF_TRY(auto tx, store::Transaction::begin(db_));
  KF_TRY(auto existing, run_by_tag(run.tag));
  if (existing)
    return fail("conflict", "run '" + run.tag + "' exists already (created " +
                                format_utc_ms(existing->created_ms) + "); pick another tag");
  std::int64_t now = clock_.wall_ms();
  {
    KF_TRY(Stmt * s, db_.cached(Q()["insert_run"]));
    s->bind(1, run.tag)
        .bind(2, run.pipeline)
        .bind(3, run.model)
        .bind(4, store::to_json(run.params).dump())
        .bind(5, run.prompts.dump())
        .bind(6, now);
    KF_CHECK(s->run());
  }
  std::int64_t run_id = db_.last_insert_rowid();
  {
    KF_TRY(Stmt * s, db_.cached(Q()["search_index_samples"]));
    s->bind(1, nlohmann::json(run.sample_ids).dump());
    KF_CHECK(s->run());
  }
  for (std::int64_t sample : run.sample_ids) {
    KF_TRY(Stmt * s, db_.cached(Q()["insert_job"]));
    s->bind(1, run_id).bind(2, sample).bind(3, run.first_stage).bind(4, now);
    KF_CHECK(s->run());
  }
  KF_CHECK(tx.commit());
  return run_id;
}

Result<std::vector<RunRow>> JobStore::runs_of(std::string_view query_name) {
  std::vector<RunRow> out;
  KF_TRY(Stmt * s, db_.cached(Q()[query_name]));
  KF_CHECK(s->each([&](store::Stmt& r) -> Status {
    KF_TRY(RunRow row, run_from(r));
    out.push_back(std::move(row));
    return {};
  }));
  return out;
}

Result<std::optional<RunRow>> JobStore::run_by_tag(const std::string& tag) {
  KF_TRY(Stmt * s, db_.cached(Q()["run_by_tag"]));
  s->bind(1, tag);
  return one_run(*s);
}

Result<std::optional<RunRow>> JobStore::run_by_id(std::int64_t id) {
  KF_TRY(Stmt * s, db_.cached(Q()["run_by_id"]));
  s->bind(1, id);
  return one_run(*s);
}

Result<std::vector<RunRow>> JobStore::active_runs() {
  return runs_of("active_runs");
}
Result<std::vector<RunRow>> JobStore::all_runs() {
  return runs_of("all_runs");
}

Status JobStore::set_run_state(const std::string& tag, store::RunState state) {
  KF_TRY(auto tx, store::Transaction::begin(db_));
  KF_TRY(auto run, run_by_tag(tag));
  if (!run) return fail("not_found", "no run '" + tag + "' (kforge status lists the runs)");
  if (ended(run->state))
    return fail("conflict", "run '" + tag + "' is " + std::string(store::to_string(run->state)) +
                                "; it cannot become " + std::string(store::to_string(state)));
  KF_TRY(Stmt * s, db_.cached(Q()["set_run_state"]));
  s->bind(1, run->id).bind(2, store::to_string(state)).bind(3, clock_.wall_ms());
  KF_CHECK(s->run());
  return tx.commit();
}

Status JobStore::set_run_wait(std::int64_t run_id, std::int64_t until_ms,
                              const std::string& reason) {
  KF_TRY(Stmt * s, db_.cached(Q()["set_run_wait"]));
  s->bind(1, run_id).bind(2, until_ms).bind(3, reason);
  return s->run();
}

Result<std::int64_t> JobStore::cancel_run(const std::string& tag) {
  KF_TRY(auto tx, store::Transaction::begin(db_));
  KF_TRY(auto run, run_by_tag(tag));
  if (!run) return fail("not_found", "no run '" + tag + "' (kforge status lists the runs)");
  if (ended(run->state))
    return fail("conflict",
                "run '" + tag + "' is " + std::string(store::to_string(run->state)) + " already");
  std::int64_t now = clock_.wall_ms();
  {
    KF_TRY(Stmt * s, db_.cached(Q()["set_run_state"]));
    s->bind(1, run->id).bind(2, store::to_string(store::RunState::cancelled)).bind(3, now);
    KF_CHECK(s->run());
  }
  KF_TRY(Stmt * c, db_.cached(Q()["cancel_jobs"]));
  c->bind(1, run->id).bind(2, now);
  KF_CHECK(c->run());
  std::int64_t n = db_.changes();
  Event e;
  e.run_id = run->id;
  e.level = "info";
  e.kind = store::to_string(store::RunState::cancelled);
  e.message = "run cancelled; " + std::to_string(n) + " jobs cancelled";
  KF_CHECK(insert_event(e, now));
  KF_CHECK(tx.commit());
  return n;
}

Result<int> JobStore::finish_runs() {
  KF_TRY(Stmt * s, db_.cached(Q()["finish_runs"]));
  s->bind(1, clock_.wall_ms());
  KF_CHECK(s->run());
  return db_.changes();
}

Result<std::vector<std::int64_t>> JobStore::sample_ids(std::int64_t limit) {
  std::vector<std::int64_t> ids;
  KF_TRY(Stmt * s, db_.cached(Q()["sample_ids_all"]));
  s->bind(1, limit < 0 ? std::int64_t{-1} : limit);
  KF_CHECK(s->each([&](store::Stmt& r) { ids.push_back(r.int64(0)); }));
  return ids;
}

Result<std::optional<std::int64_t>> JobStore::sample_id(const std::string& key) {
  KF_TRY(Stmt * s, db_.cached(Q()["sample_id_by_key"]));
  s->bind(1, key);
  return s->one([](Stmt& r) { return r.int64(0); });
}

Result<int> JobStore::expire_leases() {
  std::int64_t now = clock_.wall_ms();
  std::vector<LeasedJob> expired;
  std::vector<std::string> owners;
  {
    KF_TRY(Stmt * s, db_.cached(Q()["expired_leases"]));
    s->bind(1, now);
    KF_CHECK(s->each([&](store::Stmt& r) {
      expired.push_back(
          LeasedJob{r.int64(0), r.int64(1), r.int64(2), r.text(3), static_cast<int>(r.int64(4))});
      owners.push_back(r.text(5));
    }));
  }
  if (expired.empty()) return 0;
  KF_TRY(auto tx, store::Transaction::begin(db_));
  int n = 0;
  for (std::size_t i = 0; i < expired.size(); ++i) {
    const auto& j = expired[i];
    KF_TRY(Stmt * s, db_.cached(Q()["requeue_job"]));
    s->bind(1, j.id).bind(2, now);
    KF_CHECK(s->run());
    if (db_.changes() == 0) continue;
    ++n;
    Event e{j.run_id,        j.id,
            j.sample_id,     j.stage,
            j.attempts + 1,  "warn",
            "lease_expired", "the lease of " + owners[i] + " expired; the job is queued again"};
    KF_CHECK(insert_event(e, now));
  }
  KF_CHECK(tx.commit());
  return n;
}

Result<int> JobStore::reclaim_leases(const std::string& owner_glob) {
  std::int64_t now = clock_.wall_ms();
  KF_TRY(auto tx, store::Transaction::begin(db_));
  std::vector<LeasedJob> held;
  std::vector<std::string> owners;
  {
    KF_TRY(Stmt * s, db_.cached(Q()["leases_of_owners"]));
    s->bind(1, owner_glob);
    KF_CHECK(s->each([&](store::Stmt& r) {
      held.push_back(
          LeasedJob{r.int64(0), r.int64(1), r.int64(2), r.text(3), static_cast<int>(r.int64(4))});
      owners.push_back(r.text(5));
    }));
  }
  for (std::size_t i = 0; i < held.size(); ++i) {
    const auto& j = held[i];
    KF_TRY(Stmt * s, db_.cached(Q()["requeue_job"]));
    s->bind(1, j.id).bind(2, now);
    KF_CHECK(s->run());
    Event e{j.run_id,
            j.id,
            j.sample_id,
            j.stage,
            j.attempts + 1,
            "warn",
            "lease_reclaimed",
            owners[i] + " stopped without releasing the lease; the job is queued again"};
    KF_CHECK(insert_event(e, now));
  }
  KF_CHECK(tx.commit());
  return static_cast<int>(held.size());
}

Result<std::vector<LeasedJob>> JobStore::lease(std::int64_t run_id, int n, std::int64_t lease_ms) {
  std::vector<LeasedJob> out;
  if (n <= 0) return out;
  std::int64_t now = clock_.wall_ms();
  KF_TRY(Stmt * s, db_.cached(Q()["lease_jobs"]));
  s->bind(1, run_id).bind(2, owner_).bind(3, now + lease_ms).bind(4, now).bind(5, n);
  KF_CHECK(s->each([&](store::Stmt& r) {
    out.push_back(LeasedJob{r.int64(0), r.int64(1), r.int64(2), r.text(3),
                            static_cast<int>(r.int64(4)), static_cast<int>(r.int64(5))});
  }));
  std::sort(out.begin(), out.end(),
            [](const LeasedJob& a, const LeasedJob& b) { return a.id < b.id; });
  return out;
}

Status JobStore::renew_leases(std::int64_t lease_ms) {
  KF_TRY(Stmt * s, db_.cached(Q()["renew_leases"]));
  s->bind(1, owner_).bind(2, clock_.wall_ms() + lease_ms);
  return s->run();
}

Status JobStore::release(std::int64_t job_id) {
  KF_TRY(Stmt * s, db_.cached(Q()["release_job"]));
  s->bind(1, job_id).bind(2, owner_).bind(3, clock_.wall_ms());
  return s->run();
}

Result<int> JobStore::release_all() {
  KF_TRY(Stmt * s, db_.cached(Q()["release_owner"]));
  s->bind(1, owner_).bind(2, clock_.wall_ms());
  KF_CHECK(s->run());
  return db_.changes();
}

Result<bool> JobStore::checkpoint(const LeasedJob& job, const std::optional<StageOutput>& output,
                                  const NextState& next, const std::vector<Event>& events) {
  std::int64_t now = clock_.wall_ms();
  KF_TRY(auto tx, store::Transaction::begin(db_));
  {
    KF_TRY(Stmt * s, db_.cached(Q()["advance_job"]));
    s->bind(1, job.id)
        .bind(2, owner_)
        .bind(3, store::to_string(next.state))
        .bind(4, next.stage)
        .bind(5, next.attempts)
        .bind(6, next.not_before_ms)
        .bind(7, next.error_kind)
        .bind(8, next.error)
        .bind(9, now);
    KF_CHECK(s->run());
    if (db_.changes() != 1) return false;  // the transaction rolls back, writing nothing
  }
  if (output) {
    const auto& o = *output;
    KF_TRY(Stmt * s, db_.cached(Q()["insert_stage_output"]));
    s->bind(1, job.id)
        .bind(2, job.run_id)
        .bind(3, job.sample_id)
        .bind(4, o.stage)
        .bind(5, o.attempt)
        .bind(6, store::to_string(o.status))
        .bind(7, o.prompt_version)
        .bind(8, o.prompt_sha256)
        .bind(9, o.request_sha256)
        .bind(10, o.request_json)
        .bind(11, o.response_raw)
        .bind(12, o.parsed_json)
        .bind(13, o.error_kind)
        .bind(14, o.error)
        .bind(15, o.prompt_tokens)
        .bind(16, o.completion_tokens)
        .bind(17, o.cost_usd)
        .bind(18, o.latency_ms)
        .bind(19, now)
        .bind(20, o.repair_round)
        .bind(21, o.reasoning_tokens)
        .bind(22, o.cached_prompt_tokens)
        .bind(23, o.reasoning)
        .bind(24, o.mended);
    KF_CHECK(s->run());
  }
  for (const auto& e : events) KF_CHECK(insert_event(e, now));
  KF_CHECK(tx.commit());
  return true;
}

Result<SampleInput> JobStore::sample_input(std::int64_t sample_id) {
  KF_TRY(Stmt * s, db_.cached(Q()["sample_input"]));
  s->bind(1, sample_id);
  KF_TRY(auto in, s->one([](Stmt& r) {
    return SampleInput{r.text(0), r.text(1), r.opt_text(2), r.opt_text(3)};
  }));
  if (!in) return fail("not_found", "sample " + std::to_string(sample_id) + " does not exist");
  return std::move(*in);
}

Result<std::optional<std::string>> JobStore::ok_output(std::int64_t job_id,
                                                       const std::string& stage) {
  KF_TRY(Stmt * s, db_.cached(Q()["stage_ok_output"]));
  s->bind(1, job_id).bind(2, stage);
  KF_TRY(auto out, s->one([](Stmt& r) { return r.opt_text(0); }));
  return out.value_or(std::nullopt);
}

Result<std::vector<Attempt>> JobStore::attempts(std::int64_t job_id, const std::string& stage,
                                                int repair_round) {
  std::vector<Attempt> out;
  KF_TRY(Stmt * s, db_.cached(Q()["stage_attempts"]));
  s->bind(1, job_id).bind(2, stage).bind(3, repair_round);
  KF_CHECK(s->each([&](store::Stmt& r) -> Status {
    KF_TRY(auto status, store::parse_output_status(r.text(0)));
    out.push_back(Attempt{status, r.opt_text(1), r.opt_text(2), r.opt_text(3)});
    return {};
  }));
  return out;
}

Result<std::optional<std::string>> JobStore::round_code(std::int64_t job_id, int repair_round) {
  KF_TRY(Stmt * s, db_.cached(Q()["round_code"]));
  s->bind(1, job_id).bind(2, repair_round);
  KF_TRY(auto out, s->one([](Stmt& r) { return r.opt_text(0); }));
  return out.value_or(std::nullopt);
}

Result<std::optional<VerdictEvidence>> JobStore::round_verdict(std::int64_t job_id,
                                                               int repair_round) {
  KF_TRY(Stmt * s, db_.cached(Q()["round_verdict"]));
  s->bind(1, job_id).bind(2, repair_round);
  return s->one([](Stmt& r) {
    VerdictEvidence v;
    v.verdict = r.text(0);
    auto flags = nlohmann::json::parse(r.text(1), nullptr, false);
    if (flags.is_array())
      for (const auto& f : flags)
        if (f.is_string()) v.flags.push_back(f.get<std::string>());
    v.detail = r.opt_text(2).value_or("");
    if (auto report = r.opt_text(3)) {
      v.report = nlohmann::json::parse(*report, nullptr, false);
      if (v.report.is_discarded()) v.report = nullptr;
    }
    v.script = r.opt_text(4).value_or("");
    v.stderr_tail = r.opt_text(5).value_or("");
    return v;
  });
}

Result<std::int64_t> JobStore::verify_backlog() {
  KF_TRY(Stmt * s, db_.cached(Q()["count_verify_queued"]));
  KF_TRY(auto n, s->one([](Stmt& r) { return r.int64(0); }));
  return n.value_or(0);
}

Status JobStore::insert_event(const Event& e, std::int64_t now) {
  KF_TRY(Stmt * s, db_.cached(Q()["insert_event"]));
  s->bind(1, e.run_id)
      .bind(2, e.job_id)
      .bind(3, e.sample_id)
      .bind(4, e.stage)
      .bind(5, e.attempt)
      .bind(6, e.level)
      .bind(7, e.kind)
      .bind(8, e.message)
      .bind(9, owner_.empty() ? std::optional<std::string>() : std::optional<std::string>(owner_))
      .bind(10, now);
  return s->run();
}

Status JobStore::add_event(const Event& e) {
  return insert_event(e, clock_.wall_ms());
}

Result<bool> JobStore::has_run_event(std::int64_t run_id, const std::string& kind,
                                     std::int64_t since_ms) {
  KF_TRY(Stmt * s, db_.cached(Q()["run_event_exists"]));
  s->bind(1, run_id).bind(2, kind).bind(3, since_ms);
  KF_TRY(bool row, s->step());
  bool yes = row && s->int64(0) > 0;
  s->reset();
  return yes;
}

}  // namespace kforge::pipeline
