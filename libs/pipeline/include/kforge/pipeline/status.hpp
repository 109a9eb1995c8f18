#pragma once
// What `kforge status` shows, as typed data: the database, the daemon, the verifier's and
// Slurm's alerts, and each run's progress with its phase and batches in flight. One collection
// (collect_status), two renderings of the same data: to_json (`kforge status --json`) and
// status_text (the terminal's text, every string a model, a crawl or a sample wrote through
// printable()). The text is built from the data, never from the JSON.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/pipeline/batch_status.hpp"
#include "kforge/pipeline/heartbeat.hpp"
#include "kforge/pipeline/progress.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/slurm_backend.hpp"

namespace kforge::pipeline {

// A verifier alert (verifier_devices): a device out of rotation, or the pool that could not
// start (device "verifier"). Old when the daemon that wrote it is gone.
struct StatusAlert {
  std::string device;
  std::int64_t start_failures = 0;
  std::string reason;
  std::int64_t since_ms = 0;
  bool old = false;
};

struct RunStatus {
  RunProgress progress;   // with `refused` set where the daemon would refuse the run
  bool live = false;      // a daemon runs: without one there is no rate and no ETA
  std::string phase;      // generating, generated, verifying, finished, paused, cancelled
  std::string waits_for;  // "" when nothing
  std::vector<BatchInFlight> batches;
};

struct StatusData {
  std::int64_t samples = 0;
  int schema_version = 0;
  std::string database;
  std::int64_t file_bytes = 0, wal_bytes = 0;  // the database file and its write-ahead log
  std::map<std::string, std::int64_t> jobs;    // every run's jobs by state
  DaemonState daemon;
  std::optional<std::string> prompts_error;  // the prompt templates could not be read
  std::vector<RunStatus> runs;
  std::vector<StatusAlert> alerts;
  verify::SlurmSummary slurm;
};

// Where the status comes from besides the database: the prompt templates' directory (a run whose
// templates changed since it was created is one the daemon refuses), the time, this host and
// whether a pid of it is alive (a daemon of this host whose pid is gone is stale at once).
struct StatusSources {
  std::string prompts_dir;
  std::int64_t now_ms = 0;
  std::string host;
  std::function<bool(std::int64_t)> pid_alive;
};

// Every run, or the one tagged `tag`.
Result<StatusData> collect_status(store::Db& db, const StatusSources& from,
                                  const std::optional<std::string>& tag);

// `kforge status --json`: one object (docs/OPERATIONS.md).
nlohmann::ordered_json to_json(const StatusData& s);

// `kforge status`'s text, lines of at most 100 columns where a message is wrapped.
std::string status_text(const StatusData& s);

// True while a run shown is active and generating or verifying with nothing it waits for:
// `--watch` goes on.
bool working(const StatusData& s);

// Why `--watch` stops: what each run shown is, or waits for.
std::string why_stopped(const StatusData& s);

}  // namespace kforge::pipeline
