// kforge status [TAG] [--watch] [--json]: samples, runs, jobs by state and stage, progress,
// rate, ETA, tokens, cost and recent errors by kind.

#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/pipeline/batch_status.hpp"
#include "kforge/pipeline/heartbeat.hpp"
#include "kforge/pipeline/progress.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/store/samples.hpp"
#include "kforge/store/states.hpp"
#include "kforge/verify/slurm_backend.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::cli {
namespace {

struct StatusArgs {
  std::string tag;
  bool json = false;
  bool create = false;  // make (and migrate) the database where there is none
  bool watch = false;
  double interval_s = 2;
};

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

bool pid_alive(std::int64_t pid) {
  return default_env().alive(static_cast<pid_t>(pid));
}

// What a run is doing now, and what it waits for ("" when nothing): from its jobs, whether a
// daemon (that verifies) is running, and why its verifier cannot start ("" when it can).
std::pair<std::string, std::string> phase(const pipeline::RunProgress& p,
                                          const pipeline::DaemonState& d,
                                          const std::string& verifier_down) {
  const bool live = d.liveness == pipeline::Liveness::running;
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

Result<nlohmann::ordered_json> collect(store::Db& db, const app::Config& cfg,
                                       const std::optional<std::string>& tag) {
  using nlohmann::ordered_json;
  ordered_json out;
  store::Samples samples(db);
  KF_TRY(std::int64_t n, samples.count());
  out["samples"] = n;
  KF_TRY(int version, db.schema_version());
  out["schema_version"] = version;
  out["database"] = db.path();
  {
    // What the database takes on disk: the file and its write-ahead log (texts compressed and
    // stored once since migration 0015; pages freed by it are reused before the file grows).
    std::error_code ec;
    auto bytes = [&](const std::string& p) -> std::int64_t {
      auto size = std::filesystem::file_size(p, ec);
      return ec ? 0 : static_cast<std::int64_t>(size);
    };
    std::int64_t file = bytes(db.path()), wal = bytes(db.path() + "-wal");
    out["database_bytes"] = {{"file", file}, {"wal", wal}, {"total", file + wal}};
  }
  ordered_json all = ordered_json::object();
  KF_TRY(auto by_state, pipeline::jobs_by_state(db));
  for (const auto& [state, count] : by_state) all[state] = count;
  out["jobs"] = all;
  const std::int64_t now = system_clock().wall_ms();
  KF_TRY(auto daemon, pipeline::daemon_state(db, now, this_host(), pid_alive));
  out["daemon"] = pipeline::to_json(daemon);
  const bool live = daemon.liveness == pipeline::Liveness::running;
  KF_TRY(auto progress, pipeline::collect_progress(db, now, tag));
  // Alerts, and among them a verifier of the running daemon that could not start (device
  // "verifier"): its runs' samples wait at the verifier for good.
  KF_TRY(auto devs, verify::device_alerts(db));
  // An alert is old when the daemon that wrote it is gone: written before the running daemon
  // started, or by a daemon that has died since (no later than its last beat). One written
  // after that (kforge verify --record-devices) or with no daemon ever stands.
  auto old_alert = [&](std::int64_t at_ms) {
    if (!daemon.row) return false;
    return live ? at_ms < daemon.row->started_ms : at_ms <= daemon.row->beat_ms;
  };
  std::string verifier_down;
  for (const auto& d : devs)
    if (d.device == "verifier" && live && !old_alert(d.updated_ms)) verifier_down = d.reason;
  // A run the daemon would refuse: its prompt templates changed since it was created.
  auto dir = pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir);
  std::optional<pipeline::PromptLibrary> lib;
  if (dir.ok()) {
    auto l = pipeline::PromptLibrary::load(*dir);
    if (l.ok())
      lib = std::move(*l);
    else
      out["prompts_error"] = l.error().message;
  }
  ordered_json runs = ordered_json::array();
  for (auto& p : progress) {
    if (lib && (p.run.state == store::RunState::active || p.run.state == store::RunState::paused)) {
      auto spec = lib->pipeline(p.run.pipeline);
      p.refused = spec.ok() ? (*spec)->mismatch(p.run.prompts) : spec.error().message;
    }
    auto j = p.to_json();
    // A rate and an ETA say how fast a daemon goes: with none running there is neither.
    if (!live) {
      j["samples_per_minute"] = 0.0;
      j["eta_s"] = nullptr;
    }
    auto [ph, waits] = phase(p, daemon, verifier_down);
    j["phase"] = ph;
    j["waits_for"] =
        waits.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(waits);
    KF_TRY(auto batches, pipeline::batches_in_flight(db, p.run.tag, now));
    ordered_json bs = ordered_json::array();
    for (const auto& b : batches) bs.push_back(pipeline::to_json(b));
    j["batches"] = std::move(bs);
    runs.push_back(std::move(j));
  }
  out["runs"] = runs;
  ordered_json alerts = ordered_json::array();
  for (const auto& d : devs)
    alerts.push_back({{"device", d.device},
                      {"start_failures", d.start_failures},
                      {"reason", d.reason},
                      {"since_ms", d.updated_ms},
                      {"old", old_alert(d.updated_ms)}});
  out["verifier_alerts"] = alerts;
  KF_TRY(auto slurm, verify::slurm_summary(db));
  if (!slurm.tasks_by_state.empty() || !slurm.alerts.empty()) {
    ordered_json sl;
    sl["tasks"] = slurm.tasks_by_state;
    ordered_json sa = ordered_json::array();
    for (const auto& a : slurm.alerts)
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

std::string duration(std::int64_t s) {
  char buf[64];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  return buf;
}

std::string count(std::int64_t n) {
  char buf[32];
  if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000)
    std::snprintf(buf, sizeof buf, "%.0fk", static_cast<double>(n) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

// Bytes as MB (10^6), one decimal; kB below a megabyte.
std::string megabytes(std::int64_t n) {
  char buf[32];
  if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(n) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0f kB", static_cast<double>(n) / 1e3);
  return buf;
}

std::int64_t i64(const nlohmann::ordered_json& j) {
  return j.get<std::int64_t>();
}

// Prints `first` then `text` wrapped at word boundaries to `width` columns, continuation lines
// indented to where the text began: whole messages, never cut.
void print_wrapped(const std::string& first, const std::string& text, std::size_t width = 100) {
  std::size_t indent = first.size();
  std::string pad(indent, ' ');
  std::string line = first;
  std::size_t room = width > indent + 20 ? width - indent : 20;
  std::size_t used = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    for (char& ch : word)
      if (ch == '\n' || ch == '\r') ch = ' ';
    if (used > 0 && used + 1 + word.size() > room) {
      std::printf("%s\n", line.c_str());
      line = pad;
      used = 0;
    }
    if (used > 0) {
      line += ' ';
      ++used;
    }
    line += word;
    used += word.size();
    i = j + 1;
  }
  std::printf("%s\n", line.c_str());
}

// "12.5", "20000"; "0.4" below one a minute.
std::string per_minute_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, r >= 100 ? "%.0f" : "%.1f", r);
  return buf;
}

std::string ago(std::int64_t ms) {
  return duration(std::max<std::int64_t>(0, ms / 1000)) + " ago";
}

void print_daemon(const nlohmann::ordered_json& d) {
  std::string state = d["state"].get<std::string>();
  if (state == "none") {
    std::printf("daemon     none has run on this database (start kforged)\n");
    return;
  }
  std::string who = "pid " + std::to_string(i64(d["pid"])) + " on " + d["host"].get<std::string>();
  std::string since = format_utc_ms(i64(d["since_ms"]));
  std::string metrics =
      d["metrics"].is_null() ? "no metrics" : "metrics " + d["metrics"].get<std::string>();
  if (state == "running")
    std::printf("daemon     running since %s (%s, last beat %s, %s%s)\n", since.c_str(),
                who.c_str(), ago(i64(d["beat_age_ms"])).c_str(), metrics.c_str(),
                d.value("verifies", true) ? "" : ", not verifying");
  else if (state == "stopped")
    std::printf("daemon     not running: the last one (%s, started %s) stopped at %s\n",
                who.c_str(), since.c_str(), format_utc_ms(i64(d["stopped_ms"])).c_str());
  else
    print_wrapped("daemon     ", "STALE: " + who + ", started " + since + ", last beat " +
                                     ago(i64(d["beat_age_ms"])) + ": " +
                                     d.value("why", std::string()));
}

// The speed label's flags over a run's passing samples, and why those not timed were not
// (docs/VERIFIER.md, "The speed label"): "  speed flags  not_timed 2  library_work 1".
void print_speed_flags(const nlohmann::ordered_json& run) {
  if (!run.contains("speed") || !run["speed"].contains("flags") || run["speed"]["flags"].empty())
    return;
  std::string flags;
  for (const auto& [f, n] : run["speed"]["flags"].items())
    flags += "  " + f + " " + std::to_string(i64(n));
  std::printf("  speed flags%s\n", flags.c_str());
  for (const auto& r : run["speed"]["not_timed_reasons"]) {
    char head[64];
    std::snprintf(head, sizeof head, "    not timed %6lld  ",
                  static_cast<long long>(i64(r["count"])));
    print_wrapped(head, r["reason"].get<std::string>());
  }
}

// The verifier's alerts (a device out of rotation, or the pool that could not start) and
// Slurm's tasks and alerts.
void print_alerts(const nlohmann::ordered_json& st) {
  for (const auto& a : st["verifier_alerts"]) {
    const char* head = a.value("old", false) ? "old ALERT" : "ALERT    ";
    std::string when = a.value("old", false) ? " (from " + format_utc_ms(i64(a["since_ms"])) +
                                                   ", a kforged that is no longer running)"
                                             : "";
    if (a["device"] == "verifier")  // the pool itself could not start
      std::printf("%s  verifier%s: %s\n", head, when.c_str(),
                  a["reason"].get<std::string>().c_str());
    else
      std::printf("%s  verifier device %s out of rotation (%lld failed worker starts)%s: %s\n",
                  head, a["device"].get<std::string>().c_str(),
                  static_cast<long long>(i64(a["start_failures"])), when.c_str(),
                  a["reason"].get<std::string>().c_str());
  }
  if (st.contains("slurm")) {
    std::string line;
    for (const auto& [state, n] : st["slurm"]["tasks"].items())
      line += "  " + state + " " + std::to_string(i64(n));
    std::printf("slurm      tasks%s\n", line.empty() ? "  none" : line.c_str());
    for (const auto& a : st["slurm"]["alerts"])
      std::printf("ALERT      Slurm %s (%lld times since %s): %s\n",
                  a["kind"] == "submit" ? "rejects submissions" : "cannot be watched",
                  static_cast<long long>(i64(a["count"])),
                  format_utc_ms(i64(a["since_ms"])).c_str(),
                  a["message"].get<std::string>().c_str());
  }
}

// A run's head: what it is, its progress bar and phase, rate, ETA, tokens and cost, replayed and
// mended answers, what it waits for and its batches in flight.
void print_run_head(const nlohmann::ordered_json& run) {
  std::printf("\nrun %s  (pipeline %s, model %s, %s, created %s)\n",
              run["tag"].get<std::string>().c_str(), run["pipeline"].get<std::string>().c_str(),
              run["model"].get<std::string>().c_str(), run["state"].get<std::string>().c_str(),
              format_utc_ms(i64(run["created_ms"])).c_str());
  const auto& pr = run["progress"];
  std::int64_t total = i64(run["jobs_total"]);
  // The bar counts jobs that ended (verified or failed), so it says 100% only once the
  // verifier is done too; cancelled jobs are named apart and never fill it.
  std::int64_t cancelled = pr.value("cancelled", std::int64_t{0});
  std::printf("  %s  %lld/%lld jobs ended; %lld past the LLM stages, %lld at the verifier%s\n",
              pipeline::progress_bar(pr["ended_fraction"].get<double>()).c_str(),
              static_cast<long long>(i64(pr["ended"])), static_cast<long long>(total),
              static_cast<long long>(i64(pr["past_llm"])),
              static_cast<long long>(i64(pr["verifying"])),
              cancelled > 0 ? ("; " + std::to_string(cancelled) + " cancelled").c_str() : "");
  std::string ph = run["phase"].get<std::string>();
  if (run["waits_for"].is_null())
    std::printf("  phase    %s\n", ph.c_str());
  else
    print_wrapped("  phase    ", ph + ": " + run["waits_for"].get<std::string>());
  // The rate is of the LLM stages: once they are done it says nothing.
  bool llm_work = i64(pr["remaining"]) > 0;
  std::string rate = llm_work && run["samples_per_minute"].get<double>() > 0
                         ? per_minute_text(run["samples_per_minute"].get<double>())
                         : std::string("-");
  std::string eta = !llm_work || run["eta_s"].is_null() ? "-" : duration(i64(run["eta_s"]));
  std::printf("  rate %s samples/min   ETA %s   tokens %s in / %s out   cost $%.4f\n", rate.c_str(),
              eta.c_str(), count(i64(run["tokens"]["prompt"])).c_str(),
              count(i64(run["tokens"]["completion"])).c_str(), run["cost_usd"].get<double>());
  if (run.contains("replayed") && i64(run["replayed"]["calls"]) > 0)
    std::printf("  replayed %lld answers from the store after a restart (saved $%.4f)\n",
                static_cast<long long>(i64(run["replayed"]["calls"])),
                run["replayed"]["saved_usd"].get<double>());
  if (i64(run["tokens"].value("reasoning", 0)) > 0 ||
      i64(run["tokens"].value("cached_prompt", 0)) > 0)
    std::printf("  reasoning %s tokens (%lld answers)   cached prompt %s tokens\n",
                count(i64(run["tokens"]["reasoning"])).c_str(),
                static_cast<long long>(i64(run.value("with_reasoning", 0))),
                count(i64(run["tokens"]["cached_prompt"])).c_str());
  if (run.contains("mended") && !run["mended"].empty()) {
    std::string line;
    for (const auto& [what, n] : run["mended"].items())
      line += (line.empty() ? "" : ", ") + what + " " + std::to_string(i64(n));
    print_wrapped("  mended   ", "answers read leniently: " + line);
  }
  if (run.contains("waiting") && !run["waiting"].is_null())
    print_wrapped("  waiting  ", run["waiting"]["reason"].get<std::string>());
  for (const auto& b : run["batches"]) {
    // A batch in flight (llm.mode batch): its state at the provider, counts and age.
    std::string state = b["state"].get<std::string>();
    if (!b["provider_status"].get<std::string>().empty())
      state = b["provider_status"].get<std::string>();
    std::string line = b["key"].get<std::string>().substr(0, 12) + " " + state + ", " +
                       std::to_string(i64(b["run_lines"])) + " of this run's requests (" +
                       std::to_string(i64(b["lines"])) + " in all), " +
                       std::to_string(i64(b["completed"])) + " completed, " +
                       std::to_string(i64(b["failed"])) + " failed, age " +
                       duration(i64(b["age_s"]));
    if (i64(b["poll_errors"]) > 0)
      line += ", " + std::to_string(i64(b["poll_errors"])) + " polls failed";
    if (!b["note"].get<std::string>().empty()) line += ": " + b["note"].get<std::string>();
    print_wrapped("  batch    ", line);
  }
}

// A run's jobs by the stage they are at, its answers by status, and the samples that wait for a
// verifier that has an alert.
void print_run_jobs(const nlohmann::ordered_json& st, const nlohmann::ordered_json& run) {
  // Jobs by the stage they are at (the run's LLM stages and the verifier; not the ended).
  for (const auto& [stage, states] : run["jobs_by_stage"].items()) {
    if (store::step_of(stage) == store::JobStep::none) continue;
    std::string line;
    for (const auto& [state, n] : states.items())
      line += "  " + state + " " + std::to_string(i64(n));
    std::printf("  %-9s%s\n", stage.c_str(), line.c_str());
  }
  for (const auto& [stage, m] : run["stage_outputs"].items()) {
    std::string line;
    for (const auto& [status, n] : m.items()) line += "  " + status + " " + std::to_string(i64(n));
    std::printf("  answers %-9s%s\n", stage.c_str(), line.c_str());
  }
  const std::string verify_step(store::to_string(store::JobStep::verify));
  if (!st["verifier_alerts"].empty() && run["jobs_by_stage"].contains(verify_step)) {
    const auto& v = run["jobs_by_stage"][verify_step];
    const std::string queued(store::to_string(store::JobState::verify_queued));
    std::int64_t waiting = v.contains(queued) ? i64(v[queued]) : 0;
    if (waiting > 0)
      std::printf("  %lld samples wait for the verifier (see the ALERT above)\n",
                  static_cast<long long>(waiting));
  }
}

// A run's verdicts, quality flags, out-of-bounds samples, speed labels, and what the verdicts
// other than passed came from.
void print_run_verdicts(const nlohmann::ordered_json& run) {
  if (!run["verdicts"].empty()) {
    std::string line;
    for (const auto& [v, n] : run["verdicts"].items())
      line += "  " + v + " " + std::to_string(i64(n));
    std::printf("  verdicts%s\n", line.c_str());
    if (run.contains("quality_flags") && !run["quality_flags"].empty()) {
      // Passed, but not verified: what the test would let through (docs/VERIFIER.md).
      std::string flags;
      for (const auto& [f, n] : run["quality_flags"].items())
        flags += "  " + f + " " + std::to_string(i64(n));
      std::printf("  flagged (passed, not verified)%s\n", flags.c_str());
    }
    if (run.contains("out_of_bounds") && i64(run["out_of_bounds"]) > 0)
      // Passed or not: a kernel read or wrote outside its buffers (docs/VERIFIER.md).
      std::printf(
          "  out of bounds %lld (a kernel reads or writes outside its buffers; any "
          "verdict)\n",
          static_cast<long long>(i64(run["out_of_bounds"])));
    if (run.contains("speed") && i64(run["speed"]["timed"]) > 0) {
      // The speed label (docs/VERIFIER.md): pass_perf of those timed against a reference.
      const auto& sp = run["speed"];
      char median[64] = "";
      if (sp["median_speedup"].is_number())
        std::snprintf(median, sizeof median, ", median speedup %.2fx",
                      sp["median_speedup"].get<double>());
      std::printf("  speed: %lld timed, %lld against a reference, pass_perf %lld%s\n",
                  static_cast<long long>(i64(sp["timed"])),
                  static_cast<long long>(i64(sp["with_reference"])),
                  static_cast<long long>(i64(sp["pass_perf"])), median);
    }
    print_speed_flags(run);
    // What the verdicts other than passed came from, with an example and, for the verifier's
    // own faults, the fix.
    for (const auto& c : run["verdict_causes"]) {
      std::string cause = c["cause"].get<std::string>();
      char head[96];
      std::snprintf(head, sizeof head, "    %-8s %-16s %6lld  e.g. ",
                    c["verdict"].get<std::string>().c_str(),
                    cause == "sample" ? "sample error" : cause.c_str(),
                    static_cast<long long>(i64(c["count"])));
      std::string text =
          c["example_key"].get<std::string>() + ": " + c["example"].get<std::string>();
      if (cause == "environment")
        text +=
            " (the verifier's Python lacks a module: set verifier.python to a Python with "
            "torch and triton, then kforge retry " +
            run["tag"].get<std::string>() + " --verdict " + c["verdict"].get<std::string>() + ")";
      else if (cause == "infrastructure")
        text += " (the verifier could not run the sample verifier.max_requeues times in a row)";
      print_wrapped(head, text);
    }
  }
}

// A run's failed jobs and recent errors by kind, and the daemon's refusal.
void print_run_failures(const nlohmann::ordered_json& run) {
  if (!run["failures"].empty()) {
    std::printf("  failed jobs by kind:\n");
    int shown = 0;
    for (const auto& f : run["failures"]) {
      if (++shown > 8) break;
      char head[96];
      std::snprintf(head, sizeof head, "    %-28s %6lld  e.g. ",
                    f["kind"].get<std::string>().c_str(), static_cast<long long>(i64(f["count"])));
      print_wrapped(head,
                    f["example_key"].get<std::string>() + ": " + f["example"].get<std::string>());
    }
  }
  if (!run["errors"].empty()) {
    std::printf("  errors in the last 24 h, by kind:\n");
    int shown = 0;
    for (const auto& e : run["errors"]) {
      if (++shown > 8) break;
      char head[96];
      std::snprintf(head, sizeof head,
                    "    %-28s %6lld  last: ", e["kind"].get<std::string>().c_str(),
                    static_cast<long long>(i64(e["count"])));
      print_wrapped(head, e["last_message"].get<std::string>());
    }
  }
  if (!run["refused"].is_null() && !run["refused"].get<std::string>().empty())
    std::printf("  REFUSED by the daemon: %s; create a new run (a new tag)\n",
                run["refused"].get<std::string>().c_str());
}

void print_text(const nlohmann::ordered_json& st) {
  const auto& bytes = st["database_bytes"];
  std::printf("database   %s (schema %d, %s: file %s + WAL %s)\n",
              st["database"].get<std::string>().c_str(), st["schema_version"].get<int>(),
              megabytes(i64(bytes["total"])).c_str(), megabytes(i64(bytes["file"])).c_str(),
              megabytes(i64(bytes["wal"])).c_str());
  std::printf("samples    %lld\n", static_cast<long long>(i64(st["samples"])));
  print_daemon(st["daemon"]);
  if (st.contains("prompts_error"))
    std::printf("prompts    cannot be read: %s\n", st["prompts_error"].get<std::string>().c_str());
  print_alerts(st);
  if (st["runs"].empty()) {
    std::printf("runs       none (kforge run create TAG --pipeline v2)\n");
    return;
  }
  for (const auto& run : st["runs"]) {
    print_run_head(run);
    print_run_jobs(st, run);
    print_run_verdicts(run);
    print_run_failures(run);
  }
}

// True while a shown active run is generating or verifying: --watch goes on through
// verification, and stops once every run is finished or waits for something that is not
// running (its phase line says what).
bool working(const nlohmann::ordered_json& st) {
  for (const auto& run : st["runs"])
    if (run["state"] == std::string(store::to_string(store::RunState::active)) &&
        run["waits_for"].is_null() && (run["phase"] == "generating" || run["phase"] == "verifying"))
      return true;
  return false;
}

// Why --watch stops: what each run shown is, or waits for (nothing shown can move on).
std::string why_stopped(const nlohmann::ordered_json& st) {
  if (st["runs"].empty()) return "no run to watch (kforge run create TAG --pipeline v2)";
  std::string out;
  for (const auto& run : st["runs"]) {
    std::string tag = run["tag"].get<std::string>(), state = run["state"].get<std::string>();
    std::string why;
    if (state == store::to_string(store::RunState::paused))
      why = "run " + tag + " is paused (kforge run resume " + tag + ")";
    else if (state == store::to_string(store::RunState::cancelled))
      why = "run " + tag + " is cancelled";
    else if (!run["waits_for"].is_null())
      why = "run " + tag + " is " + run["phase"].get<std::string>() + ": " +
            run["waits_for"].get<std::string>();
    else
      why = "run " + tag + " is " + run["phase"].get<std::string>();
    out += (out.empty() ? "" : "; ") + why;
  }
  return out;
}

}  // namespace

Command add_status(CLI::App& root, Globals& g) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = root.add_subcommand("status", "Show samples, runs and their progress");
  cmd->add_option("tag", args->tag, "Only this run");
  cmd->add_flag("--json", args->json, "Print one JSON object (for scripts)");
  cmd->add_flag("--create", args->create,
                "Create and migrate the database where there is none (the package's install "
                "does this as the service user); without it a missing database is an error");
  cmd->add_flag("--watch", args->watch,
                "Redraw every --interval seconds while a run shown is generating or verifying; "
                "stop when each is finished or waits for something not running (with --json: "
                "one JSON line each time)");
  cmd->add_option("--interval", args->interval_s, "Seconds between redraws with --watch")
      ->check(CLI::Range(0.1, 3600.0));
  return {cmd, [args, &g]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg, args->create ? app::IfMissing::create
                                                                        : app::IfMissing::refuse));
            std::optional<std::string> tag;
            if (!args->tag.empty()) tag = args->tag;
            bool tty = ::isatty(1) != 0;
            while (true) {
              KF_TRY_OR_REPORT(auto st, collect(*db, cfg, tag));
              // Keys, answers and errors came from models and crawls: no escape sequence of
              // theirs reaches the terminal (--json escapes them as JSON does).
              if (!args->json) st = printable_strings(st);
              if (args->json) {
                // ASCII only: a C1 control (U+009B, a CSI) is escaped too, as \u009b.
                std::printf(
                    "%s\n",
                    st.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
              } else {
                if (args->watch && tty) std::printf("\033[H\033[2J");
                print_text(st);
                if (args->watch)
                  std::printf("\n(every %.1f s; Ctrl-C to stop)\n", args->interval_s);
              }
              if (args->watch && !working(st)) {
                // Nothing shown can move on by itself: say why instead of redrawing forever.
                std::fprintf(args->json ? stderr : stdout, "%sstopped watching: %s\n",
                             args->json ? "kforge: " : "\n", why_stopped(st).c_str());
                std::fflush(stdout);
                return kOk;
              }
              std::fflush(stdout);
              if (!args->watch) return kOk;
              system_clock().sleep_for(
                  std::chrono::milliseconds(static_cast<std::int64_t>(args->interval_s * 1000)));
            }
          }};
}

}  // namespace kforge::cli
