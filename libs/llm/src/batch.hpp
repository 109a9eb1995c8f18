#pragma once
// BatchRunner: batch mode's engine (llm.mode: batch), internal to the client.
//
// The client hands it requests that the store could not answer; it groups them into JSONL input
// files (one line per request, custom_id = the request's identity, or for a cut answer asked
// again with a larger budget a continuation identity naming the call), uploads each (/files),
// creates the batch (/batches, with the completion window and metadata.kforge_batch = the
// batch's key), polls it, downloads the output and error files and hands each line's outcome
// back to the client, which parses, records and delivers it exactly as an interactive answer.
//
// Memory: nothing of a waiting request is held but its identity. Its body goes into the text
// store when the runner takes it (llm_batch_lines.request_text, migration 0035), the input file is
// written from there a line at a time, result files are read from disk a line at a time, and
// outcomes go back with their requests read from the store, llm.batch.lines_in_memory at a time.
//
// Crash safety: every step is recorded in llm_batches / llm_batch_lines (migrations 0013, 0018)
// before and after it happens. A restarted runner resumes the open batches: it adopts an input
// file it uploaded but did not record (by its name), and a batch it created but did not record
// (listing the provider's batches, by metadata.kforge_batch), so a line is never sent twice
// while its batch lives; a request whose line was answered before the crash is answered from
// the stored line. Lines that failed or expired go into a later batch. The lines read from the
// output and error files are checked against the batch's request_counts: a short file is read
// again, never resubmitted. Once recorded, the batch's files are deleted at the provider
// (llm.batch.keep_files keeps them).
//
// Threads: one thread of its own (blocking HTTP through libcurl, its own SQLite connection);
// enqueue() and stats() may be called from any thread; `deliver` runs on the runner's thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"
#include "kforge/llm/config.hpp"

namespace kforge::llm {

// One request's outcome from a batch.
struct LineOutcome {
  std::string sha;        // the line's custom_id
  std::string call;       // the call it answers (sha, or the call a continuation continues)
  bool answered = false;  // an HTTP 200 answer is in body
  // Answered from a line the client was handed before (and recorded, priced): not billed again.
  bool replayed = false;
  // A failure about the run, not the line (ErrorKind name: "config" for a batch the provider
  // refused as misconfigured, "auth" for a refused key); "" otherwise. Not resubmitted.
  std::string run_level;
  int http_status = 0;    // the line's status (0: none, e.g. expired)
  std::string body;       // the response body (the chat completion, or the provider's error)
  std::string error;      // why there is no answer (failed or expired line, failed batch)
  std::string batch_key;  // the batch it came from
  // The request the line sent (its JSON body), read back from the store with the outcome: the
  // client holds none of a batch's requests while they wait, and records or resends this.
  std::string request;
  // The batch's row (llm_batches.id): an answered line is marked applied in the transaction that
  // writes its llm_calls row (AuditStore::write_rows), never before, so that a crash between the
  // two leaves it answered (recorded again, priced) and not applied (replayed at $0).
  std::int64_t batch = 0;
};

// Batches in flight, for Stats and /metrics.
struct BatchGauges {
  int open = 0;             // recorded and not done
  int lines_in_flight = 0;  // lines of open batches
  int lines_waiting = 0;    // requests collected for the next batch
  std::uint64_t created = 0;
  std::uint64_t adopted = 0;  // found at the provider after a restart
  std::uint64_t lines_answered = 0;
  std::uint64_t lines_failed = 0;
  std::uint64_t poll_errors = 0;
};

struct BatchRunnerOptions {
  LlmConfig cfg;
  std::string chat_url;     // the client's chat completions URL (the lines' endpoint)
  std::string auth_header;  // "Authorization: Bearer ..." or "api-key: ..." ("" none); never logged
  Clock* clock = nullptr;
  std::string db_path;
  int db_busy_timeout_ms = 10'000;
  std::function<std::string(std::string)> redact;  // removes the key from text from outside
  std::function<void(std::vector<LineOutcome>)> deliver;
  // Outcomes delivered that the client still holds (not yet recorded): more are handed over
  // only while they are fewer than llm.batch.lines_in_memory. Unset: no wait.
  std::function<std::int64_t()> held;
};

class BatchRunner {
 public:
  static Result<std::unique_ptr<BatchRunner>> create(BatchRunnerOptions opts);
  ~BatchRunner();  // stop()
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // A request waiting for its answer: put into a batch as the line `line` (custom_id) for the
  // call `call` (the same identity, or the call a continuation line continues), attached to the
  // line already in one, or answered at once from a stored line. Its body, or with `text` its
  // id in the text store (`bytes` long) and no body.
  void enqueue(std::string line, std::string call, std::string label, std::string body,
               std::int64_t text = 0, std::size_t bytes = 0);
  BatchGauges gauges() const;
  // Stops the thread. Batches in flight stay recorded for the next start.
  void stop();

  class Impl;

 private:
  explicit BatchRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The files and batches endpoints for a chat completions URL: ("https://x/v1", "") for
// "https://x/v1/chat/completions"; Azure's "/openai/deployments/D/chat/completions?api-version=V"
// gives ("https://x/openai", "?api-version=V").
std::pair<std::string, std::string> batch_api_base(const std::string& chat_url);

}  // namespace kforge::llm
