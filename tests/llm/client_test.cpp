// The client against a well-behaved server: protocol, identity, limits on concurrency,
// coalescing, reload and shutdown.

#include <atomic>
#include <future>

#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

TEST_F(LlmTest, AnswersAndReportsUsageCostAndIdentity) {
  start_server({{"defaults",
                 {{"reply", R"({"answer": 42})"},
                  {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 500}}}}}});
  auto c = make_client();
  ASSERT_TRUE(c);
  ChatRequest r = request("What is the answer?");
  r.label = "sample=k1 stage=analyze";
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed["answer"], 42);
  EXPECT_EQ(res->content, R"({"answer": 42})");
  EXPECT_EQ(res->finish_reason, "stop");
  EXPECT_EQ(res->http_status, 200);
  EXPECT_EQ(res->attempts, 1);
  EXPECT_FALSE(res->from_store);
  EXPECT_EQ(res->prompt_tokens, 1000);
  EXPECT_EQ(res->completion_tokens, 500);
  EXPECT_DOUBLE_EQ(res->cost_usd, (1000 * 1.0 + 500 * 2.0) / 1e6);
  EXPECT_EQ(res->request_sha256, c->request_sha256(r));
  EXPECT_EQ(c->url(), server->base_url() + "/chat/completions");

  json last = server->stats()["last_request"];
  EXPECT_EQ(last["path"], "/v1/chat/completions");
  EXPECT_EQ(last["auth"], "bearer");
  EXPECT_EQ(last["body"]["model"], "fake-model");
  EXPECT_EQ(last["body"]["temperature"], 0.0);
  EXPECT_EQ(last["body"]["max_tokens"], 256);
  EXPECT_EQ(last["body"]["response_format"]["type"], "json_object");
  EXPECT_EQ(last["body"]["messages"][1]["content"], "What is the answer?");

  Stats st = c->stats();
  EXPECT_EQ(st.succeeded, 1u);
  EXPECT_EQ(st.http_attempts, 1u);
  EXPECT_EQ(st.prompt_tokens, 1000u);
  EXPECT_EQ(st.responses_by_status[200], 1u);
  std::uint64_t in_hist = 0;
  for (auto n : st.latency_counts) in_hist += n;
  EXPECT_EQ(in_hist, 1u);
}

TEST_F(LlmTest, IdentityCoversWhatChangesTheAnswerAndNothingElse) {
  start_server(json::object());
  auto c = make_client(nullptr, false);
  ASSERT_TRUE(c);
  ChatRequest a = request("x");
  ChatRequest b = a;
  b.label = "another label";
  EXPECT_EQ(c->request_sha256(a), c->request_sha256(b));
  b.messages[1].content = "y";
  EXPECT_NE(c->request_sha256(a), c->request_sha256(b));
  b = a;
  b.temperature = 0.7;
  EXPECT_NE(c->request_sha256(a), c->request_sha256(b));
  b = a;
  b.max_tokens = 10;
  EXPECT_NE(c->request_sha256(a), c->request_sha256(b));
  b = a;
  b.expect_json = false;  // no response_format sent
  EXPECT_NE(c->request_sha256(a), c->request_sha256(b));
  // Another model or endpoint is another identity.
  cfg.model = "other-model";
  auto other = make_client(nullptr, false);
  EXPECT_NE(c->request_sha256(a), other->request_sha256(a));
  EXPECT_EQ(c->request_sha256(a).size(), 64u);
}

TEST_F(LlmTest, ABodyTheCallerBuiltIsSentAndIdentifiedWithoutASecondSerialization) {
  // The scheduler builds each request's body (request_json) to hold it for the stage output and
  // hands it over in ChatRequest::body: the client sends those bytes and hashes them, rather than
  // serializing the request again. Here the body is another request's, to see which is sent (a
  // caller must give request_json(req) itself).
  start_server({{"defaults", {{"reply", R"({"answer": 1})"}}}});
  auto c = make_client(nullptr, false);
  ASSERT_TRUE(c);
  ChatRequest asked = request("x");
  ChatRequest built = request("y");
  asked.body = c->request_json(built);
  auto res = c->call(asked);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(server->stats()["last_request"]["body"]["messages"][1]["content"], "y");
  EXPECT_EQ(res->request_sha256, c->request_sha256(built));
  EXPECT_EQ(res->request_sha256, c->request_sha256(asked, c->request_json(built)));
  // Without one, the client builds it.
  auto again = c->call(request("x"));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(server->stats()["last_request"]["body"]["messages"][1]["content"], "x");
  EXPECT_EQ(again->request_sha256, c->request_sha256(request("x")));
}

TEST_F(LlmTest, InvalidUtf8InAPromptIsSentReplaced) {
  start_server({{"defaults", {{"reply_json", {{"echo", "{{user}}"}}}}}});
  auto c = make_client();
  ChatRequest r = request("tl.load(x)  # caf\xe9 \xff");
  EXPECT_EQ(c->request_sha256(r), c->request_sha256(r));
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed["echo"], "tl.load(x)  # caf\xef\xbf\xbd \xef\xbf\xbd");
}

TEST_F(LlmTest, JsonSchemaIsSentAndEnforced) {
  json schema = {
      {"type", "object"},
      {"required", {"kernel_wrapper", "unitest_code"}},
      {"properties",
       {{"kernel_wrapper", {{"type", "string"}}}, {"unitest_code", {{"type", "string"}}}}}};
  start_server(
      {{"defaults",
        {{"reply_json", {{"kernel_wrapper", "def w(): pass"}, {"unitest_code", "assert 1"}}},
         {"wrap", "fences"}}}});
  cfg.response_format = ResponseFormat::json_schema;
  auto c = make_client();
  ChatRequest r = request("generate");
  r.response_schema = schema;
  r.schema_name = "generation";
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed["unitest_code"], "assert 1");
  json sent_format = server->stats()["last_request"]["body"]["response_format"];
  EXPECT_EQ(sent_format["type"], "json_schema");
  EXPECT_EQ(sent_format["json_schema"]["name"], "generation");
  EXPECT_EQ(sent_format["json_schema"]["schema"], schema);
}

TEST_F(LlmTest, PlainTextWhenNoJsonExpected) {
  start_server({{"defaults", {{"reply", "just words"}}}});
  auto c = make_client();
  auto res = c->call(request("hi", false));
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->content, "just words");
  EXPECT_TRUE(res->parsed.is_null());
  EXPECT_FALSE(server->stats()["last_request"]["body"].contains("response_format"));
}

TEST_F(LlmTest, AzureDeploymentPathApiVersionAndKeyHeader) {
  start_server({{"require_key", kKey}});
  cfg.provider = Provider::azure;
  cfg.base_url = "http://127.0.0.1:" + std::to_string(server->port());
  cfg.azure_deployment = "prod-gpt";
  cfg.azure_api_version = "2024-06-01";
  cfg.extra_headers["X-Team"] = "kforge";
  auto c = make_client();
  auto res = c->call(request("hello"));
  ASSERT_TRUE(res.ok()) << res.error().message;
  json last = server->stats()["last_request"];
  EXPECT_EQ(last["path"], "/openai/deployments/prod-gpt/chat/completions");
  EXPECT_EQ(last["api_version"], "2024-06-01");
  EXPECT_EQ(last["auth"], "api-key");
  EXPECT_EQ(last["key_ok"], true);
  EXPECT_EQ(last["headers"]["x-team"], "kforge");
  EXPECT_FALSE(last["body"].contains("model"));
}

TEST_F(LlmTest, ManyInFlightOverKeptAliveConnectionsWithinTheLimit) {
  start_server({{"defaults", {{"latency_ms", 100}}}});
  cfg.max_in_flight = 6;
  cfg.adaptive = false;
  auto c = make_client();
  std::atomic<int> ok{0};
  std::promise<void> all;
  constexpr int kN = 30;
  std::atomic<int> left{kN};
  for (int i = 0; i < kN; ++i) {
    c->submit(request("q" + std::to_string(i)), [&](Result<ChatResponse> r) {
      if (r.ok()) ++ok;
      if (--left == 0) all.set_value();
    });
  }
  ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(ok.load(), kN);
  json s = server->stats();
  EXPECT_LE(s["max_in_flight"].get<int>(), 6);
  EXPECT_GE(s["max_in_flight"].get<int>(), 3);  // they really ran side by side
  EXPECT_EQ(s["max_per_hash"], 1);
  // Kept alive: 30 requests over at most one connection per slot, not one each.
  EXPECT_GE(s["connections"].get<int>(), 1);
  EXPECT_LE(s["connections"].get<int>(), 6) << s.dump();
}

TEST_F(LlmTest, ReloadLimitsTakesEffectWithoutRestart) {
  start_server({{"defaults", {{"latency_ms", 60}}}});
  cfg.max_in_flight = 8;
  cfg.min_in_flight = 1;
  cfg.adaptive = false;
  auto c = make_client();
  LlmConfig smaller = cfg;
  smaller.max_in_flight = 2;
  c->reload_limits(smaller);
  ASSERT_TRUE(eventually([&] { return c->stats().concurrency_limit == 2; }));
  std::vector<std::future<Result<ChatResponse>>> fs;
  std::vector<std::shared_ptr<std::promise<Result<ChatResponse>>>> ps;
  for (int i = 0; i < 10; ++i) {
    auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
    fs.push_back(p->get_future());
    c->submit(request("r" + std::to_string(i)),
              [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  }
  for (auto& f : fs) EXPECT_TRUE(get_within(f).ok());
  EXPECT_LE(server->stats()["max_in_flight"].get<int>(), 2);
}

TEST_F(LlmTest, IdenticalRequestsInFlightAreSentOnce) {
  start_server({{"defaults", {{"latency_ms", 200}}}});
  auto c = make_client();
  ChatRequest r = request("same question");
  auto p1 = std::make_shared<std::promise<Result<ChatResponse>>>();
  auto p2 = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(r, [p1](Result<ChatResponse> x) { p1->set_value(std::move(x)); });
  c->submit(r, [p2](Result<ChatResponse> x) { p2->set_value(std::move(x)); });
  auto a = get_within(p1->get_future());
  auto b = get_within(p2->get_future());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->content, b->content);
  EXPECT_EQ(sent(*c, r), 1);
  EXPECT_EQ(c->stats().coalesced, 1u);
  EXPECT_EQ(c->stats().succeeded, 2u);
}

TEST_F(LlmTest, ShutdownCancelsWaitingWorkAndRefusesNewWork) {
  start_server({{"defaults", {{"status", 503}, {"retry_after", 50}}}});
  cfg.retry_after_cap_ms = 600'000;
  auto c = make_client();
  auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(request("q"), [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  ASSERT_TRUE(eventually([&] { return requests() == 1 && c->stats().waiting == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  c->shutdown(std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  auto r = get_within(p->get_future());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "cancelled");
  EXPECT_TRUE(r.error().is_transient());
  bool called = false;
  c->submit(request("late"), [&](Result<ChatResponse> x) {
    called = true;
    EXPECT_EQ(x.error().kind, "cancelled");
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(requests(), 1);
}

TEST_F(LlmTest, ShutdownLetsInFlightWorkFinishWithinGrace) {
  start_server({{"defaults", {{"latency_ms", 300}}}});
  auto c = make_client();
  auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
  c->submit(request("q"), [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  ASSERT_TRUE(eventually([&] { return server->stats()["in_flight"] == 1; }));
  c->shutdown(std::chrono::seconds(10));
  auto r = get_within(p->get_future());
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST_F(LlmTest, CallbackMaySubmitMore) {
  start_server(json::object());
  auto c = make_client();
  auto done = std::make_shared<std::promise<Result<ChatResponse>>>();
  Client* raw = c.get();
  c->submit(request("first"), [raw, done](Result<ChatResponse> r) {
    // No ASSERT here: returning early would leave `done` unfulfilled.
    if (!r.ok()) {
      done->set_value(std::move(r));
      return;
    }
    auto again = raw->call(request("would deadlock"));
    EXPECT_EQ(again.error().kind, "usage");
    raw->submit(request("second"),
                [done](Result<ChatResponse> r2) { done->set_value(std::move(r2)); });
  });
  EXPECT_TRUE(get_within(done->get_future()).ok());
}

}  // namespace
}  // namespace kforge::llm::test
