// Requests-per-minute and tokens-per-minute pacing (ManualClock), the servers' x-ratelimit-*
// headers, and adaptive concurrency under a 429 burst and under growing latency.

#include <atomic>
#include <future>

#include "kforge/llm/limits.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

struct Batch {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> done{0};
  Callback cb() {
    return [this](Result<ChatResponse> r) {
      (r.ok() ? ok : failed)++;
      done++;
    };
  }
};

TEST_F(LlmTest, RequestsPerMinuteArePaced) {
  start_server(json::object());
  ManualClock clock;
  cfg.requests_per_minute = 60;  // 1 per second after a burst of 6
  auto c = make_client(&clock);
  Batch b;
  for (int i = 0; i < 10; ++i) c->submit(request("q" + std::to_string(i)), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 6; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(requests(), 6);
  EXPECT_EQ(c->stats().next_wakeup_ms, 1000);
  clock.advance(std::chrono::milliseconds(1000));
  ASSERT_TRUE(eventually([&] { return b.done == 7; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(requests(), 7);
  clock.advance(std::chrono::seconds(3));
  ASSERT_TRUE(eventually([&] { return b.done == 10; }));
  EXPECT_EQ(b.ok, 10);
}

// A request whose pacing estimate is exactly 200 tokens (prompt estimate + max_tokens 100).
ChatRequest sized_request(int i) {
  ChatRequest r = request("");
  std::string text = "q" + std::to_string(i) + " ";
  std::size_t system_chars = r.messages[0].content.size();
  while (estimate_prompt_tokens(system_chars + text.size(), 2) < 100) text += "x";
  r.messages[1].content = text;
  r.max_tokens = 100;
  EXPECT_EQ(estimate_prompt_tokens(system_chars + text.size(), 2) + 100, 200);
  return r;
}

TEST_F(LlmTest, TokensPerMinuteArePacedOnTheEstimate) {
  // Usage as estimated: 6000 tokens/min = 100/s, capacity 600 = three 200-token requests.
  start_server({{"defaults", {{"usage", {{"prompt_tokens", 100}, {"completion_tokens", 100}}}}}});
  ManualClock clock;
  cfg.tokens_per_minute = 6000;
  auto c = make_client(&clock);
  Batch b;
  for (int i = 0; i < 5; ++i) c->submit(sized_request(i), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(requests(), 3);
  EXPECT_EQ(c->stats().next_wakeup_ms, 2000);
  clock.advance(std::chrono::seconds(2));
  ASSERT_TRUE(eventually([&] { return b.done == 4; }));
  clock.advance(std::chrono::seconds(2));
  ASSERT_TRUE(eventually([&] { return b.done == 5; }));
  EXPECT_EQ(b.ok, 5);
}

TEST_F(LlmTest, TokensPerMinuteAreCorrectedWithReportedUsage) {
  // The server reports 20 tokens per call: after the first three, the over-estimate flows back
  // and the rest go out with no time passing.
  start_server({{"defaults", {{"usage", {{"prompt_tokens", 10}, {"completion_tokens", 10}}}}}});
  ManualClock clock;
  cfg.tokens_per_minute = 6000;
  auto c = make_client(&clock);
  Batch b;
  for (int i = 0; i < 10; ++i) c->submit(sized_request(i), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 10; }));
  EXPECT_EQ(b.ok, 10);
  EXPECT_EQ(c->stats().prompt_tokens, 100u);
}

TEST_F(LlmTest, RateLimitHeadersHoldBackTheNextRequest) {
  start_server({{"rules", json::array({{{"times", 1},
                                        {"headers",
                                         {{"x-ratelimit-remaining-requests", "0"},
                                          {"x-ratelimit-reset-requests", "30s"},
                                          {"x-ratelimit-remaining-tokens", "90000"},
                                          {"x-ratelimit-reset-tokens", "1s"}}}}})}});
  ManualClock clock;
  auto c = make_client(&clock);
  ASSERT_TRUE(c->call(request("first")).ok());
  Batch b;
  c->submit(request("second"), b.cb());
  ASSERT_TRUE(eventually([&] { return c->stats().waiting == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(requests(), 1);
  EXPECT_EQ(c->stats().next_wakeup_ms, 30'000);
  clock.advance(std::chrono::seconds(30));
  ASSERT_TRUE(eventually([&] { return b.done == 1; }));
  EXPECT_EQ(b.ok, 1);
}

TEST_F(LlmTest, A429BurstCutsConcurrencyWhichGrowsBackAdditively) {
  // The first 16 requests are refused with 429: every one halves the limit (no cooldown) down
  // to 1; the retries then succeed and the limit climbs back one slot per window.
  start_server({{"rules", json::array({{{"times", 16}, {"status", 429}, {"retry_after", 0}}})},
                {"defaults", {{"latency_ms", 20}}}});
  cfg.max_in_flight = 16;
  cfg.min_in_flight = 1;
  cfg.adaptive_cooldown_ms = 0;
  cfg.latency_factor = 1000;  // only the 429s count here, not a slow moment of a loaded machine
  cfg.max_attempts = 10;
  cfg.pace = false;  // the concurrency cut on 429 (with pacing, the pacer takes the 429s)
  cfg.initial_in_flight = 16;
  auto c = make_client();
  Batch b;
  for (int i = 0; i < 16; ++i) c->submit(request("a" + std::to_string(i)), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 16; }, std::chrono::seconds(30)));
  EXPECT_EQ(b.ok, 16);
  Stats st = c->stats();
  EXPECT_GE(st.concurrency_cuts, 4u);  // 16 -> 8 -> 4 -> 2 -> 1
  int after_burst = st.concurrency_limit;
  EXPECT_LT(after_burst, 8);
  // With the cut limit, the server sees at most that many at once (plus the growth meanwhile).
  server->reset_stats();
  Batch b2;
  for (int i = 0; i < 16; ++i) c->submit(request("b" + std::to_string(i)), b2.cb());
  ASSERT_TRUE(eventually([&] { return b2.done == 16; }, std::chrono::seconds(30)));
  EXPECT_LE(server->stats()["max_in_flight"].get<int>(), after_burst + 3);
  EXPECT_GT(c->stats().concurrency_limit, after_burst);
  // Enough successes bring it all the way back.
  Batch b3;
  for (int i = 0; i < 200; ++i) c->submit(request("c" + std::to_string(i)), b3.cb());
  ASSERT_TRUE(eventually([&] { return b3.done == 200; }, std::chrono::seconds(60)));
  EXPECT_EQ(c->stats().concurrency_limit, 16);
}

TEST_F(LlmTest, GrowingLatencyCutsConcurrencyWithoutAny429) {
  // A self-hosted server that slows down without ever refusing: 20 ms for the first 40
  // requests, then 800 ms.
  start_server({{"rules", json::array({{{"skip", 40}, {"latency_ms", 800}}})},
                {"defaults", {{"latency_ms", 20}}}});
  cfg.max_in_flight = 8;
  cfg.adaptive_cooldown_ms = 500;
  auto c = make_client();
  Batch b;
  for (int i = 0; i < 40; ++i) c->submit(request("fast" + std::to_string(i)), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 40; }, std::chrono::seconds(30)));
  std::uint64_t cuts_before = c->stats().concurrency_cuts;
  for (int i = 0; i < 16; ++i) c->submit(request("slow" + std::to_string(i)), b.cb());
  ASSERT_TRUE(eventually([&] { return b.done == 56; }, std::chrono::seconds(30)));
  EXPECT_EQ(b.ok, 56);
  Stats st = c->stats();
  EXPECT_GT(st.concurrency_cuts, cuts_before);
  EXPECT_LT(st.concurrency_limit, 8);
  EXPECT_EQ(st.failures_by_kind.size(), 0u);
}

}  // namespace
}  // namespace kforge::llm::test
