// Batch mode (llm.mode: batch) against the fake provider's Files and Batch API: answers come
// back through the same parsing, audit rows and callbacks as interactive ones; failed, expired,
// cancelled and failed batches, 5xx on polling and an output file that arrives in parts are
// survived; a restarted client attaches to the batch already recorded instead of paying again.

#include <future>

#include "kforge/store/db.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

class BatchTest : public LlmTest {
 protected:
  void start(json batch_section, std::string fallback = "next_batch") {
    json script = {{"defaults", {{"reply", "{\"answer\": \"{{re:number (\\d+)}}\"}"}}}};
    if (!batch_section.is_null()) script["batch"] = batch_section;
    start_server(script);
    cfg.mode = Mode::batch;
    cfg.batch.collect_ms = 100;
    cfg.batch.poll_ms = 20;
    cfg.batch.max_attempts = 3;
    cfg.batch_fallback =
        fallback == "interactive" ? BatchFallback::interactive : BatchFallback::next_batch;
  }

  // Submits n requests ("number 0" ...) and waits for every result.
  std::vector<Result<ChatResponse>> ask(Client& c, int n, int from = 0) {
    std::vector<std::future<Result<ChatResponse>>> fs;
    for (int i = from; i < from + n; ++i) {
      auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
      fs.push_back(p->get_future());
      ChatRequest r = request("number " + std::to_string(i));
      r.tag = "run=t sample=" + std::to_string(i) + " stage=analyze";
      c.submit(r, [p](Result<ChatResponse> res) { p->set_value(std::move(res)); });
    }
    std::vector<Result<ChatResponse>> out;
    for (auto& f : fs) out.push_back(get_within(f, std::chrono::seconds(30)));
    return out;
  }

  std::int64_t scalar(const std::string& sql) {
    store::OpenOptions o;
    o.path = (dir / "kforge.db").string();
    auto db = store::Db::open(o);
    EXPECT_TRUE(db.ok());
    auto s = (*db)->prepare(sql);
    EXPECT_TRUE(s.ok()) << sql;
    auto r = s->step();
    return r.ok() && *r ? s->int64(0) : -1;
  }

  json batch_stats() { return server->stats()["batch"]; }
  int max_lines_per_request() {
    int m = 0;
    json by_id = batch_stats()["lines_by_custom_id"];
    for (const auto& [id, n] : by_id.items()) m = std::max(m, n.get<int>());
    return m;
  }
};

TEST_F(BatchTest, RequestsGoThroughOneBatchAndAreRecordedLikeInteractiveAnswers) {
  start(nullptr);
  auto c = make_client();
  auto res = ask(*c, 6);
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_TRUE(res[i].ok()) << res[i].error().message;
    EXPECT_EQ(res[i]->parsed["answer"], std::to_string(i));
    EXPECT_FALSE(res[i]->from_store);
  }
  EXPECT_EQ(batch_stats()["created"], 1);
  EXPECT_EQ(batch_stats()["files"], 1);
  EXPECT_EQ(batch_stats()["lines"], 6);
  EXPECT_EQ(requests(), 6) << "no request went to the interactive endpoint";
  // Recorded like interactive answers, at the batch price (half, by default).
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok' AND http_status = 200"), 6);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE abs(cost_usd - 0.5 * (prompt_tokens * "
                   "1.0 + completion_tokens * 2.0) / 1e6) < 1e-12 AND cost_usd > 0"),
            6);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE state = 'done' AND provider_status = "
                   "'completed' AND batch_id IS NOT NULL AND input_file_id IS NOT NULL"),
            1);
  // Asked again: answered from the store, no new batch.
  auto again = ask(*c, 6);
  for (auto& r : again) EXPECT_TRUE(r.ok() && r->from_store);
  EXPECT_EQ(batch_stats()["created"], 1);
  auto st = c->stats();
  EXPECT_EQ(st.batches_created, 1u);
  EXPECT_EQ(st.batch_lines_answered, 6u);
  EXPECT_EQ(st.batches_open, 0);
  c.reset();
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'applied' AND "
                   "request_json IS NULL AND response_raw IS NULL"),
            6)
      << "an applied line keeps no copy of texts the audit rows hold";
}

TEST_F(BatchTest, TheLimitsSplitRequestsIntoSeveralBatches) {
  start(nullptr);
  cfg.batch.max_lines = 4;
  auto c = make_client();
  auto res = ask(*c, 10);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["created"], 3);
  EXPECT_EQ(scalar("SELECT max(lines) FROM llm_batches"), 4);
}

TEST_F(BatchTest, TheBytesLimitSplitsRequestsIntoSeveralFiles) {
  start(nullptr);
  cfg.batch.max_bytes = 1024;  // about three of these requests per file
  auto c = make_client();
  auto res = ask(*c, 7);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(batch_stats()["created"].get<int>(), 3);
  EXPECT_LE(scalar("SELECT max(bytes) FROM llm_batches"), 1024);
  EXPECT_EQ(scalar("SELECT sum(lines) FROM llm_batches"), 7);
}

TEST_F(BatchTest, AFailedLineGoesIntoTheNextBatchWithItsErrorStored) {
  start({{"fault", "failed_line"}, {"fail_contains", "number 2"}, {"times", 1}});
  auto c = make_client();
  auto res = ask(*c, 4);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["created"], 2);
  EXPECT_EQ(batch_stats()["lines"], 4) << "each request answered (paid) once";
  EXPECT_EQ(max_lines_per_request(), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed' AND http_status = "
                   "500 AND error LIKE '%scripted failed line%'"),
            1);
}

TEST_F(BatchTest, ExpiredLinesGoToTheInteractiveEndpointWhenThatIsTheFallback) {
  start({{"fault", "expired"}}, "interactive");
  auto c = make_client();
  auto res = ask(*c, 6);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["created"], 1);
  EXPECT_EQ(batch_stats()["lines"], 3);
  EXPECT_EQ(requests(), 6) << "3 answered in the batch, 3 interactively";
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed' AND error LIKE "
                   "'%batch_expired%'"),
            3);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE provider_status = 'expired'"), 1);
}

class BatchFaults : public BatchTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(BatchFaults, EveryRequestIsAnsweredOnce) {
  start({{"fault", GetParam()}, {"times", 1}, {"poll_errors", 3}, {"parts", 2}});
  auto c = make_client();
  auto res = ask(*c, 6);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << GetParam() << ": " << r.error().message;
  EXPECT_EQ(max_lines_per_request(), 1);
  EXPECT_EQ(batch_stats()["lines"], 6);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok'"), 6);
  std::string fault = GetParam();
  if (fault == "poll_5xx") {
    EXPECT_EQ(batch_stats()["poll_errors"], 3);
    EXPECT_EQ(scalar("SELECT poll_errors FROM llm_batches"), 3);
    EXPECT_EQ(c->stats().batch_poll_errors, 3u);
  }
  if (fault == "parts") {
    EXPECT_EQ(batch_stats()["cut_downloads"], 2);
    EXPECT_EQ(batch_stats()["created"], 1) << "a cut download is read again, not resubmitted";
  }
  if (fault == "failed") {
    EXPECT_EQ(batch_stats()["created"], 2);
    EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE provider_status = 'failed' AND "
                     "error LIKE '%scripted failure%'"),
              1);
  }
  if (fault == "cancelled") {
    EXPECT_EQ(batch_stats()["created"], 2);
    EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE error LIKE '%batch_cancelled%'"),
              3);
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, BatchFaults,
                         ::testing::Values("cancelled", "failed", "poll_5xx", "parts"));

TEST_F(BatchTest, ABatchStillRunningAfterItsWindowIsReportedCancelledAndItsRestResubmitted) {
  start({{"latency_ms", 60'000}});
  cfg.batch.completion_window = "1s";
  cfg.batch.window_ms = 1'000;
  cfg.batch.max_attempts = 2;
  auto c = make_client();
  auto res = ask(*c, 4);
  int ok = 0;
  for (auto& r : res) ok += r.ok() ? 1 : 0;
  // Each cancelled batch answers its first half: 2 in the first, 1 in the second.
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(batch_stats()["cancels"], 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE error LIKE '%after its completion "
                   "window%' AND provider_status = 'cancelled'"),
            2);
  EXPECT_EQ(max_lines_per_request(), 1);
  for (auto& r : res)
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, "http");
      EXPECT_NE(r.error().message.find("batch 2/2"), std::string::npos) << r.error().message;
    }
}

TEST_F(BatchTest, ARestartedClientAttachesToTheRecordedBatchAndPaysOnce) {
  start({{"latency_ms", 1'500}});
  {
    auto c = make_client();
    std::vector<std::future<Result<ChatResponse>>> fs;
    for (int i = 0; i < 4; ++i) {
      auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
      fs.push_back(p->get_future());
      c->submit(request("number " + std::to_string(i)),
                [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
    }
    ASSERT_TRUE(eventually(
        [&] { return scalar("SELECT count(*) FROM llm_batches WHERE state = 'submitted'") == 1; }));
    c->shutdown(std::chrono::milliseconds(0));
    for (auto& f : fs) {
      auto r = get_within(f);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().kind, "cancelled");
    }
  }
  auto c = make_client();
  auto res = ask(*c, 4);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["created"], 1);
  EXPECT_EQ(batch_stats()["lines"], 4);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches"), 1);
}

TEST_F(BatchTest, TheKeyGoesOnlyInTheHeaderAndARefusedKeyFailsTheRequestsWithoutIt) {
  start(nullptr);
  json script = {{"require_key", kKey}, {"defaults", {{"reply", "{\"ok\": true}"}}}};
  ASSERT_TRUE(server->set_script(script).ok());
  {
    auto c = make_client();
    auto res = ask(*c, 2);
    for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(batch_stats()["lines"], 2) << "the batch endpoints took the key";
  }
  // A wrong key: the upload is refused (401, not retried); the requests fail, naming no key.
  cfg.max_attempts = 1;
  cfg.batch.max_attempts = 1;
  ClientOptions o;
  o.env = key_env("sk-wrong-key-SECRET-0000");
  o.db_path = (dir / "kforge.db").string();
  auto c = Client::create(cfg, o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto res = ask(**c, 1, 100);
  ASSERT_FALSE(res[0].ok());
  EXPECT_NE(res[0].error().message.find("HTTP 401"), std::string::npos) << res[0].error().message;
  EXPECT_EQ(res[0].error().message.find("SECRET"), std::string::npos) << res[0].error().message;
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE error LIKE '%401%'"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE coalesce(kf_text(response_text), '') || "
                   "coalesce(error, '') || coalesce(kf_text(request_text), '') LIKE '%SECRET%'"),
            0);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE coalesce(error, '') || "
                   "coalesce(response_raw, '') LIKE '%SECRET%'"),
            0);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE coalesce(error, '') LIKE '%SECRET%'"),
            0);
}

}  // namespace
}  // namespace kforge::llm::test
