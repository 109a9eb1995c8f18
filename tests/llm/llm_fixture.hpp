#pragma once
// Shared set-up for the LLM client tests: a real kforge-fake-llm server on loopback (in-process),
// a client pointed at it with short backoffs, and a database in a temp dir.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <thread>

#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/llm/client.hpp"
#include "testutil.hpp"

namespace kforge::llm::test {

using nlohmann::json;

inline constexpr const char* kKeyVar = "KFORGE_TEST_LLM_KEY";
inline constexpr const char* kKey = "sk-kforge-test-SECRET-7f3a9c21e4";

inline EnvLookup key_env(std::string key = kKey) {
  return [key](const std::string& name) -> std::optional<std::string> {
    if (name == kKeyVar) return key;
    return std::nullopt;
  };
}

inline LlmConfig test_config(const std::string& base_url) {
  LlmConfig c;
  c.base_url = base_url;
  c.model = "fake-model";
  c.api_key_env = kKeyVar;
  c.temperature = 0.0;
  c.max_tokens = 256;
  c.max_attempts = 4;
  c.backoff_base_ms = 1;
  c.backoff_max_ms = 10;
  c.connect_timeout_ms = 5000;
  c.request_timeout_ms = 15'000;
  c.max_in_flight = 8;
  c.prices["fake-model"] = Price{1.0, 2.0, std::nullopt, std::nullopt};
  return c;
}

inline ChatRequest request(const std::string& text, bool expect_json = true) {
  ChatRequest r;
  r.messages = {{"system", "You answer in JSON."}, {"user", text}};
  r.expect_json = expect_json;
  return r;
}

// Polls pred in real time (the work happens on other threads) for up to `limit`.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// f.get(), waiting at most `limit`: a callback that never runs fails the test here, in seconds,
// instead of hanging to ctest's timeout (the exception fails the test with this message).
template <class T>
T get_within(std::future<T>& f, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  if (f.wait_for(limit) != std::future_status::ready)
    throw std::runtime_error("no result within " + std::to_string(limit.count()) +
                             " ms: the callback never ran");
  return f.get();
}
template <class T>
T get_within(std::future<T>&& f, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  return get_within(f, limit);
}

class LlmTest : public ::testing::Test {
 protected:
  void start_server(const json& script) {
    auto s = fake_llm::FakeLlmServer::start(script);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server = std::move(s).value();
    cfg = test_config(server->base_url());
  }

  std::unique_ptr<Client> make_client(Clock* clock = nullptr, bool with_db = true) {
    ClientOptions o;
    o.clock = clock;
    o.env = key_env();
    if (with_db) o.db_path = (dir / "kforge.db").string();
    o.jitter_seed = 42;
    auto c = Client::create(cfg, o);
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // How many times the server received this exact request body.
  int sent(const Client& c, const ChatRequest& r) const {
    json s = server->stats();
    std::string h = sha256_hex(c.request_json(r));
    return s["by_hash"].value(h, 0);
  }
  int requests() const { return server->stats()["requests"].get<int>(); }

  kforge::test::TempDir dir;
  std::unique_ptr<fake_llm::FakeLlmServer> server;
  LlmConfig cfg;
};

}  // namespace kforge::llm::test
