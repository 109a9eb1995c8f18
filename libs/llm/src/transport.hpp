#pragma once
// Internal: the client's transport: libcurl's multi handle, a pool of easy handles kept for
// their connections, the request headers, and the transfers that ended.
//
// Threads: the network loop only, except wakeup() (any thread).

#include <curl/curl.h>

#include <optional>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"
#include "kforge/llm/config.hpp"

namespace kforge::llm {

struct Call;

// "Authorization: Bearer KEY", or Azure's "api-key: KEY".
std::string auth_header(Provider provider, const std::string& key);

// A transfer that ended.
struct Transfer {
  Call* call;
  CURLcode rc;
  long status;  // the HTTP status, 0 when none
};

class Transport {
 public:
  Transport() = default;
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // The headers every request carries (auth_header "" when no key), the multi handle and its
  // connection cache size.
  Status open(const LlmConfig& ep, const std::string& auth, long max_connects);
  // Puts c's body on the wire to url (its response, headers and error buffer cleared first).
  void start(Call* c, const std::string& url, long connect_timeout_ms, long request_timeout_ms);
  // The next transfer that ended, its handle back in the pool; nullopt when none is left.
  std::optional<Transfer> next_done();
  // Takes c off the wire (c->easy must be set).
  void abort(Call* c);
  int active() const { return active_; }

  void perform();
  // Waits up to timeout_ms for activity or wakeup().
  void poll(int timeout_ms);
  // When curl wants to be called again (curl_multi_timeout), -1: no wish.
  long curl_timeout_ms();
  void wakeup();

 private:
  CURLM* multi_ = nullptr;
  curl_slist* headers_ = nullptr;
  std::vector<CURL*> easy_pool_;
  int active_ = 0;
};

}  // namespace kforge::llm
