// Batch mode (llm.mode: batch) against the fake provider's Files and Batch API: answers come
// back through the same parsing, audit rows and callbacks as interactive ones; failed, expired,
// cancelled and failed batches, 5xx on polling and an output file that arrives in parts are
// survived; a restarted client attaches to the batch already recorded instead of paying again.
// A cut answer is asked again once as a continuation line; a result file shorter than the
// batch's request_counts is read again, never resubmitted; a completion window the provider
// refuses fails the requests as a run-level config error without a second upload; the files
// are deleted at the provider once recorded; a replay costs nothing. And the fake itself
// follows the published API (window, validation, finalizing, counts, order).

#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>

#include "kforge/llm/errors.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/texts.hpp"
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
      r.label = "run=t sample=" + std::to_string(i) + " stage=analyze";
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
  double real(const std::string& sql) {
    store::OpenOptions o;
    o.path = (dir / "kforge.db").string();
    auto db = store::Db::open(o);
    EXPECT_TRUE(db.ok());
    auto s = (*db)->prepare(sql);
    EXPECT_TRUE(s.ok()) << sql;
    auto r = s->step();
    return r.ok() && *r ? s->real(0) : -1;
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

TEST_F(BatchTest, ABatchStillRunningPastItsDeadlineIsReportedCancelledAndItsRestResubmitted) {
  start({{"latency_ms", 60'000}});
  cfg.batch.deadline = "1s";
  cfg.batch.deadline_ms = 1'000;
  cfg.batch.max_attempts = 2;
  auto c = make_client();
  auto res = ask(*c, 4);
  int ok = 0;
  for (auto& r : res) ok += r.ok() ? 1 : 0;
  // Each cancelled batch answers its first half: 2 in the first, 1 in the second.
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(batch_stats()["cancels"], 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE error LIKE '%after its deadline%' "
                   "AND provider_status = 'cancelled'"),
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

// Issue 56, 7: a request waiting in a batch is held in the store, not in memory: its line names
// its body in the text store (written before the input file is), and the call's audit row
// records the same text when the outcome comes back with it.
TEST_F(BatchTest, AWaitingRequestIsHeldInTheStoreAndComesBackWithItsOutcome) {
  start({{"hold_after", "upload"}, {"hold_ms", 1'000}});
  auto c = make_client();
  std::vector<std::future<Result<ChatResponse>>> fs;
  for (int i = 0; i < 5; ++i) {
    auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
    fs.push_back(p->get_future());
    c->submit(request("number " + std::to_string(i)),
              [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  }
  ASSERT_TRUE(eventually([&] { return scalar("SELECT count(*) FROM llm_batch_lines") == 5; }));
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE request_json IS NULL AND "
                   "kf_text(request_text) LIKE '%\"content\":\"number %'"),
            5)
      << "each line's request is a text of the store, not a copy in the row";
  for (std::size_t i = 0; i < fs.size(); ++i) {
    auto r = get_within(fs[i], std::chrono::seconds(30));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->parsed["answer"], std::to_string(i));
  }
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls c JOIN llm_batch_lines l ON l.custom_id = "
                   "c.request_sha256 AND l.request_text = c.request_text WHERE c.status = 'ok'"),
            5)
      << "the recorded request is the line's text, read back with its outcome";
  EXPECT_EQ(scalar("SELECT count(*) FROM texts t JOIN llm_batch_lines l ON l.request_text = t.id"),
            5)
      << "stored once";
}

// Issue 56, 7: a request whose body the caller put into the text store (the scheduler does, for
// every request it submits) is held by its id only, from submit on: its batch line is written
// from that text and names it, and the answer comes back and is recorded with it.
TEST_F(BatchTest, ARequestStoredByItsCallerIsWrittenToItsLineFromTheStore) {
  start({{"hold_after", "upload"}, {"hold_ms", 500}});
  auto c = make_client();
  std::vector<std::int64_t> ids;
  std::vector<std::future<Result<ChatResponse>>> fs;
  {
    store::OpenOptions o;
    o.path = (dir / "kforge.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    for (int i = 0; i < 4; ++i) {
      ChatRequest r = request("number " + std::to_string(i));
      auto id = store::put_text(**db, c->request_json(r));
      ASSERT_TRUE(id.ok()) << id.error().message;
      ids.push_back(*id);
      r.stored_body = *id;
      auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
      fs.push_back(p->get_future());
      c->submit(r, [p](Result<ChatResponse> res) { p->set_value(std::move(res)); });
    }
  }
  ASSERT_TRUE(eventually([&] { return scalar("SELECT count(*) FROM llm_batch_lines") == 4; }));
  for (std::size_t i = 0; i < fs.size(); ++i) {
    auto r = get_within(fs[i], std::chrono::seconds(30));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->parsed["answer"], std::to_string(i));
    EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines l JOIN llm_calls c ON c.request_sha256 "
                     "= l.custom_id AND c.request_text = l.request_text WHERE c.status = 'ok' AND "
                     "l.request_text = " +
                     std::to_string(ids[i])),
              1)
        << "line " << i << " names the caller's text, and the call is recorded with it";
  }
  EXPECT_EQ(batch_stats()["lines"], 4) << "paid once";
}

// A batch recorded before its lines kept their requests in the store (migration 0035), answered
// after a restart: the requests asked again give their lines their texts, and every answer is
// recorded with its request, paid once.
TEST_F(BatchTest, LinesRecordedWithoutTheirRequestsGetThemWhenAskedAgain) {
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
    for (auto& f : fs) EXPECT_FALSE(get_within(f).ok());
  }
  // As an earlier version left them: uploaded, the bodies dropped, no text named.
  scalar("UPDATE llm_batch_lines SET request_text = NULL, request_json = NULL");
  ASSERT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE request_text IS NULL"), 4);
  auto c = make_client();
  auto res = ask(*c, 4);
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_TRUE(res[i].ok()) << res[i].error().message;
    EXPECT_EQ(res[i]->parsed["answer"], std::to_string(i));
  }
  EXPECT_EQ(batch_stats()["lines"], 4) << "paid once";
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls c JOIN llm_batch_lines l ON l.custom_id = "
                   "c.request_sha256 AND l.request_text = c.request_text WHERE c.status = 'ok'"),
            4);
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

// Issue 43, 1: a cut answer (finish_reason length) is asked again with the larger budget as a
// new line, a continuation identity naming the call, once; each line the provider bills is
// priced once (the cut one on its error row, the continuation on the answer's).
TEST_F(BatchTest, ACutAnswerIsAskedAgainOnceAsANewLineAndEachLineIsPricedOnce) {
  start(nullptr);
  ASSERT_TRUE(server
                  ->set_script({{"defaults",
                                 {{"reply", "{\"answer\": \"{{re:number (\\d+)}}\"}"},
                                  {"needs_max_tokens", 400}}}})
                  .ok());
  cfg.max_tokens = 256;
  cfg.truncated_max_tokens = 1024;
  auto c = make_client();
  auto res = ask(*c, 4);
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_TRUE(res[i].ok()) << res[i].error().message;
    EXPECT_EQ(res[i]->parsed["answer"], std::to_string(i));
    EXPECT_EQ(res[i]->max_tokens, 512);
  }
  EXPECT_EQ(batch_stats()["created"], 2) << "the cut lines, then their continuations";
  EXPECT_EQ(batch_stats()["lines"], 8);
  EXPECT_EQ(max_lines_per_request(), 1) << "no line sent twice";
  EXPECT_EQ(c->stats().enlarged, 4u);
  // The continuation lines name the call they continue: the call the answer is recorded for.
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines l JOIN llm_calls c ON "
                   "c.request_sha256 = l.continues AND c.status = 'ok' WHERE l.custom_id <> "
                   "l.continues"),
            4);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE status = 'error' AND error_kind = "
                   "'truncated'"),
            4);
  // Priced once per billed line, at the batch rate: 8 rows with a cost, summing to the 8 lines.
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE cost_usd > 0 AND abs(cost_usd - 0.5 * "
                   "(prompt_tokens * 1.0 + completion_tokens * 2.0) / 1e6) < 1e-12"),
            8);
  EXPECT_NEAR(real("SELECT sum(cost_usd) FROM llm_calls"), c->stats().cost_usd, 1e-12);
}

TEST_F(BatchTest, ACutContinuationIsNotAskedAThirdTime) {
  start(nullptr);
  ASSERT_TRUE(
      server->set_script({{"defaults", {{"reply", "{\"a\": 1}"}, {"needs_max_tokens", 5000}}}})
          .ok());
  cfg.max_tokens = 256;
  cfg.truncated_max_tokens = 4096;
  auto c = make_client();
  auto res = ask(*c, 2);
  for (auto& r : res) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, "truncated");
    EXPECT_NE(r.error().message.find("batch mode asks a cut answer again once"), std::string::npos)
        << r.error().message;
  }
  EXPECT_EQ(batch_stats()["created"], 2);
  EXPECT_EQ(batch_stats()["lines"], 4);
  EXPECT_EQ(max_lines_per_request(), 1);
}

// Issue 43, 2: an output file cut at a line boundary reads as whole JSON Lines; the lines are
// checked against the batch's request_counts and the file read again, never resubmitted.
TEST_F(BatchTest, AnOutputFileCutAtALineBoundaryIsReadAgainNotResubmitted) {
  start({{"fault", "parts"}, {"cut", "line"}, {"parts", 2}});
  auto c = make_client();
  auto res = ask(*c, 6);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["cut_downloads"], 2);
  EXPECT_EQ(batch_stats()["created"], 1);
  EXPECT_EQ(batch_stats()["files"], 1) << "nothing uploaded again";
  EXPECT_EQ(batch_stats()["lines"], 6);
  EXPECT_EQ(max_lines_per_request(), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed'"), 0);
}

TEST_F(BatchTest, AShortfallThatPersistsIsAnErrorWithTheNumbersAndNothingIsResubmitted) {
  start({{"fault", "parts"}, {"cut", "line"}, {"parts", 1000}});
  auto c = make_client();
  std::vector<std::future<Result<ChatResponse>>> fs;
  for (int i = 0; i < 6; ++i) {
    auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
    fs.push_back(p->get_future());
    c->submit(request("number " + std::to_string(i)),
              [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  }
  ASSERT_TRUE(eventually([&] {
    return scalar(
               "SELECT count(*) FROM llm_batches WHERE error LIKE '%short result files: "
               "output file % held _ of the 6 completed lines%'") == 1;
  })) << "the error names the file and the numbers";
  EXPECT_EQ(batch_stats()["created"], 1);
  EXPECT_EQ(batch_stats()["files"], 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state <> 'pending'"), 0)
      << "no line recorded failed while its answer may be at the provider";
  c->shutdown(std::chrono::milliseconds(0));
  for (auto& f : fs) EXPECT_EQ(get_within(f).error().kind, "cancelled");
}

// Issue 43, 3: a creation the provider refuses as invalid (here a completion window it does not
// accept) is a run-level config error with the provider's message: the requests are not
// resubmitted, nothing is uploaded again, and the input file is deleted.
TEST_F(BatchTest, ACompletionWindowTheProviderRefusesFailsTheRequestsOnceAsAConfigError) {
  start(nullptr);
  cfg.batch.completion_window = "1h";
  cfg.batch.accepted_windows = {"24h", "1h"};  // configured wrongly for this provider
  auto c = make_client();
  auto res = ask(*c, 3);
  for (auto& r : res) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, "config");
    EXPECT_NE(r.error().message.find("Invalid value for 'completion_window'"), std::string::npos)
        << r.error().message;
  }
  EXPECT_TRUE(is_run_level(kind_of(res[0].error())));
  EXPECT_EQ(batch_stats()["files"], 1);
  EXPECT_EQ(batch_stats()["refused_creates"], 1);
  EXPECT_EQ(batch_stats()["deleted_files"], 1) << "the input file is not left at the provider";
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches"), 1);
  EXPECT_EQ(requests(), 0);
}

// Issue 43, 6: the files are deleted at the provider once the lines are recorded (kept with
// keep_files); a replay's audit row costs nothing; the runner's thread has its name.
TEST_F(BatchTest, FilesAreDeletedOnceRecordedAndAReplayCostsNothing) {
  start({{"fault", "failed_line"}, {"fail_contains", "number 1"}, {"times", 1}});
  auto c = make_client();
  auto res = ask(*c, 3);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  // Two batches: an input, an output and an error file, then an input and an output file.
  EXPECT_EQ(batch_stats()["deleted_files"], 5);
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batches WHERE files_deleted_ms IS NOT NULL"), 2);
  bool named = false;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    named = named || name == "kf-llm-batch";
  }
  EXPECT_TRUE(named) << "the batch thread's name fits in 15 characters";
  double cost = real("SELECT sum(cost_usd) FROM llm_calls");
  auto again = ask(*c, 3);
  for (auto& r : again) ASSERT_TRUE(r.ok() && r->from_store);
  c.reset();
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_calls WHERE status = 'replayed' AND cost_usd = 0"), 3);
  EXPECT_DOUBLE_EQ(real("SELECT sum(cost_usd) FROM llm_calls"), cost);

  cfg.batch.keep_files = true;
  server->reset_stats();
  auto k = make_client();
  auto kept = ask(*k, 2, 10);
  for (auto& r : kept) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(batch_stats()["deleted_files"], 0);
}

// Issue 43, 4 (batch mode's side): vLLM's failed line, "body": null with the error as a string,
// is a failed line with its error stored, and goes into the next batch.
TEST_F(BatchTest, AVllmFailedLineWithANullBodyIsAFailedLineWithItsError) {
  start({{"fault", "failed_line"},
         {"fail_contains", "number 2"},
         {"times", 1},
         {"error_format", "vllm"}});
  auto c = make_client();
  auto res = ask(*c, 3);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed' AND http_status "
                   "= 400 AND response_raw IS NULL AND error LIKE '%scripted failed line%'"),
            1);
  EXPECT_EQ(max_lines_per_request(), 1);
}

// Issue 56, 7: an error file whose line has a numeric error.code (older vLLM) or a nested error
// object (newer vLLM): a failed line with its message, never an abort of the service.
TEST_F(BatchTest, AFailedLineWithANumericCodeIsAFailedLineWithItsMessage) {
  start({{"fault", "failed_line"},
         {"fail_contains", "number 1"},
         {"times", 1},
         {"error_format", "vllm_numeric"}});
  auto c = make_client();
  auto res = ask(*c, 3);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed' AND error LIKE "
                   "'%400: scripted failed line%'"),
            1);
}

TEST_F(BatchTest, AFailedLineWithANestedErrorIsAFailedLineWithItsMessage) {
  start({{"fault", "failed_line"},
         {"fail_contains", "number 1"},
         {"times", 1},
         {"error_format", "vllm_nested"}});
  auto c = make_client();
  auto res = ask(*c, 3);
  for (auto& r : res) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'failed' AND error LIKE "
                   "'%400: scripted failed line%'"),
            1);
}

// Issue 43, 5: the input file is written to disk as it is built (beside the database) and
// uploaded from there; the result files are read line by line and recorded a few lines at a
// time (llm.batch.lines_in_memory), whatever the batch's size; nothing is left behind.
TEST_F(BatchTest, FilesGoThroughTheDiskAndResultsAreRecordedAFewLinesAtATime) {
  start({{"hold_after", "upload"}, {"hold_ms", 1'000}});
  cfg.batch.lines_in_memory = 2;
  auto c = make_client();
  std::filesystem::path spool = dir / "kforge.db.batches";
  std::vector<std::future<Result<ChatResponse>>> fs;
  for (int i = 0; i < 7; ++i) {
    auto p = std::make_shared<std::promise<Result<ChatResponse>>>();
    fs.push_back(p->get_future());
    c->submit(request("number " + std::to_string(i)),
              [p](Result<ChatResponse> r) { p->set_value(std::move(r)); });
  }
  // While the upload is held: the input file is on disk, one line per request (read again until
  // whole: the file exists before its lines are written, and a loaded host shows it empty).
  std::string input;
  ASSERT_TRUE(eventually([&] {
    if (!std::filesystem::exists(spool)) return false;
    for (const auto& f : std::filesystem::directory_iterator(spool)) {
      std::ifstream in(f.path());
      input.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      return std::count(input.begin(), input.end(), '\n') == 7;
    }
    return false;
  })) << input;
  EXPECT_EQ(std::count(input.begin(), input.end(), '\n'), 7);
  EXPECT_NE(input.find("\"custom_id\":\""), std::string::npos);
  for (std::size_t i = 0; i < fs.size(); ++i) {
    auto r = get_within(fs[i], std::chrono::seconds(30));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->parsed["answer"], std::to_string(i));
  }
  EXPECT_EQ(batch_stats()["lines"], 7);
  EXPECT_EQ(scalar("SELECT completed FROM llm_batches WHERE state = 'done'"), 7);
  EXPECT_TRUE(std::filesystem::is_empty(spool)) << "nothing left on disk";
}

// Issue 43, 7: the fake follows the published Batch API where kforge used to be let off.
TEST_F(BatchTest, TheFakeFollowsThePublishedBatchApi) {
  start(nullptr);
  httplib::Client http("127.0.0.1", server->port());
  auto upload = [&](const std::string& content) {
    httplib::MultipartFormDataItems items = {{"purpose", "batch", "", ""},
                                             {"file", content, "in.jsonl", "application/jsonl"}};
    auto r = http.Post("/v1/files", items);
    EXPECT_TRUE(r && r->status == 200);
    return json::parse(r->body)["id"].get<std::string>();
  };
  auto line = [](const std::string& id) {
    return json{{"custom_id", id},
                {"method", "POST"},
                {"url", "/v1/chat/completions"},
                {"body", {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", id}}}}}}}
               .dump() +
           "\n";
  };
  auto create = [&](const std::string& file, const std::string& window) {
    return http.Post("/v1/batches",
                     json{{"input_file_id", file},
                          {"endpoint", "/v1/chat/completions"},
                          {"completion_window", window}}
                         .dump(),
                     "application/json");
  };
  auto poll = [&](const std::string& id) {
    auto r = http.Get("/v1/batches/" + id);
    EXPECT_TRUE(r && r->status == 200);
    return json::parse(r->body);
  };
  std::string input;
  for (int i = 0; i < 20; ++i) input += line("id-" + std::to_string(i));
  std::string file = upload(input);
  // Only the windows the provider accepts.
  auto refused = create(file, "1h");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("Supported values are: '24h'"), std::string::npos) << refused->body;
  auto made = create(file, "24h");
  ASSERT_TRUE(made && made->status == 200);
  json b = json::parse(made->body);
  EXPECT_EQ(b["status"], "validating");
  EXPECT_EQ(b["request_counts"]["total"], 0) << "not counted while validating";
  std::string id = b["id"];
  json p = poll(id);
  EXPECT_EQ(p["status"], "finalizing");
  EXPECT_EQ(p["request_counts"]["total"], 20);
  EXPECT_TRUE(p["output_file_id"].is_null()) << "no output file while finalizing";
  p = poll(id);
  EXPECT_EQ(p["status"], "completed");
  auto out = http.Get("/v1/files/" + p["output_file_id"].get<std::string>() + "/content");
  ASSERT_TRUE(out && out->status == 200);
  std::istringstream lines(out->body);
  std::string l, order, in_order;
  for (int i = 0; std::getline(lines, l); ++i) {
    order += json::parse(l)["custom_id"].get<std::string>() + " ";
    in_order += "id-" + std::to_string(i) + " ";
  }
  EXPECT_NE(order, in_order) << "the output is not in the input's order";
  auto del = http.Delete("/v1/files/" + file);
  ASSERT_TRUE(del && del->status == 200);
  EXPECT_EQ(json::parse(del->body)["deleted"], true);
  EXPECT_EQ(http.Get("/v1/files/" + file + "/content")->status, 404);

  // A custom_id twice fails the whole batch at validation.
  std::string dup = upload(line("a") + line("b") + line("a"));
  auto d = create(dup, "24h");
  ASSERT_TRUE(d && d->status == 200);
  json f = poll(json::parse(d->body)["id"].get<std::string>());
  EXPECT_EQ(f["status"], "failed");
  EXPECT_EQ(f["errors"]["data"][0]["code"], "duplicate_custom_id");
  EXPECT_EQ(f["errors"]["data"][0]["line"], 3);
  EXPECT_TRUE(f["output_file_id"].is_null());

  // A batch cancelled is cancelling until the next poll.
  ASSERT_TRUE(server->set_script({{"batch", {{"latency_ms", 60'000}}}}).ok());
  std::string slow = upload(line("x"));
  json s = json::parse(create(slow, "24h")->body);
  poll(s["id"]);
  auto cancel =
      http.Post("/v1/batches/" + s["id"].get<std::string>() + "/cancel", "{}", "application/json");
  ASSERT_TRUE(cancel && cancel->status == 200);
  EXPECT_EQ(json::parse(cancel->body)["status"], "cancelling");
  EXPECT_EQ(poll(s["id"])["status"], "cancelled");
}

}  // namespace
}  // namespace kforge::llm::test
