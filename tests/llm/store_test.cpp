// The audit log and replay: every call recorded before its callback, a good response answered
// from the store with no network call, and the API key nowhere in logs or the database.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "kforge/store/db.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

struct Row {
  std::string status;
  std::optional<std::string> error_kind;
  std::int64_t attempts;
  std::int64_t prompt_tokens;
  double cost_usd;
  std::optional<std::string> request_json;
  std::optional<std::string> response_raw;
  std::optional<std::int64_t> replay_of;
  std::optional<std::int64_t> http_status;
};

std::vector<Row> rows(const std::filesystem::path& db_path, const std::string& sha) {
  store::OpenOptions o;
  o.path = db_path.string();
  auto db = store::Db::open(o);
  EXPECT_TRUE(db.ok());
  auto s = (*db)->prepare(
      "SELECT status, error_kind, attempts, prompt_tokens, cost_usd, kf_text(request_text), "
      "kf_text(response_text), "
      "replay_of, http_status FROM llm_calls WHERE request_sha256 = ?1 ORDER BY id");
  EXPECT_TRUE(s.ok());
  s->bind(1, sha);
  std::vector<Row> out;
  while (true) {
    auto r = s->step();
    if (!r.ok() || !*r) break;
    out.push_back({s->text(0), s->opt_text(1), s->int64(2), s->int64(3), s->real(4), s->opt_text(5),
                   s->opt_text(6), s->opt_int64(7), s->opt_int64(8)});
  }
  return out;
}

TEST_F(LlmTest, EveryCallIsRecordedWithItsIdentityAndCost) {
  start_server(
      {{"rules", json::array({{{"times", 1}, {"status", 500}}})},
       {"defaults",
        {{"reply", R"({"v": 1})"}, {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}}});
  auto c = make_client();
  ChatRequest r = request("q");
  r.label = "run=t sample=s1 stage=analyze";
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  auto rs = rows(dir / "kforge.db", res->request_sha256);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, "ok");
  EXPECT_EQ(rs[0].attempts, 2);
  EXPECT_EQ(rs[0].prompt_tokens, 10);
  EXPECT_DOUBLE_EQ(rs[0].cost_usd, (10 * 1.0 + 5 * 2.0) / 1e6);
  EXPECT_EQ(rs[0].request_json, c->request_json(r));
  EXPECT_EQ(rs[0].response_raw, res->raw_body);
  EXPECT_EQ(rs[0].http_status, 200);

  ChatRequest bad = request("will be cut");
  ASSERT_TRUE(server->set_script({{"defaults", {{"finish_reason", "length"}}}}).ok());
  c->reload_limits([&] {
    LlmConfig l = cfg;
    l.truncated_max_tokens = 0;
    return l;
  }());
  auto failed = c->call(bad);
  ASSERT_FALSE(failed.ok());
  auto fr = rows(dir / "kforge.db", c->request_sha256(bad));
  ASSERT_EQ(fr.size(), 1u);
  EXPECT_EQ(fr[0].status, "error");
  EXPECT_EQ(fr[0].error_kind, "truncated");
  ASSERT_TRUE(fr[0].response_raw);
  EXPECT_NE(fr[0].response_raw->find("\"length\""), std::string::npos);  // kept for debugging
}

TEST_F(LlmTest, AGoodResponseIsReplayedFromTheStoreWithNoNetworkCall) {
  start_server({{"defaults", {{"reply_json", {{"n", "{{n}}"}}}}}});
  ChatRequest r = request("expensive question");
  std::string first_content;
  {
    auto c = make_client();
    auto res = c->call(r);
    ASSERT_TRUE(res.ok()) << res.error().message;
    first_content = res->content;
  }
  // A new process would build a new client on the same database.
  auto c = make_client();
  auto again = c->call(r);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->from_store);
  EXPECT_EQ(again->attempts, 0);
  EXPECT_EQ(again->content, first_content);
  EXPECT_EQ(again->parsed["n"], "1");
  EXPECT_GT(again->cost_usd, 0);  // what the original call cost
  EXPECT_EQ(sent(*c, r), 1);
  EXPECT_EQ(c->stats().from_store, 1u);
  EXPECT_EQ(c->stats().http_attempts, 0u);
  auto rs = rows(dir / "kforge.db", again->request_sha256);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[1].status, "replayed");
  EXPECT_TRUE(rs[1].replay_of);
  EXPECT_FALSE(rs[1].request_json);

  // Replay::refresh asks again (and that answer is the newest good one).
  r.replay = Replay::refresh;
  auto fresh = c->call(r);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->from_store);
  EXPECT_EQ(fresh->parsed["n"], "2");
  EXPECT_EQ(sent(*c, r), 2);
  r.replay = Replay::allow;
  EXPECT_EQ(c->call(r)->parsed["n"], "2");
  EXPECT_EQ(sent(*c, r), 2);
}

TEST_F(LlmTest, BadResponsesAreNotReplayed) {
  start_server({{"rules", json::array({{{"times", 1}, {"reply", "no json here"}}})}});
  ChatRequest r = request("q");
  auto c = make_client();
  auto first = c->call(r);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().kind, "parse");
  auto second = c->call(r);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_FALSE(second->from_store);
  EXPECT_EQ(sent(*c, r), 2);
}

TEST_F(LlmTest, AStoredResponseThatFailsTheCurrentSchemaIsAskedAgain) {
  start_server({{"defaults", {{"reply", R"({"old_field": 1})"}}}});
  ChatRequest r = request("q");
  auto c = make_client();
  ASSERT_TRUE(c->call(r).ok());
  r.response_schema = json{{"type", "object"}, {"required", {"new_field"}}};
  ASSERT_TRUE(server->set_script({{"defaults", {{"reply", R"({"new_field": 2})"}}}}).ok());
  auto res = c->call(r);  // same identity (json_object mode does not send the schema)
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_FALSE(res->from_store);
  EXPECT_EQ(res->parsed["new_field"], 2);
}

TEST_F(LlmTest, TheAuditRowIsCommittedBeforeTheCallbackRuns) {
  start_server(json::object());
  auto c = make_client();
  ChatRequest r = request("q");
  std::string sha = c->request_sha256(r);
  auto seen = std::make_shared<std::promise<std::size_t>>();
  std::filesystem::path db_path = dir / "kforge.db";
  c->submit(r, [seen, db_path, sha](Result<ChatResponse> res) {
    // A crash right here must not lose the answer: another connection already sees it.
    seen->set_value(res.ok() ? rows(db_path, sha).size() : 0);
  });
  EXPECT_EQ(get_within(seen->get_future()), 1u);
}

TEST_F(LlmTest, TheKeyNeverReachesLogsErrorsOrTheDatabase) {
  std::ostringstream log_text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text);
  auto old = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);

  // A server that echoes the key it was given, in an error and in a reply.
  start_server(
      {{"rules", json::array({{{"match", {{"contains", "echo-error"}}},
                               {"status", 400},
                               {"message", "Incorrect API key provided: {{presented_key}}"}},
                              {{"match", {{"contains", "retry"}}},
                               {"times", 1},
                               {"status", 503},
                               {"message", "busy for key {{presented_key}}"}},
                              {{"match", {{"contains", "echo-reply"}}},
                               {"reply_json", {{"you_sent", "{{presented_key}}"}}}}})}});
  auto c = make_client();
  auto e = c->call(request("echo-error"));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message.find(kKey), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("[REDACTED]"), std::string::npos) << e.error().message;
  EXPECT_TRUE(c->call(request("retry")).ok());
  auto echoed = c->call(request("echo-reply"));
  ASSERT_TRUE(echoed.ok());
  EXPECT_EQ(echoed->parsed["you_sent"], "[REDACTED]");
  EXPECT_EQ(echoed->raw_body.find(kKey), std::string::npos);
  EXPECT_EQ(server->stats()["last_request"]["auth"], "bearer");  // the key was sent
  c->shutdown(std::chrono::seconds(1));
  c.reset();
  spdlog::set_default_logger(old);

  EXPECT_EQ(log_text.str().find(kKey), std::string::npos);
  EXPECT_NE(log_text.str().find("busy for key [REDACTED]"), std::string::npos) << log_text.str();
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    std::ifstream in(f.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.find(kKey), std::string::npos) << f.path();
  }
}

TEST_F(LlmTest, NoStoreMeansNoReplay) {
  start_server(json::object());
  auto c = make_client(nullptr, /*with_db=*/false);
  ChatRequest r = request("q");
  ASSERT_TRUE(c->call(r).ok());
  c.reset();
  auto c2 = make_client(nullptr, false);
  auto res = c2->call(r);
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(res->from_store);
  EXPECT_EQ(sent(*c2, r), 2);
}

}  // namespace
}  // namespace kforge::llm::test
