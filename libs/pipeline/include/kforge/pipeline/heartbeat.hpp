#pragma once
// Daemon liveness, kept in the database (table daemon_heartbeats, migration 0009).
//
// kforged adds a row when it starts (pid, host, start time, metrics address), updates its beat
// every interval while its loop turns, and marks it stopped on a clean exit. Readers (`kforge
// status`) judge the latest row:
//   running  the beat is recent (within max(3 intervals, 30 s));
//   stale    the beat is older than that: the daemon died without a word (SIGKILL, power loss),
//            or its loop is wedged; or it ran on this host and its pid is gone;
//   stopped  it exited cleanly;
//   none     no kforged ever started on this database.
// Times come from the injected clock; the row is written by the daemon's own connection.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/clock.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct DaemonRow {
  std::int64_t id = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string owner;
  std::string version;
  std::int64_t started_ms = 0;
  std::int64_t beat_ms = 0;
  std::int64_t interval_ms = 0;
  std::string metrics;  // "" when it serves none
  std::optional<std::int64_t> stopped_ms;
  bool verifies = true;  // it runs the verifier (daemon.verify)
};

// The daemon's side. Not thread-safe: the main loop owns it.
class Heartbeat {
 public:
  struct Options {
    std::string host;
    std::int64_t pid = 0;
    std::string owner;
    std::string version;
    std::string metrics;
    std::int64_t interval_ms = 5'000;
    bool verifies = true;
  };
  // Adds this start's row (and trims rows of old starts).
  static Result<Heartbeat> start(store::Db& db, Clock& clock, const Options& o);
  // Writes the beat when an interval has passed since the last one; cheap otherwise.
  Status beat();
  // When the next beat() writes (wall ms): an idle loop wakes for it.
  std::int64_t next_beat_ms() const { return last_ms_ + interval_ms_; }
  // Marks a clean exit.
  Status stop();
  std::int64_t id() const { return id_; }

 private:
  Heartbeat(store::Db& db, Clock& clock, std::int64_t id, std::int64_t interval_ms,
            std::int64_t now)
      : db_(&db), clock_(&clock), id_(id), interval_ms_(interval_ms), last_ms_(now) {}
  store::Db* db_;
  Clock* clock_;
  std::int64_t id_;
  std::int64_t interval_ms_;
  std::int64_t last_ms_;
};

enum class Liveness { none, running, stale, stopped };
const char* to_string(Liveness l);

struct DaemonState {
  Liveness liveness = Liveness::none;
  std::optional<DaemonRow> row;
  std::int64_t beat_age_ms = 0;
  std::string why;  // for stale: what made it so
};

// How long after the last beat a daemon counts as stale.
std::int64_t stale_after_ms(std::int64_t interval_ms);

// Judges the latest row at now_ms. `pid_alive(pid)`, when given, is asked about a daemon that
// ran on `this_host`: a gone pid makes it stale at once instead of after the beat ages.
Result<DaemonState> daemon_state(store::Db& db, std::int64_t now_ms, const std::string& this_host,
                                 const std::function<bool(std::int64_t)>& pid_alive = {});

// What a starting daemon finds, one log line each: how the previous daemon ended (when it did
// not stop cleanly), and per active run what it resumes ("resuming run X: 17 jobs: 12 for the
// LLM stages, 5 to verify"). Call before Heartbeat::start.
Result<std::vector<std::string>> start_report(store::Db& db, std::int64_t now_ms);

// {"state": "running", "pid", "host", "since_ms", "last_beat_ms", "beat_age_ms", "metrics", ...}.
nlohmann::ordered_json to_json(const DaemonState& d);

}  // namespace kforge::pipeline
