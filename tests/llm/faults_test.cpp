// Every fault the test server can produce: retried when a retry may help, reported at once when
// it cannot; Retry-After honoured beyond 60 s up to the cap; timeouts free the slot.

#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

struct Fault {
  const char* name;
  json rule;                  // applied once, then the server answers normally
  const char* kind_on_first;  // what the first attempt's error is classified as (for the log)
};

class TransientFault : public LlmTest, public ::testing::WithParamInterface<Fault> {};

TEST_P(TransientFault, IsRetriedAndAnsweredOnce) {
  json rule = GetParam().rule;
  rule["times"] = 1;
  start_server({{"rules", json::array({rule})}, {"defaults", {{"reply", R"({"ok": 1})"}}}});
  cfg.request_timeout_ms = 1500;  // for the hang
  auto c = make_client();
  ChatRequest r = request("question");
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << GetParam().name << ": " << res.error().message;
  EXPECT_EQ(res->attempts, 2) << GetParam().name;
  EXPECT_EQ(res->parsed["ok"], 1);
  EXPECT_EQ(sent(*c, r), 2) << GetParam().name;
  json s = server->stats();
  EXPECT_EQ(s["answered_by_hash"].value(sha256_hex(c->request_json(r)), 0), 1);
  EXPECT_EQ(c->stats().retries, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, TransientFault,
    ::testing::Values(Fault{"http500", {{"status", 500}}, "http"},
                      Fault{"http502", {{"status", 502}}, "http"},
                      Fault{"http503", {{"status", 503}}, "http"},
                      Fault{"http408", {{"status", 408}}, "http"},
                      Fault{"http409", {{"status", 409}}, "http"},
                      Fault{"http429", {{"status", 429}, {"retry_after", 0}}, "rate_limit"},
                      Fault{"reset", {{"fault", "reset"}}, "connect"},
                      Fault{"truncate", {{"fault", "truncate"}}, "protocol"},
                      Fault{"malformed", {{"fault", "malformed"}}, "protocol"},
                      Fault{"html", {{"fault", "html"}}, "protocol"},
                      Fault{"empty", {{"fault", "empty"}}, "protocol"},
                      Fault{"hang", {{"fault", "hang"}, {"hang_ms", 20000}}, "timeout"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(LlmTest, WrongContentTypeIsAcceptedWhenTheBodyIsAChatCompletion) {
  start_server({{"rules", json::array({{{"fault", "wrong_content_type"}}})}});
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->attempts, 1);
}

class PermanentStatus : public LlmTest, public ::testing::WithParamInterface<int> {};

TEST_P(PermanentStatus, FailsAtOnceWithTheProvidersMessage) {
  int status = GetParam();
  start_server({{"rules", json::array({{{"status", status},
                                        {"message", "model 'x' does not exist, sorry"}}})}});
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  const Error& e = res.error();
  // 401/403 and an unknown model are run-level (the run pauses), the rest fail the request.
  EXPECT_EQ(e.kind, status == 401 || status == 403 ? "auth" : status == 404 ? "not_found" : "http");
  EXPECT_FALSE(e.is_transient());
  EXPECT_NE(e.message.find("HTTP " + std::to_string(status)), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("model 'x' does not exist, sorry"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(server->base_url() + "/chat/completions"), std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("(attempt 1; not retried"), std::string::npos) << e.message;
  EXPECT_EQ(requests(), 1);
}

INSTANTIATE_TEST_SUITE_P(Statuses, PermanentStatus, ::testing::Values(400, 401, 403, 404, 422));

TEST_F(LlmTest, WrongKeyIs401FromTheServer) {
  start_server({{"require_key", "sk-the-right-one"}});
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("HTTP 401"), std::string::npos);
  EXPECT_NE(res.error().message.find("Incorrect API key provided"), std::string::npos);
  EXPECT_EQ(server->stats()["last_request"]["key_ok"], false);
}

TEST_F(LlmTest, RetriesExhaustedNameStatusAttemptAndTransience) {
  start_server({{"defaults", {{"status", 503}, {"message", "overloaded"}}}});
  cfg.max_attempts = 3;
  auto c = make_client();
  ChatRequest r = request("q");
  auto res = c->call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "http");
  EXPECT_TRUE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("HTTP 503 (attempt 3/3): overloaded"), std::string::npos)
      << res.error().message;
  EXPECT_EQ(sent(*c, r), 3);
}

TEST_F(LlmTest, FinishReasonLengthIsItsOwnFailureAndNeverTheSameRequestAgain) {
  start_server({{"defaults", {{"finish_reason", "length"}, {"reply", "{\"a\": "}}}});
  cfg.truncated_max_tokens = 0;  // no larger retry (answers_test.cpp covers it)
  auto c = make_client();
  ChatRequest r = request("q");
  auto res = c->call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "truncated");
  EXPECT_FALSE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("max_tokens"), std::string::npos);
  EXPECT_EQ(sent(*c, r), 1);
}

TEST_F(LlmTest, UnextractableReplyReportsWhy) {
  start_server({{"defaults", {{"reply", "I'd rather not answer in JSON."}}}});
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "parse");
  EXPECT_NE(res.error().message.find("no JSON object in the reply"), std::string::npos)
      << res.error().message;
  EXPECT_EQ(requests(), 1);
}

TEST_F(LlmTest, RequestTimeoutFreesTheSlotFromAServerThatNeverAnswers) {
  start_server({{"defaults", {{"fault", "hang"}, {"hang_ms", 60000}}}});
  cfg.request_timeout_ms = 400;
  cfg.max_attempts = 2;
  cfg.max_in_flight = 1;
  auto c = make_client();
  auto t0 = std::chrono::steady_clock::now();
  auto res = c->call(request("q"));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "timeout");
  EXPECT_TRUE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("attempt 2/2"), std::string::npos) << res.error().message;
  EXPECT_LT(took, std::chrono::seconds(10));  // two 0.4 s attempts, not a minute
  EXPECT_EQ(requests(), 2);
}

TEST_F(LlmTest, ConnectionRefusedIsRetriedThenReportedAsConnect) {
  start_server(json::object());
  int port = server->port();
  server->stop();
  cfg.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  cfg.max_attempts = 3;
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "connect");
  EXPECT_TRUE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  EXPECT_EQ(c->stats().http_attempts, 3u);
}

// Retry-After of two minutes with a ManualClock: the retry is scheduled 120 s out and happens
// only when the clock gets there.
TEST_F(LlmTest, RetryAfterAboveSixtySecondsIsHonoured) {
  start_server({{"rules", json::array({{{"times", 1}, {"status", 429}, {"retry_after", 120}}})}});
  ManualClock clock;
  cfg.retry_after_cap_ms = 600'000;
  auto c = make_client(&clock);
  ChatRequest r = request("q");
  auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(r, [p](Result<ChatResponse> x) { p->set_value(std::move(x)); });
  ASSERT_TRUE(eventually([&] { return c->stats().waiting == 1 && requests() == 1; }));
  EXPECT_EQ(c->stats().next_wakeup_ms, 120'000);
  clock.advance(std::chrono::seconds(119));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(requests(), 1);  // not a moment early
  EXPECT_LE(c->stats().next_wakeup_ms, 1000);
  clock.advance(std::chrono::seconds(1));
  auto f = p->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  auto res = get_within(f);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->attempts, 2);
  EXPECT_EQ(sent(*c, r), 2);
}

TEST_F(LlmTest, RetryAfterAsHttpDate) {
  start_server(
      {{"rules", json::array({{{"times", 1}, {"status", 503}, {"retry_after_date", 90}}})}});
  ManualClock clock(system_clock().wall_ms());  // the server dates from the real clock
  auto c = make_client(&clock);
  auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(request("q"), [p](Result<ChatResponse> x) { p->set_value(std::move(x)); });
  ASSERT_TRUE(eventually([&] { return c->stats().waiting == 1; }));
  std::int64_t wait = c->stats().next_wakeup_ms;
  EXPECT_GE(wait, 85'000);  // an HTTP date has 1 s resolution; allow for a slow machine
  EXPECT_LE(wait, 91'000);
  clock.advance(std::chrono::milliseconds(wait));
  auto res = get_within(p->get_future());
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->attempts, 2);
}

TEST_F(LlmTest, RetryAfterBeyondTheCapFailsAsTransient) {
  start_server({{"defaults", {{"status", 429}, {"retry_after", 3600}}}});
  ManualClock clock;
  cfg.retry_after_cap_ms = 300'000;
  auto c = make_client(&clock);
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "rate_limit");
  EXPECT_TRUE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("retry after 3600 s, beyond the cap of 300 s"),
            std::string::npos)
      << res.error().message;
  EXPECT_EQ(requests(), 1);
}

TEST_F(LlmTest, TotalDeadlineStopsRetries) {
  start_server({{"defaults", {{"status", 503}, {"retry_after", 10}}}});
  ManualClock clock;
  cfg.total_deadline_ms = 25'000;
  cfg.max_attempts = 10;
  auto c = make_client(&clock);
  auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(request("q"), [p](Result<ChatResponse> x) { p->set_value(std::move(x)); });
  auto f = p->get_future();
  for (int i = 0; i < 2; ++i) {
    // The client has seen answer i + 1 and waits for its retry (the server counts a request
    // when it arrives, before the client has its answer: advancing the clock then would make
    // the client judge the retry at the later time).
    ASSERT_TRUE(eventually([&] {
      auto st = c->stats();
      return requests() == i + 1 && st.responses_by_status[503] == static_cast<unsigned>(i + 1) &&
             st.waiting == 1;
    }));
    clock.advance(std::chrono::seconds(10));
  }
  ASSERT_EQ(f.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  auto res = get_within(f);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "deadline");
  EXPECT_TRUE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("total_deadline_ms"), std::string::npos);
  EXPECT_EQ(requests(), 3);  // at 0 s, 10 s, 20 s; the one at 30 s would pass 25 s
}

}  // namespace
}  // namespace kforge::llm::test
