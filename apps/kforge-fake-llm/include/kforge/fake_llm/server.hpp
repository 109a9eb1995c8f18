#pragma once
// FakeLlmServer: an OpenAI-compatible Chat Completions server that misbehaves on request, for
// tests and for trying kforge without a provider. It is a test tool, not a provider.
//
// It answers POST /v1/chat/completions, POST /chat/completions and Azure's
// POST /openai/deployments/{name}/chat/completions, following a script (docs/FAKE_LLM.md):
// ordered rules that match requests by content and answer with latency, HTTP errors (429 with
// Retry-After in seconds or as an HTTP date, 500, 503, ...), faults (hang, connection reset,
// truncated body, malformed JSON, wrong content type) or replies filled from the request.
// It counts every request by the SHA-256 of its body, so a test can prove no duplicate was sent.
//
// Control endpoints: GET /_stats (counters as JSON), POST /_reset (zero them), PUT /_script
// (replace the script; body: JSON), GET /_health.
//
// Threads: every public method is thread-safe. Requests are served by a pool of threads, so
// slow and hanging answers do not hold up the others.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::fake_llm {

// Reads a script file (YAML or JSON). Errors name the file.
Result<nlohmann::json> load_script(const std::filesystem::path& file);
// Checks a script; errors name the rule index and key, e.g. "rules[2].fault: 'boom' is not one
// of hang, reset, truncate, malformed, wrong_content_type, html, empty".
Status check_script(const nlohmann::json& script);

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;       // 0: any free port
  int threads = 128;  // request threads; a hanging request holds one
};

class FakeLlmServer {
 public:
  // Binds and starts serving on a background thread.
  static Result<std::unique_ptr<FakeLlmServer>> start(const nlohmann::json& script,
                                                      ServerOptions opts = {});
  ~FakeLlmServer();  // stop()
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const;
  // "http://HOST:PORT/v1", the base_url for an OpenAI-compatible client.
  std::string base_url() const;

  Status set_script(const nlohmann::json& script);  // also resets the rule counters
  // What GET /_stats returns:
  //   {"requests": N, "answered": N (200s with a completion), "connections": N (distinct client
  //    TCP connections: address and port), "in_flight": N,
  //    "max_in_flight": N, "by_hash": {sha: N}, "answered_by_hash": {sha: N},
  //    "max_per_hash": N, "by_rule": {name: N}, "by_status": {"200": N, ...},
  //    "last_request": {"path": ..., "auth": "bearer"|"api-key"|"none", "key_ok": bool,
  //                     "body": {...}}}
  nlohmann::json stats() const;
  // Requests being answered right now (cheaper than stats()).
  int in_flight() const;
  void reset_stats();
  // Stops serving; hanging requests are released. Idempotent.
  void stop();

  class Impl;

 private:
  explicit FakeLlmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::fake_llm
