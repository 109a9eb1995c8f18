#pragma once
// Internal: batch mode's step recorder. Every step of a batch is written to llm_batches /
// llm_batch_lines (migration 0013, queries in sql/batch.sql) before and after it happens, and
// read back after a restart, so that a line is never sent twice while its batch lives.
//
// Threads: the batch runner's thread only (its own SQLite connection).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "batch.hpp"
#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::llm {

// A request waiting for its batch: its line's custom_id (sha), the call the line answers (call:
// the same, or the call a continuation line continues), its label (llm_batch_lines.tag) and its
// body: in memory (body) only until it is in the text store (text: its id, BatchLedger::stash),
// bytes long.
struct Pending {
  std::string sha, call, label, body;
  std::int64_t text = 0;
  std::size_t bytes = 0;
};

class BatchLedger {
 public:
  Status open(const std::string& path, int busy_timeout_ms);

  // The latest line recorded for a request to chat_url, in any batch.
  struct LatestLine {
    std::int64_t batch = 0;
    std::string key, batch_state, line_state;
    std::optional<std::string> raw;  // the answer, once the line was answered
    std::string call;                // the call the line answers
  };
  std::optional<LatestLine> latest_line(const std::string& sha, const std::string& chat_url);

  // Puts the bodies of `in` into the text store (Pending::text, in one transaction; the bodies
  // stay for the caller to release), and gives a request's lines recorded without their
  // request (before migration 0035) this one.
  Status stash(std::vector<Pending>& in);
  // A pending request's body: in memory, or read from the text store.
  Result<std::string> body(const Pending& p);
  // The requests of a batch's lines, into each outcome's `request` (one read per line; a line
  // whose request is gone, recorded before migration 0035, gets none).
  Status requests(std::int64_t batch, std::vector<LineOutcome>& outcomes);

  // A new batch of `lines` (state uploading, `bytes` of input file), in one transaction: its id.
  // Each line's request is its text (Pending::text), stored first if it is not yet.
  Result<std::int64_t> add_batch(const std::string& key, const std::string& chat_url,
                                 const std::string& model, std::span<const Pending> lines,
                                 std::size_t bytes, std::int64_t now);

  // The batches for chat_url and model that are not done, with their lines (bodies only for a
  // batch still uploading: its input file is made again from them).
  struct StoredLine {
    std::string sha;
    std::optional<std::string> body;  // a line recorded before migration 0035
    std::int64_t text = 0;            // its request in the text store
    std::string state;
    std::string call;  // the call the line answers (sha, or the call a continuation continues)
  };
  struct StoredBatch {
    std::int64_t id = 0;
    std::string key, state, file_id, batch_id;
    std::int64_t created_ms = 0;
    std::int64_t submitted_ms = 0;
    std::vector<StoredLine> lines;
  };
  Result<std::vector<StoredBatch>> open_batches(const std::string& chat_url,
                                                const std::string& model);

  // The input file is at the provider (the batch and its lines), in one transaction.
  Status uploaded(std::int64_t id, const std::string& file_id, std::int64_t now);
  // The batch exists at the provider.
  Status submitted(std::int64_t id, const std::string& batch_id, const std::string& status,
                   std::int64_t now);
  // Best effort (a failure is not reported): a failed poll, a new status, a note.
  void poll_error(std::int64_t id, const std::string& why, std::int64_t now);
  void polled(std::int64_t id, const std::string& status, std::int64_t completed,
              std::int64_t failed, std::int64_t now);
  void note(std::int64_t id, const std::string& why, std::int64_t now);
  // Lines of a batch that ended, answered or failed (bodies and errors from outside through
  // redact); one transaction per call (a result file is recorded a part at a time).
  Status line_results(std::int64_t id, const std::vector<LineOutcome>& outcomes,
                      const std::function<std::string(std::string)>& redact);
  // The batch ended and every line's outcome is recorded: done, with its files and counts.
  Status done(std::int64_t id, const std::string& status, const std::string& out_id,
              const std::string& err_id, const std::string& batch_error, int answered, int failed,
              std::int64_t now, const std::function<std::string(std::string)>& redact);
  // Batches done whose files were not deleted at the provider (a crash or a stop while the
  // DELETEs were in flight): their row id, key and file ids ("" for none).
  struct Undeleted {
    std::int64_t id = 0;
    std::string key;
    std::vector<std::string> files;
  };
  Result<std::vector<Undeleted>> undeleted(const std::string& chat_url, const std::string& model);
  // The batch's files were deleted at the provider (best effort).
  void files_deleted(std::int64_t id, std::int64_t now);
  // Drops the copies of answers the client has recorded (best effort).
  void prune();

 private:
  std::unique_ptr<store::Db> db_;
};

}  // namespace kforge::llm
