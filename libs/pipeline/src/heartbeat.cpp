#include "kforge/pipeline/heartbeat.hpp"

#include <algorithm>

#include "kforge/core/enum_names.hpp"
#include "kforge/pipeline/jobs.hpp"

namespace kforge::pipeline {

Result<Heartbeat> Heartbeat::start(store::Db& db, Clock& clock, const Options& o) {
  const auto& q = pipeline_queries();
  std::int64_t now = clock.wall_ms();
  KF_TRY(store::Stmt ins, db.prepare(q["heartbeat_insert"]));
  ins.bind(1, o.host).bind(2, o.pid).bind(3, o.owner).bind(4, o.version).bind(5, now);
  ins.bind(6, o.interval_ms);
  if (o.metrics.empty())
    ins.bind(7, nullptr);
  else
    ins.bind(7, o.metrics);
  ins.bind(8, o.verifies ? 1 : 0);
  KF_CHECK(ins.run());
  KF_TRY(store::Stmt id, db.prepare("SELECT last_insert_rowid()"));
  KF_TRY(auto row, id.one([](store::Stmt& s) { return s.int64(0); }));
  KF_TRY(store::Stmt trim, db.prepare(q["heartbeat_trim"]));
  KF_CHECK(trim.run());
  return Heartbeat(db, clock, row.value_or(0), std::max<std::int64_t>(o.interval_ms, 1), now);
}

Status Heartbeat::beat() {
  std::int64_t now = clock_->wall_ms();
  if (now - last_ms_ < interval_ms_) return {};
  KF_TRY(store::Stmt * s, db_->cached(pipeline_queries()["heartbeat_beat"]));
  s->bind(1, id_).bind(2, now);
  auto st = s->run();
  s->reset();
  KF_CHECK(st);
  last_ms_ = now;
  return {};
}

Status Heartbeat::stop() {
  KF_TRY(store::Stmt s, db_->prepare(pipeline_queries()["heartbeat_stop"]));
  s.bind(1, id_).bind(2, clock_->wall_ms());
  return s.run();
}

namespace {
constexpr EnumName<Liveness> kLivenessNames[] = {{Liveness::none, "none"},
                                                 {Liveness::running, "running"},
                                                 {Liveness::stale, "stale"},
                                                 {Liveness::stopped, "stopped"}};
}  // namespace

const char* to_string(Liveness l) {
  return name_of(kLivenessNames, l).data();  // the table's names are C string literals
}

std::int64_t stale_after_ms(std::int64_t interval_ms) {
  return std::max<std::int64_t>(3 * interval_ms, 30'000);
}

Result<DaemonState> daemon_state(store::Db& db, std::int64_t now_ms, const std::string& this_host,
                                 const std::function<bool(std::int64_t)>& pid_alive) {
  DaemonState d;
  KF_TRY(store::Stmt s, db.prepare(pipeline_queries()["heartbeat_latest"]));
  KF_TRY(auto row, s.one([](store::Stmt& r) {
    DaemonRow x;
    x.id = r.int64(0);
    x.host = r.text(1);
    x.pid = r.int64(2);
    x.owner = r.text(3);
    x.version = r.text(4);
    x.started_ms = r.int64(5);
    x.beat_ms = r.int64(6);
    x.interval_ms = r.int64(7);
    x.metrics = r.opt_text(8).value_or("");
    x.stopped_ms = r.opt_int64(9);
    x.verifies = r.int64(10) != 0;
    return x;
  }));
  if (!row) return d;
  d.row = *row;
  d.beat_age_ms = std::max<std::int64_t>(0, now_ms - row->beat_ms);
  if (row->stopped_ms) {
    d.liveness = Liveness::stopped;
  } else if (row->host == this_host && pid_alive && !pid_alive(row->pid)) {
    d.liveness = Liveness::stale;
    d.why = "pid " + std::to_string(row->pid) +
            " is gone from this host; it ended without "
            "stopping cleanly";
  } else if (d.beat_age_ms > stale_after_ms(row->interval_ms)) {
    d.liveness = Liveness::stale;
    d.why = "no beat for " + std::to_string(d.beat_age_ms / 1000) + " s (it beats every " +
            std::to_string(row->interval_ms / 1000) + " s): it died or its loop is stuck";
  } else {
    d.liveness = Liveness::running;
  }
  return d;
}

Result<std::vector<std::string>> start_report(store::Db& db, std::int64_t now_ms) {
  std::vector<std::string> out;
  KF_TRY(DaemonState prev, daemon_state(db, now_ms, ""));
  if (prev.row && !prev.row->stopped_ms)
    out.push_back("the previous kforged (pid " + std::to_string(prev.row->pid) + " on " +
                  prev.row->host + ") did not stop cleanly; its last beat was " +
                  std::to_string(prev.beat_age_ms / 1000) + " s ago");
  KF_TRY(store::Stmt s, db.prepare(pipeline_queries()["resume_by_run"]));
  KF_CHECK(s.each([&](store::Stmt& r) {
    std::int64_t llm = r.int64(1), verify = r.int64(2);
    out.push_back("resuming run " + r.text(0) + ": " + std::to_string(llm + verify) +
                  " jobs: " + std::to_string(llm) + " for the LLM stages, " +
                  std::to_string(verify) + " to verify");
  }));
  return out;
}

nlohmann::ordered_json to_json(const DaemonState& d) {
  nlohmann::ordered_json j;
  j["state"] = to_string(d.liveness);
  if (!d.row) return j;
  j["pid"] = d.row->pid;
  j["host"] = d.row->host;
  j["owner"] = d.row->owner;
  j["version"] = d.row->version;
  j["since_ms"] = d.row->started_ms;
  j["last_beat_ms"] = d.row->beat_ms;
  j["beat_age_ms"] = d.beat_age_ms;
  j["beat_interval_ms"] = d.row->interval_ms;
  j["metrics"] = d.row->metrics.empty() ? nlohmann::ordered_json(nullptr)
                                        : nlohmann::ordered_json(d.row->metrics);
  j["verifies"] = d.row->verifies;
  j["stopped_ms"] = d.row->stopped_ms ? nlohmann::ordered_json(*d.row->stopped_ms)
                                      : nlohmann::ordered_json(nullptr);
  if (!d.why.empty()) j["why"] = d.why;
  return j;
}

}  // namespace kforge::pipeline
