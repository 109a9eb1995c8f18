#pragma once
// The `pipeline` and `daemon` sections of the configuration (config/kforge.yaml documents every
// key with its default).
//
// Reloadable on SIGHUP: every PipelineConfig field except prompts_dir (prompts are re-read and
// re-checked too); of DaemonConfig only status_interval_ms. The rest needs a restart.

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/core/config.hpp"

namespace kforge::pipeline {

struct PipelineConfig {
  // Where prompts/<version>/<stage>.md live. Empty: the data directory (KFORGE_DATA_DIR, the
  // installed share/kforge, or the source tree).
  std::string prompts_dir;
  int max_in_flight = 32;                 // jobs with a stage call in flight, over all runs
  std::int64_t lease_ms = 120'000;        // a lease's length; renewed while the call runs
  int max_attempts = 3;                   // per stage: answers that do not parse or are rejected
  int max_transient_failures = 8;         // per stage: provider errors after the client's retries
  std::int64_t retry_backoff_ms = 5'000;  // first wait after a transient failure, doubled
  std::int64_t retry_backoff_max_ms = 600'000;
  int failure_streak_pause = 10;  // permanent provider errors in a row that pause a run; 0: never
  // Jobs waiting in 'verify_queued' at which leasing stops until the verifier catches up.
  // 0: no limit (the verifier is not part of this build yet).
  int verify_backlog = 0;
  std::int64_t idle_poll_ms = 500;  // how often an idle daemon looks for new work
  // true: ask the provider for JSON (llm.response_format, with the stage's schema for
  // json_schema) and let the client parse it; an answer it cannot parse is then neither kept
  // for replay nor shown to the model on retry. false: the pipeline parses every answer itself,
  // and every answer is stored and replayable.
  bool structured_output = false;
  // Repair rounds for runs created with this configuration (`kforge run create` records it in
  // the run; a running run keeps its own): a sample whose verdict is not verified goes back to
  // the LLM with the verifier's evidence (prompts/<version>/repair.md) and is verified again, at
  // most this many times. 0: no repair.
  int repair_rounds = 2;
  // Jit decorators of packages built on Triton whose functions are kernels too, beyond Triton's
  // own jit and Gluon's (kernel facts, facts.hpp), e.g. "triton_dist.jit".
  std::vector<std::string> jit_decorators;
  // Not configuration: set by kforge batch export/import, which lease only this run's jobs.
  std::string only_run;
};

struct DaemonConfig {
  // The lease owner's name prefix. Empty: the host name. The process id is appended.
  std::string owner;
  // host:port for /healthz and /metrics; loopback only (127.0.0.0/8, ::1, localhost). Empty:
  // no HTTP server.
  std::string http_listen = "127.0.0.1:9464";
  std::int64_t shutdown_grace_ms = 30'000;  // SIGTERM: how long calls in flight may finish
  std::int64_t status_interval_ms = 2'000;  // progress to systemd (STATUS=) and the log
  // Run the verifier pool (the `verifier:` section) on jobs in 'verify_queued'. Off: generated
  // samples wait there (for another kforged, or a later start).
  bool verify = true;
};

void read_config(ConfigNode n, PipelineConfig& out);
void read_config(ConfigNode n, DaemonConfig& out);

}  // namespace kforge::pipeline
