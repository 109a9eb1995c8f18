// kforge status's data: collected once, written as JSON (status_text.cpp writes the text).

#include "kforge/pipeline/status.hpp"

#include <filesystem>
#include <tuple>
#include <utility>

#include "kforge/core/printable.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/store/samples.hpp"
#include "kforge/store/states.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::pipeline {

namespace {

// What a run is doing now, and what it waits for ("" when nothing): from its jobs, whether a
// daemon (that verifies) is running, and why its verifier cannot start ("" when it can).
std::pair<std::string, std::string> phase(const RunProgress& p, const DaemonState& d,
                                          const std::string& verifier_down) {
  const bool live = d.liveness == Liveness::running;
  const bool verifies = live && d.row && d.row->verifies;
  const store::RunState state = p.run.state;
  if (state == store::RunState::cancelled || state == store::RunState::paused)
    return {std::string(store::to_string(state)), ""};
  if (!p.refused.empty() && p.remaining > 0)
    return {"generating", "the daemon refuses the run: " + p.refused};
  if (p.remaining > 0) return {"generating", live ? "" : "no kforged is running on this database"};
  if (p.verifying > 0) {
    std::string n = std::to_string(p.verifying) + " samples";
    if (verifies && !verifier_down.empty())
      return {"generated", n + " wait for a verifier: the running kforged's verifier " +
                               verifier_down +
                               " (see the ALERT above; fix it and restart kforged)"};
    if (verifies) return {"verifying", ""};
    if (live)
      return {"generated", n + " wait for a verifier: the running kforged has daemon.verify: "
                               "false (kforge verify, or a kforged with daemon.verify: true)"};
    return {"generated", n + " wait for a verifier: no kforged is running on this database"};
  }
  return {"finished", ""};
}

// The database's size on disk: the file and its write-ahead log (texts compressed and stored
// once since migration 0015; pages freed by it are reused before the file grows).
void database_size(const std::string& path, StatusData& s) {
  std::error_code ec;
  auto bytes = [&](const std::string& p) -> std::int64_t {
    auto size = std::filesystem::file_size(p, ec);
    return ec ? 0 : static_cast<std::int64_t>(size);
  };
  s.file_bytes = bytes(path);
  s.wal_bytes = bytes(path + "-wal");
}

// An alert is old when the daemon that wrote it is gone: written before the running daemon
// started, or by a daemon that has died since (no later than its last beat). One written after
// that (kforge verify --record-devices) or with no daemon ever stands.
bool old_alert(const DaemonState& daemon, std::int64_t at_ms) {
  if (!daemon.row) return false;
  return daemon.liveness == Liveness::running ? at_ms < daemon.row->started_ms
                                              : at_ms <= daemon.row->beat_ms;
}

// Each run's progress, phase and batches in flight; a run the daemon would refuse (its prompt
// templates changed since it was created) says so.
Status read_runs(store::Db& db, const StatusSources& from, std::vector<RunProgress> progress,
                 const std::string& verifier_down, StatusData& s) {
  auto dir = PromptLibrary::locate(from.prompts_dir);
  std::optional<PromptLibrary> lib;
  if (dir.ok()) {
    auto l = PromptLibrary::load(*dir);
    if (l.ok())
      lib = std::move(*l);
    else
      s.prompts_error = l.error().message;
  }
  const bool live = s.daemon.liveness == Liveness::running;
  for (auto& p : progress) {
    if (lib && (p.run.state == store::RunState::active || p.run.state == store::RunState::paused)) {
      auto spec = lib->pipeline(p.run.pipeline);
      p.refused = spec.ok() ? (*spec)->mismatch(p.run.prompts) : spec.error().message;
    }
    RunStatus r;
    r.live = live;
    std::tie(r.phase, r.waits_for) = phase(p, s.daemon, verifier_down);
    KF_TRY(r.batches, batches_in_flight(db, p.run.tag, from.now_ms));
    r.progress = std::move(p);
    s.runs.push_back(std::move(r));
  }
  return {};
}

nlohmann::ordered_json run_json(const RunStatus& r) {
  using nlohmann::ordered_json;
  auto j = r.progress.to_json();
  // A rate and an ETA say how fast a daemon goes: with none running there is neither.
  if (!r.live) {
    j["samples_per_minute"] = 0.0;
    j["eta_s"] = nullptr;
  }
  j["phase"] = r.phase;
  j["waits_for"] = r.waits_for.empty() ? ordered_json(nullptr) : ordered_json(r.waits_for);
  ordered_json bs = ordered_json::array();
  for (const auto& b : r.batches) bs.push_back(to_json(b));
  j["batches"] = std::move(bs);
  return j;
}

}  // namespace

Result<StatusData> collect_status(store::Db& db, const StatusSources& from,
                                  const std::optional<std::string>& tag) {
  StatusData s;
  store::Samples samples(db);
  KF_TRY(s.samples, samples.count());
  KF_TRY(s.schema_version, db.schema_version());
  s.database = db.path();
  database_size(db.path(), s);
  KF_TRY(s.jobs, jobs_by_state(db));
  KF_TRY(s.daemon, daemon_state(db, from.now_ms, from.host, from.pid_alive));
  const bool live = s.daemon.liveness == Liveness::running;
  KF_TRY(auto progress, collect_progress(db, from.now_ms, tag));
  // Alerts, and among them a verifier of the running daemon that could not start (device
  // "verifier"): its runs' samples wait at the verifier for good.
  KF_TRY(auto devs, verify::device_alerts(db));
  std::string verifier_down;
  for (const auto& d : devs)
    if (d.device == "verifier" && live && !old_alert(s.daemon, d.updated_ms))
      verifier_down = d.reason;
  KF_CHECK(read_runs(db, from, std::move(progress), verifier_down, s));
  for (const auto& d : devs)
    s.alerts.push_back(
        {d.device, d.start_failures, d.reason, d.updated_ms, old_alert(s.daemon, d.updated_ms)});
  KF_TRY(s.slurm, verify::slurm_summary(db));
  return s;
}

nlohmann::ordered_json to_json(const StatusData& s) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["samples"] = s.samples;
  out["schema_version"] = s.schema_version;
  out["database"] = s.database;
  out["database_bytes"] = {
      {"file", s.file_bytes}, {"wal", s.wal_bytes}, {"total", s.file_bytes + s.wal_bytes}};
  ordered_json all = ordered_json::object();
  for (const auto& [state, count] : s.jobs) all[state] = count;
  out["jobs"] = all;
  out["daemon"] = to_json(s.daemon);
  if (s.prompts_error) out["prompts_error"] = *s.prompts_error;
  ordered_json runs = ordered_json::array();
  for (const auto& r : s.runs) runs.push_back(run_json(r));
  out["runs"] = runs;
  ordered_json alerts = ordered_json::array();
  for (const auto& a : s.alerts)
    alerts.push_back({{"device", a.device},
                      {"start_failures", a.start_failures},
                      {"reason", a.reason},
                      {"since_ms", a.since_ms},
                      {"old", a.old}});
  out["verifier_alerts"] = alerts;
  if (!s.slurm.tasks_by_state.empty() || !s.slurm.alerts.empty()) {
    ordered_json sl;
    sl["tasks"] = s.slurm.tasks_by_state;
    ordered_json sa = ordered_json::array();
    for (const auto& a : s.slurm.alerts)
      sa.push_back({{"kind", a.kind},
                    {"message", a.message},
                    {"count", a.count},
                    {"since_ms", a.since_ms},
                    {"updated_ms", a.updated_ms}});
    sl["alerts"] = sa;
    out["slurm"] = sl;
  }
  return out;
}

bool working(const StatusData& s) {
  for (const auto& r : s.runs)
    if (r.progress.run.state == store::RunState::active && r.waits_for.empty() &&
        (r.phase == "generating" || r.phase == "verifying"))
      return true;
  return false;
}

std::string why_stopped(const StatusData& s) {
  if (s.runs.empty()) return "no run to watch (kforge run create TAG --pipeline v2)";
  std::string out;
  for (const auto& r : s.runs) {
    std::string tag = printable(r.progress.run.tag);
    const store::RunState state = r.progress.run.state;
    std::string why;
    if (state == store::RunState::paused)
      why = "run " + tag + " is paused (kforge run resume " + tag + ")";
    else if (state == store::RunState::cancelled)
      why = "run " + tag + " is cancelled";
    else if (!r.waits_for.empty())
      why = "run " + tag + " is " + r.phase + ": " + printable(r.waits_for);
    else
      why = "run " + tag + " is " + r.phase;
    out += (out.empty() ? "" : "; ") + why;
  }
  return out;
}

}  // namespace kforge::pipeline
