// Answers as reasoning models give them, through the real client and kforge-fake-llm: a cut
// answer asked once more with a larger budget (never the same request twice), reasoning kept
// apart and never searched, reasoning and cached tokens counted and priced, lenient extraction
// counted by what it mended.

#include "kforge/store/db.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

const json kAnswer = {{"kernel_wrapper", "def f(x):\n    return x\n"},
                      {"unitest_code", "def test_f():\n    assert f(1) == 1\n"}};

json gen_schema() {
  return json::parse(R"({"type": "object",
    "properties": {"kernel_wrapper": {"type": "string", "minLength": 1},
                   "unitest_code": {"type": "string", "minLength": 1}},
    "required": ["kernel_wrapper", "unitest_code"], "additionalProperties": false})");
}

TEST_F(LlmTest, ACutAnswerIsAskedOnceMoreWithALargerBudgetNeverTheSameRequest) {
  start_server({{"defaults", {{"reply", kAnswer.dump()}, {"needs_max_tokens", 600}}}});
  cfg.max_tokens = 256;
  cfg.truncated_max_tokens = 1024;
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed, kAnswer);
  EXPECT_EQ(res->max_tokens, 1024);  // 256 and 512 were cut
  EXPECT_EQ(res->attempts, 3);
  json st = server->stats();
  EXPECT_EQ(st["requests"], 3);
  EXPECT_EQ(st["max_per_hash"], 1);  // three different requests
  EXPECT_EQ(st["last_request"]["body"]["max_tokens"], 1024);
  EXPECT_EQ(c->stats().enlarged, 2u);

  // Each cut answer was paid for: it is an audit row of its own, with the body that was sent,
  // the answer that came back and its tokens; a replay finds only the final 'ok' row.
  store::OpenOptions o;
  o.path = (dir / "kforge.db").string();
  auto db = store::Db::open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto s = (*db)->prepare(
      "SELECT status, coalesce(error_kind, ''), http_status, json_extract(kf_text(request_text), "
      "'$.max_tokens'), completion_tokens, kf_text(response_text) LIKE '%\"length\"%' FROM "
      "llm_calls "
      "WHERE request_sha256 = ?1 ORDER BY id");
  ASSERT_TRUE(s.ok());
  s->bind(1, res->request_sha256);
  std::vector<std::string> seen;
  while (true) {
    auto row = s->step();
    ASSERT_TRUE(row.ok());
    if (!*row) break;
    seen.push_back(s->text(0) + "|" + s->text(1) + "|" + std::to_string(s->int64(2)) + "|" +
                   std::to_string(s->int64(3)) + "|" + (s->int64(4) > 0 ? "paid" : "free") + "|" +
                   (s->int64(5) != 0 ? "cut" : "whole"));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"error|truncated|200|256|paid|cut",
                                            "error|truncated|200|512|paid|cut",
                                            "ok||200|1024|paid|whole"}));
}

TEST_F(LlmTest, ACutAnswerStoredByAnEarlierProcessIsNotPaidForAgain) {
  // The first process is cut at 256 and 512 and stops there (its limit); the next one, with a
  // larger limit, starts at 1024: the two cut answers are not asked a second time.
  start_server({{"defaults", {{"reply", kAnswer.dump()}, {"needs_max_tokens", 600}}}});
  cfg.max_tokens = 256;
  cfg.truncated_max_tokens = 512;
  {
    auto first = make_client();
    auto cut = first->call(request("q"));
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error().kind, "truncated");
  }
  EXPECT_EQ(server->stats()["requests"], 2);
  cfg.truncated_max_tokens = 4096;
  auto next = make_client();
  auto res = next->call(request("q"));
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed, kAnswer);
  EXPECT_EQ(res->max_tokens, 1024);
  json st = server->stats();
  EXPECT_EQ(st["requests"], 3);
  EXPECT_EQ(st["max_per_hash"], 1);
  EXPECT_EQ(st["last_request"]["body"]["max_tokens"], 1024);
  EXPECT_EQ(next->stats().enlarged, 1u);
}

TEST_F(LlmTest, ACutAnswerAtTheLimitFailsAsTruncatedNamingTheLimit) {
  start_server({{"defaults", {{"reply", kAnswer.dump()}, {"needs_max_tokens", 100'000}}}});
  cfg.max_tokens = 256;
  cfg.truncated_max_tokens = 700;
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, "truncated");
  EXPECT_FALSE(res.error().is_transient());
  EXPECT_NE(res.error().message.find("finish_reason \"length\", max_tokens 700"), std::string::npos)
      << res.error().message;
  EXPECT_NE(res.error().message.find("llm.truncated_max_tokens (700)"), std::string::npos)
      << res.error().message;
  json st = server->stats();
  EXPECT_EQ(st["requests"], 3);  // 256, 512, 700
  EXPECT_EQ(st["max_per_hash"], 1);

  // With the larger retry off, the cut answer is asked once.
  cfg.truncated_max_tokens = 0;
  server->reset_stats();
  auto c0 = make_client();
  auto once = c0->call(request("other"));
  ASSERT_FALSE(once.ok());
  EXPECT_EQ(once.error().kind, "truncated");
  EXPECT_EQ(server->stats()["requests"], 1);
}

TEST_F(LlmTest, NoAnswerAfterTheReasoningIsACutAnswer) {
  // A reasoning model that spent its budget thinking: reasoning_content, empty content.
  start_server({{"defaults",
                 {{"reply", kAnswer.dump()},
                  {"reasoning", "The strides matter here..."},
                  {"needs_max_tokens", 400}}}});
  cfg.max_tokens = 256;
  auto c = make_client();
  auto res = c->call(request("q"));
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->max_tokens, 512);
  EXPECT_EQ(res->reasoning, "The strides matter here...");

  // A <think> block and nothing after it, finish_reason "stop": cut all the same.
  ASSERT_TRUE(
      server->set_script({{"defaults", {{"reply", "<think>\n" + kAnswer.dump() + "\n</think>\n"}}}})
          .ok());
  cfg.truncated_max_tokens = 512;
  auto c2 = make_client();
  auto cut = c2->call(request("q2"));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, "truncated");
  EXPECT_NE(cut.error().message.find("no answer after the reasoning"), std::string::npos)
      << cut.error().message;
}

TEST_F(LlmTest, ReasoningIsKeptApartNeverSearchedAndItsTokensArePriced) {
  json draft = {{"kernel_wrapper", "def f(x):\n    return 0  # draft\n"},
                {"unitest_code", "def test_f():\n    assert True\n"}};
  start_server({{"defaults",
                 {{"reply", "<think>second thoughts</think>\n" + kAnswer.dump()},
                  {"reasoning", "First try: " + draft.dump()},
                  {"usage",
                   {{"prompt_tokens", 1000},
                    {"completion_tokens", 500},
                    {"reasoning_tokens", 300},
                    {"cached_tokens", 800}}}}}});
  Price p{1.0, 2.0, std::nullopt, std::nullopt};
  p.cached_prompt_per_mtok = 0.5;
  p.reasoning_per_mtok = 4.0;
  cfg.prices["fake-model"] = p;
  auto c = make_client();
  ChatRequest r = request("q");
  r.response_schema = gen_schema();
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed, kAnswer);  // not the draft in reasoning_content
  EXPECT_EQ(res->reasoning, "First try: " + draft.dump() + "\n\nsecond thoughts");
  EXPECT_EQ(res->reasoning_tokens, 300);
  EXPECT_EQ(res->cached_prompt_tokens, 800);
  // 200 uncached + 800 cached prompt tokens, 200 answer + 300 reasoning tokens.
  EXPECT_DOUBLE_EQ(res->cost_usd, (200 * 1.0 + 800 * 0.5 + 200 * 2.0 + 300 * 4.0) / 1e6);
  auto st = c->stats();
  EXPECT_EQ(st.reasoning_tokens, 300u);
  EXPECT_EQ(st.cached_prompt_tokens, 800u);

  store::OpenOptions o;
  o.path = (dir / "kforge.db").string();
  auto db = store::Db::open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto s = (*db)->prepare(
      "SELECT reasoning_tokens, cached_prompt_tokens, cost_usd FROM llm_calls WHERE "
      "request_sha256 = ?1");
  ASSERT_TRUE(s.ok());
  s->bind(1, res->request_sha256);
  auto row = s->step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(s->int64(0), 300);
  EXPECT_EQ(s->int64(1), 800);
  EXPECT_DOUBLE_EQ(s->real(2), res->cost_usd);
}

TEST_F(LlmTest, LenientAnswersAreTakenAndCountedByWhatWasMended) {
  std::string py =
      "{'kernel_wrapper': '''def f(x):\n    return x\n''', 'unitest_code': "
      "'''def test_f():\n    assert f(1) == 1\n''',}";
  start_server({{"defaults", {{"reply", py}, {"content_parts", true}}}});
  auto c = make_client();
  ChatRequest r = request("q");
  r.response_schema = gen_schema();
  auto res = c->call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->parsed, kAnswer);
  EXPECT_EQ(res->content, py);
  EXPECT_EQ(res->mended,
            (std::vector<std::string>{"python_literal", "trailing_comma", "triple_quotes"}));
  auto st = c->stats();
  EXPECT_EQ(st.mended["python_literal"], 1u);
  EXPECT_EQ(st.mended["triple_quotes"], 1u);
}

}  // namespace
}  // namespace kforge::llm::test
