#pragma once
// Internal: the batch runner's state, shared by its parts (batch.hpp has the contract):
//   batch.cpp           creation, the public methods, the thread's loop, requests collected
//                       into batches, recovery of the open batches after a restart
//   batch_provider.cpp  a batch at the provider: upload, create (or find), poll, cancel past
//                       its window, download the results
//   batch_ledger.cpp    BatchLedger, the step recorder (llm_batches, llm_batch_lines)
//   batch_file.cpp      the JSON Lines: input files written to disk, result files read line by
//                       line into outcomes
// Threads: as BatchRunner: the runner's thread, enqueue() and gauges() from any thread.

#include <curl/curl.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch.hpp"
#include "batch_ledger.hpp"

namespace kforge::llm {

// Waits are sliced like the client's: the clock may be moved by someone else (a test's
// ManualClock).
constexpr std::int64_t kBatchSliceMs = 20;
// Short downloads in a row (fewer lines than the batch's request_counts) after which the
// shortfall is reported as an error; the files are still read again at each retry.
constexpr int kShortReadsNoted = 3;

struct Http {
  long status = 0;  // 0: no response (error says why)
  std::string body;
  std::string error;  // transport error
  bool ok() const { return status >= 200 && status < 300; }
  bool retryable() const { return status == 0 || status == 408 || status == 429 || status >= 500; }
};

// A batch recorded and not done.
struct Open {
  std::int64_t id = 0;
  std::string key;
  std::string state;  // uploading, uploaded, submitted
  std::string file_id, batch_id, provider_status;
  std::int64_t created_ms = 0;
  std::int64_t submitted_ms = 0;
  std::int64_t next_ms = 0;
  int errors = 0;          // consecutive failed steps (backoff)
  bool recovered = false;  // from an earlier process, or a step whose answer was lost
  bool cancel_sent = false;
  std::int64_t completed = -1, failed = -1;
  std::string input_path;                    // the input file on disk, until it is uploaded
  int answered = 0, failed_lines = 0;        // lines recorded from its result files
  std::set<std::string> shas;                // the pending lines' custom_ids
  std::map<std::string, std::string> calls;  // custom_id -> call, for continuation lines
  int short_reads = 0;  // downloads in a row that held fewer lines than request_counts
};

class BatchRunner::Impl {
 public:
  explicit Impl(BatchRunnerOptions o);
  ~Impl() { stop(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status start();
  void enqueue(Pending p);
  BatchGauges gauges() const;
  void stop();

 private:
  // --- batch.cpp: the loop and the requests (the runner's thread) ---
  void run();
  void take(Pending p, std::int64_t now);
  void flush_due(std::int64_t now);
  Status make_batch(std::int64_t now);
  Status recover();
  bool step(Open& b);
  void prune();
  void hand_over();
  void wait_for_room();
  void publish();

  // --- batch_provider.cpp: the provider's side (the runner's thread) ---
  // A request; with `sink`, the response body goes to that file instead of Http::body (its
  // first KB is read back into body when the status is not 2xx).
  Http request(const std::string& method, const std::string& path, const std::string& body,
               curl_mime* mime = nullptr, const std::string& params = "",
               const std::string& sink = "");
  std::string describe(const std::string& what, const Http& h) const;
  std::string redact(std::string s) const { return o_.redact ? o_.redact(std::move(s)) : s; }
  void retry_later(Open& b, std::int64_t now, const std::string& why);
  bool upload(Open& b, std::int64_t now);
  bool uploaded(Open& b, const std::string& file_id, std::int64_t now);
  bool create(Open& b, std::int64_t now);
  bool submitted(Open& b, const nlohmann::json& j, std::int64_t now);
  bool poll(Open& b, std::int64_t now);
  bool download(const std::string& file_id, const std::string& path, std::string* why);
  // When a recorded part's answers go to their callers: at once, or with the batch's last part.
  enum class HandOver { now, with_last };
  bool record_lines(Open& b, std::vector<LineOutcome>& chunk, const std::string& run_level,
                    std::int64_t now, HandOver hand);
  std::string spool(const Open& b, const std::string& what) const;
  void remove_spool(const Open& b);
  bool collect(Open& b, const nlohmann::json& j, std::int64_t now,
               const std::string& run_level = "");
  std::optional<std::string> shortfall(const nlohmann::json& j, const std::string& out_id,
                                       const std::string& err_id, std::size_t out_lines,
                                       std::size_t err_lines) const;
  void delete_files(Open& b, const std::vector<std::string>& ids, std::int64_t now);
  bool abandon(Open& b, const std::string& why, std::int64_t now,
               const std::string& run_level = "");
  CURL* easy();

  BatchRunnerOptions o_;
  Clock* clock_ = nullptr;
  std::string base_, query_, endpoint_;
  std::string spool_dir_;  // input files as they are built, result files as they arrive
  BatchLedger ledger_;
  CURL* easy_ = nullptr;
  curl_slist* headers_ = nullptr;
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> incoming_;
  bool stop_ = false;

  // The runner's thread only.
  std::map<std::int64_t, Open> open_;
  // Batches done whose files an earlier process did not get deleted: deleted first thing.
  std::vector<BatchLedger::Undeleted> undeleted_;
  std::map<std::string, std::int64_t> in_batch_;  // sha -> open batch holding its line
  std::set<std::string> waiting_;                 // shas a client call waits for
  std::vector<Pending> collecting_;
  std::set<std::string> collecting_ids_;
  std::size_t collecting_bytes_ = 0;
  std::int64_t collect_since_ms_ = 0;
  std::vector<LineOutcome> ready_;
  std::int64_t last_prune_ms_ = 0;

  mutable std::mutex gauge_mu_;
  BatchGauges gauges_;
};

}  // namespace kforge::llm
