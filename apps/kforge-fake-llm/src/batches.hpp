#pragma once
// The fake provider's Files and Batch API (docs/FAKE_LLM.md, "Batches"): POST /v1/files,
// GET /v1/files, GET /v1/files/{id}/content, POST /v1/batches, GET /v1/batches,
// GET /v1/batches/{id} and POST /v1/batches/{id}/cancel, as OpenAI serves them. A batch's
// lines are answered by the chat script when the batch is polled after its latency, and the
// script's `batch` section plays the faults a real provider shows: a failed line, an expired,
// cancelled or failed batch, 5xx on polling, an output file that arrives in parts, and a pause
// after a step (so a test can kill its client between the provider acting and the client
// recording it).

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::fake_llm {

// Checks the script's `batch` section; errors name the key, e.g. "batch.fault: 'boom' is not
// one of ...".
Status check_batch_script(const nlohmann::json& b);

class FakeBatches {
 public:
  // Answers one line's body as the chat endpoint would: (HTTP status, response body).
  using Answer = std::function<std::pair<int, std::string>(const nlohmann::json& body)>;
  // Sleeps up to ms, returning early when the server stops.
  using Pause = std::function<void(double ms)>;

  FakeBatches(Answer answer, Pause pause) : answer_(std::move(answer)), pause_(std::move(pause)) {}

  // The script's `batch` section (or null), and its require_key: the Files and Batch endpoints
  // answer 401 to a request without that key, as the chat endpoint does.
  void set_script(const nlohmann::json& batch, const std::string& require_key = "");
  void routes(httplib::Server& svr);
  // {"files": N, "created": N, "lines": N (lines answered: paid), "lines_by_custom_id":
  //  {id: N}, "polls": N, "poll_errors": N, "lists": N, "cancels": N, "downloads": N,
  //  "cut_downloads": N, "holds": N}
  nlohmann::json stats() const;
  void reset_stats();

 private:
  struct File {
    std::string id, filename, purpose, content;
    std::int64_t created_at = 0;
  };
  struct Batch {
    std::string id, input_file_id, endpoint, window, status = "validating";
    std::string final_status;  // while finalizing: what it ends as
    nlohmann::json metadata = nullptr;
    nlohmann::json errors = nullptr;
    std::int64_t created_at = 0;
    std::chrono::steady_clock::time_point started{};
    std::size_t index = 0;  // creation order: a fault with `times` applies to the first ones
    int polls = 0;
    int total = 0, completed = 0, failed = 0;
    std::string output_file_id, error_file_id;
    bool cancel_requested = false;
  };

  void serve_upload(const httplib::Request& req, httplib::Response& res);
  void serve_create(const httplib::Request& req, httplib::Response& res);
  void serve_get(const std::string& id, httplib::Response& res);
  void serve_list(const httplib::Request& req, httplib::Response& res);
  void serve_cancel(const std::string& id, httplib::Response& res);
  void serve_content(const std::string& id, httplib::Response& res);
  void hold(const std::string& step);
  // False (and a 401 sent) when the request lacks the required key.
  bool authorized(const httplib::Request& req, httplib::Response& res);
  // Ends the batch when its time has come (mu_ held): runs its lines through answer_.
  void advance(Batch& b);
  // The input file's validation (mu_ held): the batch's errors.data entry, or null; sets total.
  nlohmann::json validate(Batch& b);
  void finish(Batch& b, const std::string& fault);
  std::string fault_for(const Batch& b) const;
  static nlohmann::json to_json(const Batch& b);
  void bump(const std::string& k, std::int64_t n = 1);

  Answer answer_;
  Pause pause_;
  mutable std::mutex mu_;
  nlohmann::json script_ = nlohmann::json::object();
  std::string require_key_;
  std::map<std::string, File> files_;
  std::map<std::string, Batch> batches_;
  std::vector<std::string> order_;  // batch ids, oldest first
  std::map<std::string, int> content_reads_;
  std::map<std::string, int> holds_done_;
  std::uint64_t next_ = 0;
  nlohmann::json stats_;
};

}  // namespace kforge::fake_llm
