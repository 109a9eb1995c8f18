// The client against a provider's real behaviours, served by kforge-fake-llm: a limit_req-style
// rate limiter (pacing converges), a bad key (slow start, halt), identity beyond the bytes,
// gzip answers, the prompt-size guard, long and short Retry-After, and draining.

#include <atomic>
#include <future>

#include "kforge/llm/limits.hpp"
#include "kforge/store/db.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

struct Counter {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> done{0};
  std::mutex mu;
  std::map<std::string, int> kinds;
  Callback cb() {
    return [this](Result<ChatResponse> r) {
      if (r.ok()) {
        ++ok;
      } else {
        std::lock_guard lk(mu);
        ++kinds[r.error().kind];
        ++failed;
      }
      ++done;
    };
  }
};

int status_count(const json& stats, const std::string& status) {
  return stats["by_status"].value(status, 0);
}

// The goal of the pacing: against nginx-style limit_req of 20 requests/s with a burst of 5,
// after the first 5 s at least 18 successful requests/s and at most 5% of requests refused.
TEST_F(LlmTest, PacingConvergesToALimitReqBucket) {
  start_server({{"limit", {{"rate", 20}, {"burst", 5}, {"retry_after", 1}}}});
  cfg.max_in_flight = 64;
  cfg.max_attempts = 50;
  cfg.backoff_base_ms = 100;
  cfg.backoff_max_ms = 1000;
  auto c = make_client(nullptr, /*with_db=*/false);
  Counter n;
  // Always a backlog: keep 200 requests queued in the client.
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  auto top_up = [&] {
    while (next - n.done < 200) c->submit(request("p" + std::to_string(next++)), n.cb());
  };
  top_up();
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
    top_up();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server->reset_stats();
  auto t1 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t1 < std::chrono::seconds(6)) {
    top_up();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  json s = server->stats();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  int ok = status_count(s, "200");
  int limited = status_count(s, "429");
  double per_s = ok / secs;
  double refused = static_cast<double>(limited) / std::max(1, ok + limited);
  std::printf("paced: %.1f ok/s, %.1f%% refused (%d ok, %d 429 in %.1f s), rate %.2f/s\n", per_s,
              100 * refused, ok, limited, secs, c->stats().pace_per_s);
  EXPECT_GE(per_s, 18.0);
  EXPECT_LE(refused, 0.05);
  EXPECT_GT(c->stats().pace_per_s, 15.0);
  EXPECT_EQ(n.failed.load(), 0);
  stop = true;
  c->shutdown(std::chrono::milliseconds(0));
}

TEST_F(LlmTest, ABadKeyCostsAHandfulOfRequestsAndHaltsTheRest) {
  start_server({{"require_key", "sk-the-right-one"}, {"defaults", {{"latency_ms", 20}}}});
  cfg.max_in_flight = 32;
  cfg.initial_in_flight = 2;
  auto c = make_client();
  Counter n;
  for (int i = 0; i < 32; ++i) c->submit(request("k" + std::to_string(i)), n.cb());
  ASSERT_TRUE(eventually([&] { return n.done == 32; }));
  EXPECT_LE(requests(), 2) << "slow start: a bad key costs the first round only";
  EXPECT_EQ(n.ok, 0);
  EXPECT_EQ(n.kinds["auth"], requests());
  EXPECT_EQ(n.kinds["halted"], 32 - requests());
  EXPECT_EQ(c->stats().halts, static_cast<std::uint64_t>(n.kinds["auth"]));
  EXPECT_EQ(c->stats().concurrency_limit, 2);
  // The message says the request is not retried, and why.
  auto r = c->call(request("one more"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HTTP 401 (attempt 1; not retried"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("Incorrect API key"), std::string::npos);
  EXPECT_FALSE(r.error().is_transient());
}

TEST_F(LlmTest, AnUnknownModelIsRunLevelToo) {
  start_server(
      {{"defaults", {{"status", 404}, {"message", "The model `fake-model` does not exist"}}}});
  auto c = make_client();
  auto r = c->call(request("q"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "not_found");
  EXPECT_EQ(requests(), 1);
}

TEST_F(LlmTest, SlowStartDoublesPerRoundUpToTheMaximum) {
  start_server({{"defaults", {{"latency_ms", 30}}}});
  cfg.max_in_flight = 16;
  cfg.initial_in_flight = 2;
  auto c = make_client(nullptr, false);
  // The client's thread publishes its limits once it runs.
  EXPECT_TRUE(
      eventually([&] { return c->stats().concurrency_limit != 0; }, std::chrono::seconds(5)));
  EXPECT_EQ(c->stats().concurrency_limit, 2);
  Counter n;
  for (int i = 0; i < 120; ++i) c->submit(request("s" + std::to_string(i)), n.cb());
  ASSERT_TRUE(eventually([&] { return n.done == 120; }, std::chrono::seconds(30)));
  EXPECT_EQ(n.ok, 120);
  EXPECT_EQ(c->stats().concurrency_limit, 16);
  EXPECT_GE(server->stats()["max_in_flight"].get<int>(), 8);
}

TEST_F(LlmTest, TheIdentityMakesANewRequestEvenWhenTheBytesAreEqual) {
  start_server(json::object());
  auto c = make_client();
  ChatRequest a = request("same bytes");
  a.asker = "job=1 stage=generate attempt=1";
  ChatRequest b = a;
  b.asker = "job=1 stage=generate attempt=2";
  EXPECT_EQ(c->request_json(a), c->request_json(b));
  EXPECT_NE(c->request_sha256(a), c->request_sha256(b));
  auto ra = c->call(a);
  ASSERT_TRUE(ra.ok());
  EXPECT_FALSE(ra->from_store);
  auto rb = c->call(b);
  ASSERT_TRUE(rb.ok());
  EXPECT_FALSE(rb->from_store) << "a later attempt is asked again, never replayed";
  EXPECT_EQ(requests(), 2);
  // The same attempt again (a crash before its answer was checkpointed) is replayed.
  auto again = c->call(a);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_store);
  EXPECT_EQ(requests(), 2);
  // No identity: the bytes alone, as before.
  ChatRequest plain = request("same bytes");
  EXPECT_EQ(c->request_sha256(plain),
            sha256_hex("kforge.llm.request.v1\n" + c->url() + "\n" + c->request_json(plain)));
}

TEST_F(LlmTest, GzipAnswersAreDecodedAndStoredAsText) {
  start_server({{"defaults", {{"encoding", "gzip"}, {"reply", "{\"answer\": 42}"}}}});
  auto c = make_client();
  auto r = c->call(request("compressed"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->parsed["answer"], 42);
  EXPECT_NE(r->raw_body.find("\"choices\""), std::string::npos);
  std::string accept = server->stats()["last_request"]["headers"].value("accept-encoding", "");
  EXPECT_NE(accept.find("gzip"), std::string::npos) << accept;
  auto db = store::Db::open({.path = (dir / "kforge.db").string()});
  ASSERT_TRUE(db.ok());
  auto s = (*db)->prepare("SELECT kf_text(response_text) FROM llm_calls");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(*s->step());
  EXPECT_EQ(s->text(0).rfind("{", 0), 0u) << "stored as decoded text";
  EXPECT_NE(s->text(0).find("\"answer\\\": 42"), std::string::npos) << s->text(0);
}

TEST_F(LlmTest, APromptAboveMaxPromptTokensIsNotSent) {
  start_server(json::object());
  cfg.max_prompt_tokens = 100;
  auto c = make_client();
  auto r = c->call(request(std::string(2000, 'x')));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "too_large");
  EXPECT_FALSE(r.error().is_transient());
  EXPECT_NE(r.error().message.find("max_prompt_tokens (100)"), std::string::npos);
  EXPECT_EQ(requests(), 0);
  EXPECT_TRUE(c->call(request("small")).ok());
}

TEST_F(LlmTest, ALongRetryAfterPausesEveryRequestAShortOneOnlyTheRefused) {
  // A short Retry-After (1 s) delays the refused request only: the other goes at once.
  start_server({{"rules", json::array({{{"times", 1},
                                        {"match", {{"contains", "first"}}},
                                        {"status", 429},
                                        {"retry_after", 1}}})}});
  cfg.max_in_flight = 1;
  cfg.initial_in_flight = 1;
  auto c = make_client(nullptr, false);
  Counter n;
  c->submit(request("first"), n.cb());
  ASSERT_TRUE(eventually([&] { return requests() == 1; }));
  c->submit(request("second"), n.cb());
  ASSERT_TRUE(eventually([&] { return n.done == 1; }, std::chrono::milliseconds(800)))
      << "the second request waited for the first one's Retry-After";
  ASSERT_TRUE(eventually([&] { return n.done == 2; }));
  EXPECT_EQ(c->stats().paused_until_wall_ms, 0);
  // A long one (a 503 with Retry-After: 90) pauses everything and says until when.
  ASSERT_TRUE(server
                  ->set_script({{"rules", json::array({{{"times", 1},
                                                        {"match", {{"contains", "third"}}},
                                                        {"status", 503},
                                                        {"retry_after", 90}}})}})
                  .ok());
  std::int64_t before = system_clock().wall_ms();
  c->submit(request("third"), n.cb());
  ASSERT_TRUE(eventually([&] { return c->stats().paused_until_wall_ms > 0; }));
  Stats st = c->stats();
  EXPECT_EQ(st.paused_status, 503);
  EXPECT_GE(st.paused_until_wall_ms, before + 89'000);
  int sent_before = requests();  // first (twice), second, third
  EXPECT_EQ(sent_before, 4);
  c->submit(request("fourth"), n.cb());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(requests(), sent_before) << "nothing is sent during the pause";
  c->shutdown(std::chrono::milliseconds(0));
}

TEST_F(LlmTest, DrainStartsNoNewAttemptOrRetry) {
  // Two on the wire (500 ms, then 503: would be retried), eight waiting.
  start_server({{"defaults", {{"latency_ms", 500}, {"status", 503}}}});
  cfg.max_in_flight = 2;
  cfg.initial_in_flight = 2;
  cfg.backoff_base_ms = 1;
  auto c = make_client();
  Counter n;
  for (int i = 0; i < 10; ++i) c->submit(request("d" + std::to_string(i)), n.cb());
  ASSERT_TRUE(eventually([&] { return server->in_flight() == 2; }));
  c->drain();
  ASSERT_TRUE(eventually([&] { return n.done == 10; }));
  EXPECT_EQ(n.kinds["cancelled"], 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(requests(), 2) << "no new attempt and no retry after the drain";
  Counter late;
  c->submit(request("late"), late.cb());
  EXPECT_EQ(late.kinds["cancelled"], 1);
  c->shutdown(std::chrono::seconds(5));
}

TEST_F(LlmTest, RateLimitHeadersGiveThePacerACeiling) {
  // 600 requests a minute, 590 left, full again in 1 s: (600 - 590) / 1 s = 10 requests/s.
  start_server({{"defaults",
                 {{"headers",
                   {{"x-ratelimit-limit-requests", "600"},
                    {"x-ratelimit-remaining-requests", "590"},
                    {"x-ratelimit-reset-requests", "1s"}}}}}});
  auto c = make_client(nullptr, false);
  ASSERT_TRUE(c->call(request("h")).ok());
  ASSERT_TRUE(eventually([&] { return c->stats().pace_per_s > 0; }));
  EXPECT_NEAR(c->stats().pace_per_s, 10.0, 0.01);
}

TEST(Pacer, CutsToTheAcceptedRateAndGrowsAfterQuietPeriods) {
  AdaptivePacer p;
  TimePoint t{};
  EXPECT_FALSE(p.rate().has_value());
  TimePoint at{};
  // 30 accepted over the first second, then a 429.
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(p.try_take(t, &at));
    p.on_accepted(t);
    t += Millis(33);
  }
  ASSERT_TRUE(p.on_limited(t - Millis(1), t));
  ASSERT_TRUE(p.rate().has_value());
  EXPECT_NEAR(*p.rate(), 30 * 0.9, 1.5);
  // A 429 for a request sent before the cut says nothing new.
  EXPECT_FALSE(p.on_limited(t - Millis(5), t + Millis(1)));
  // Evenly spaced at the new rate.
  double r0 = *p.rate();
  EXPECT_FALSE(p.try_take(t, &at));
  EXPECT_NEAR(std::chrono::duration<double>(at - t).count(), 1 / r0, 0.002);
  // Held back and quiet for a second: it grows.
  t += Millis(1001);
  EXPECT_TRUE(p.tick(t));
  EXPECT_GT(*p.rate(), r0);
}

}  // namespace
}  // namespace kforge::llm::test
