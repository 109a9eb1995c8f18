#pragma once
// Internal: one request's state inside the client (Call), and the endpoint's URL and API key with
// how the client names a call in its messages and keeps the key out of them (ApiAccess). Shared by
// the client's parts, which client_impl.hpp lists.

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/result.hpp"
#include "kforge/llm/client.hpp"
#include "kforge/llm/limits.hpp"

namespace kforge::llm {

// One batch outcome the client holds (llm.batch.lines_in_memory bounds them): released when the
// call that took it is recorded and delivered (the Call is destroyed) or sent again.
class OutcomeHold {
 public:
  OutcomeHold() = default;
  explicit OutcomeHold(std::shared_ptr<std::atomic<std::int64_t>> n) : n_(std::move(n)) {}
  OutcomeHold(OutcomeHold&& o) noexcept : n_(std::move(o.n_)) {}
  OutcomeHold& operator=(OutcomeHold&& o) noexcept {
    release();
    n_ = std::move(o.n_);
    return *this;
  }
  OutcomeHold(const OutcomeHold&) = delete;
  OutcomeHold& operator=(const OutcomeHold&) = delete;
  ~OutcomeHold() { release(); }
  void release() {
    if (n_) n_->fetch_sub(1);
    n_.reset();
  }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> n_;
};

struct Call {
  ChatRequest req;
  std::string sha;
  std::string body;
  std::vector<Callback> callbacks;
  TimePoint submitted{};
  std::uint64_t seq = 0;  // submit order (a halt fails what was submitted before it)
  TimePoint first_started{};
  TimePoint attempt_started{};
  int attempts = 0;
  int enlargements = 0;   // times a cut answer was asked again with a larger max_tokens
  double token_cost = 0;  // the TPM estimate taken for the current attempt
  std::string resp;
  std::map<std::string, std::string> headers;  // lower-case names, the last response's
  char errbuf[CURL_ERROR_SIZE] = {};
  long last_status = 0;
  bool hashed = false;    // registered in by_hash_ (identical submits join it)
  bool in_batch = false;  // waiting in a batch (llm.mode batch), not on the wire
  // Batch mode, a request whose body is in the store (ChatRequest::stored_body): its text id and
  // size, while the call holds no body (until its line goes into a batch).
  std::int64_t body_text = 0;
  std::size_t body_bytes = 0;
  int batch_tries = 0;  // batches it went through
  std::string line;     // the custom_id of its batch line (identity.hpp)
  // The batch lines (llm_batches.id, custom_id) that answered it: marked applied in the
  // transaction that writes its llm_calls row.
  std::vector<std::pair<std::int64_t, std::string>> batch_lines;
  // A failed line of a result file (Client::record_failure): its row is written once, however
  // often the file is imported.
  bool once = false;
  std::optional<std::string> offline;  // an answer given with Client::answer
  OutcomeHold outcome;                 // the batch outcome it took, until recorded or resent
  // The outcome, filled in by finish().
  std::optional<Result<ChatResponse>> result;
  ChatResponse resp_fields;  // tokens, raw body and finish reason, also for failures
  std::optional<std::int64_t> replay_of;
  CURL* easy = nullptr;  // while on the wire
};

// The endpoint's URL and API key (a secret: the auth header is its one use), how messages name a
// call ("POST <url> [label]", " (attempt 2/6)"), and the key removed from text that came from
// outside (a server may echo it). Safe from any thread: the URL and the key
// are set before the threads start, max_attempts is atomic.
class ApiAccess {
 public:
  void set_url(std::string url) { url_ = std::move(url); }
  void set_key(std::string key) { key_ = std::move(key); }
  void set_max_attempts(int n) { max_attempts_ = n; }
  const std::string& url() const { return url_; }
  const std::string& key() const { return key_; }  // secret: for the auth header only

  std::string redact(std::string s) const {
    if (key_.empty()) return s;
    for (auto p = s.find(key_); p != std::string::npos; p = s.find(key_, p))
      s.replace(p, key_.size(), "[REDACTED]");
    return s;
  }
  std::string where(const Call& c) const {
    return "POST " + url_ + (c.req.label.empty() ? "" : " [" + c.req.label + "]");
  }
  std::string attempt_note(const Call& c) const {
    return " (attempt " + std::to_string(c.attempts) + "/" + std::to_string(max_attempts_.load()) +
           ")";
  }

 private:
  std::string url_;
  std::string key_;  // secret: only ever in the auth header, and here to take it out of text
  std::atomic<int> max_attempts_{1};
};

inline std::int64_t ms_between(TimePoint a, TimePoint b) {
  return std::chrono::duration_cast<Millis>(b - a).count();
}

}  // namespace kforge::llm
