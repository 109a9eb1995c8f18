// The scoring service over a real database file, with the verify queue the daemon's verifier
// uses standing in for the verifier's side (lease, store a verdict): batches, the verdict cache,
// deadlines on a manual clock, a full queue, and scored items going ahead of a dataset run's.

#include <gtest/gtest.h>

#include "kforge/core/clock.hpp"
#include "kforge/core/embedded.hpp"
#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/score/service.hpp"
#include "testutil.hpp"

namespace kforge::score {

std::span<const EmbeddedFile> score_sql();  // libs/score/sql/score.sql (service.cpp)

namespace {

using namespace std::chrono_literals;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = store::Db::open({.path = (dir_ / "k.db").string()});
    ASSERT_TRUE(a.ok()) << a.error().message;
    verifier_db_ = std::move(*a);
    ServiceOptions o;
    o.config.max_queue = 3;
    make(o);
    queue_ = std::make_unique<pipeline::JobsVerifyQueue>(*verifier_db_);
  }
  void make(ServiceOptions o) {
    auto b = store::Db::open({.path = (dir_ / "k.db").string()});
    ASSERT_TRUE(b.ok());
    o.fingerprint = {"h", "cpu"};
    svc_ = std::make_unique<ScoreService>(std::move(*b), o, clock_);
  }

  Request request(std::vector<std::string> tests, double deadline_s = 60) {
    Request r;
    r.tag = "t";
    r.deadline_s = deadline_s;
    for (std::size_t i = 0; i < tests.size(); ++i)
      r.items.push_back({"i" + std::to_string(i), "code", "", "wrapper", tests[i], nullptr});
    return r;
  }
  // The verifier's side: leases one job and stores `verdict` for it.
  bool verify_one(verify::Verdict verdict, std::vector<std::string> flags = {}) {
    auto l = queue_->lease("v:1", clock_.wall_ms() + 60'000, clock_.wall_ms());
    EXPECT_TRUE(l.ok());
    if (!l.ok() || !*l) return false;
    verify::VerifyResult r;
    r.key = (*l)->request.key;
    r.verdict = verdict;
    r.flags = std::move(flags);
    r.detail = "detail of " + (*l)->request.unitest_code.value_or("");
    auto s = queue_->store_verdict("v:1", (*l)->job, r, clock_.wall_ms());
    EXPECT_TRUE(s.ok());
    return true;
  }
  nlohmann::json results(std::int64_t batch) {
    auto r = svc_->results(batch);
    EXPECT_TRUE(r.ok() && *r);
    return **r;
  }
  void tick() { ASSERT_TRUE(svc_->tick().ok()); }

  test::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Db> verifier_db_;
  std::unique_ptr<ScoreService> svc_;
  std::unique_ptr<pipeline::JobsVerifyQueue> queue_;
};

TEST_F(ServiceTest, ItemsAnswerInOrderFromTheirVerdictsAndARepeatFromTheCache) {
  auto s = svc_->submit(request({"a", "b"}));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->queued, 2);
  auto open = results(s->batch);
  EXPECT_FALSE(open["done"].get<bool>());
  EXPECT_EQ(open["results"][0]["status"], "waiting");
  EXPECT_TRUE(open["results"][0]["reward"].is_null());
  ASSERT_TRUE(verify_one(verify::Verdict::passed));
  ASSERT_TRUE(verify_one(verify::Verdict::failed));
  clock_.advance(10ms);
  tick();
  auto done = results(s->batch);
  EXPECT_TRUE(done["done"].get<bool>()) << done.dump(2);
  EXPECT_EQ(done["results"][0]["id"], "i0");
  EXPECT_EQ(done["results"][0]["verdict"], "passed");
  EXPECT_EQ(done["results"][0]["reward"], 1.0);
  EXPECT_EQ(done["results"][1]["verdict"], "failed");
  EXPECT_EQ(done["results"][1]["feedback"], "detail of b");

  auto again = svc_->submit(request({"b", "a"}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->queued, 0);
  auto cached = results(again->batch);
  EXPECT_TRUE(cached["done"].get<bool>());  // at once, without a tick
  EXPECT_TRUE(cached["results"][0]["cached"].get<bool>());
  EXPECT_EQ(cached["results"][0]["verdict"], "failed");
  EXPECT_EQ(cached["results"][1]["verdict"], "passed");
}

TEST_F(ServiceTest, AVerdictOfTheEnvironmentIsNotCachedAndHasNoReward) {
  auto s = svc_->submit(request({"a"}));
  ASSERT_TRUE(verify_one(verify::Verdict::error, {verify::kEnvironment}));
  clock_.advance(10ms);
  tick();
  auto r = results(s->batch);
  EXPECT_EQ(r["results"][0]["status"], "judged");
  EXPECT_TRUE(r["results"][0]["reward"].is_null()) << r.dump(2);
  auto again = svc_->submit(request({"a"}));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->queued, 1);  // asked again: verified again
  EXPECT_FALSE(results(again->batch)["results"][0]["cached"].get<bool>());
}

TEST_F(ServiceTest, APassedDeadlineEndsTheItemsWithNullRewardsAndCancelsTheirJobs) {
  auto s = svc_->submit(request({"a", "b"}, 5));
  // One is running, one waits in the queue.
  auto l = queue_->lease("v:1", clock_.wall_ms() + 60'000, clock_.wall_ms());
  ASSERT_TRUE(l.ok() && *l);
  clock_.advance(4s);
  tick();
  EXPECT_FALSE(results(s->batch)["done"].get<bool>());
  clock_.advance(2s);
  tick();
  auto r = results(s->batch);
  EXPECT_TRUE(r["done"].get<bool>());
  for (const auto& x : r["results"]) {
    EXPECT_EQ(x["status"], "deadline");
    EXPECT_TRUE(x["reward"].is_null());
  }
  EXPECT_NE(r["results"][0]["detail"].get<std::string>().find("after the verifier took it"),
            std::string::npos)
      << r.dump(2);
  // The running one's verdict, arriving late, is dropped; nothing waits in the queue any more.
  verify::VerifyResult v;
  v.verdict = verify::Verdict::passed;
  auto st = queue_->store_verdict("v:1", (*l)->job, v, clock_.wall_ms());
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(*st, verify::VerdictOutcome::lost);
  auto next = queue_->lease("v:1", clock_.wall_ms() + 60'000, clock_.wall_ms());
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

TEST_F(ServiceTest, AJobAnotherBatchWaitsOnIsNotCancelledByOnesDeadline) {
  auto s1 = svc_->submit(request({"a"}, 2));
  clock_.advance(1s);
  auto s2 = svc_->submit(request({"a"}, 60));
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->queued, 0);  // the same job
  clock_.advance(2s);
  tick();
  EXPECT_EQ(results(s1->batch)["results"][0]["status"], "deadline");
  ASSERT_TRUE(verify_one(verify::Verdict::passed));
  clock_.advance(10ms);
  tick();
  EXPECT_EQ(results(s2->batch)["results"][0]["verdict"], "passed");
}

TEST_F(ServiceTest, AClientThatWentAwayCancelsItsOpenItems) {
  auto s = svc_->submit(request({"a"}));
  ASSERT_TRUE(svc_->cancel(s->batch).ok());
  EXPECT_EQ(results(s->batch)["results"][0]["status"], "cancelled");
  auto next = queue_->lease("v:1", clock_.wall_ms() + 60'000, clock_.wall_ms());
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

TEST_F(ServiceTest, MoreNewWorkThanTheQueueHoldsIsRefusedAndNothingIsWritten) {
  ASSERT_TRUE(svc_->submit(request({"a", "b"})).ok());
  auto full = svc_->submit(request({"c", "d"}));
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->full);
  EXPECT_GE(full->retry_after_s, 1);
  auto q = svc_->queue();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)["depth"]["waiting"], 2);
  EXPECT_EQ((*q)["open_batches"], 1);
  // Items already queued are no new work.
  auto same = svc_->submit(request({"a", "b", "c"}));
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->full);
}

// A request with more new items than the whole queue holds can never fit: 429 would have the
// client retry forever; it is a usage error naming score.max_queue, and nothing is written.
TEST_F(ServiceTest, ARequestLargerThanTheWholeQueueIsAnErrorNotA429) {
  auto big = svc_->submit(request({"a", "b", "c", "d"}));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, "usage");
  EXPECT_NE(big.error().message.find("score.max_queue"), std::string::npos) << big.error().message;
  auto q = svc_->queue();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)["depth"]["waiting"], 0);
  EXPECT_EQ((*q)["open_batches"], 0);
}

// ended() answers whether a batch is done without building its results (the waiting requests
// poll it).
TEST_F(ServiceTest, EndedSaysWhetherABatchIsDone) {
  auto s = svc_->submit(request({"a"}));
  ASSERT_TRUE(s.ok());
  auto open = svc_->ended(s->batch);
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(*open, std::optional<bool>(false));
  ASSERT_TRUE(verify_one(verify::Verdict::passed));
  clock_.advance(10ms);
  tick();
  EXPECT_EQ(*svc_->ended(s->batch), std::optional<bool>(true));
  EXPECT_EQ(*svc_->ended(s->batch + 100), std::nullopt);
}

TEST_F(ServiceTest, ScoredItemsGoAheadOfADatasetRunsJobsByTheShare) {
  // A dataset run's job, older than the scored one.
  ASSERT_TRUE(verifier_db_
                  ->exec("INSERT INTO runs (tag, pipeline, model, created_ms, updated_ms) VALUES "
                         "('data', 'v2', 'm', 1, 1);"
                         "INSERT INTO samples (key, code_sha256, code, record_json, source, "
                         "source_index, created_ms, updated_ms) VALUES ('k', 'x', 'c', '{}', "
                         "'f', 0, 1, 1);"
                         "INSERT INTO jobs (run_id, sample_id, state, stage, created_ms, "
                         "updated_ms) VALUES (1, 1, 'verify_queued', 'verify', 1, 1);")
                  .ok());
  ASSERT_TRUE(svc_->submit(request({"a"})).ok());
  queue_->set_score_share(1.0);
  auto l = queue_->lease("v:1", clock_.wall_ms() + 60'000, clock_.wall_ms());
  ASSERT_TRUE(l.ok() && *l);
  EXPECT_EQ((*l)->request.unitest_code, "a");  // the scored one first
  EXPECT_EQ((*l)->request.kernel_wrapper, "wrapper");
}

TEST_F(ServiceTest, RetentionDeletesOldRolloutsAndTheirBatches) {
  ServiceOptions o;
  o.config.keep_rollouts_h = 1;
  make(o);
  auto s = svc_->submit(request({"a"}));
  ASSERT_TRUE(verify_one(verify::Verdict::passed));
  clock_.advance(10ms);
  tick();
  EXPECT_TRUE(results(s->batch)["done"].get<bool>());
  clock_.advance(std::chrono::hours(2));
  tick();
  auto gone = svc_->results(s->batch);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto st = verifier_db_->prepare("SELECT count(*) FROM samples");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(*st->step());
  EXPECT_EQ(st->int64(0), 0);  // the scored sample went with its job
  auto again = svc_->submit(request({"a"}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->queued, 1);  // forgotten: verified again
}

TEST_F(ServiceTest, ATagOfADatasetRunIsRefused) {
  ASSERT_TRUE(verifier_db_
                  ->exec("INSERT INTO runs (tag, pipeline, model, created_ms, updated_ms) VALUES "
                         "('data', 'v2', 'm', 1, 1);")
                  .ok());
  auto r = request({"a"});
  r.tag = "data";
  auto s = svc_->submit(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, "conflict");
  EXPECT_NE(s.error().message.find("dataset run"), std::string::npos);
}

// The ticker settles every open item every 100 ms (settle_judged) and each submitted item asks
// the verdict cache (item_cached), both under the service's one connection: each must find the
// verifications it wants by index, not scan them all (512 open items against 100,000
// verifications was 51 million rows a tick, with every submit and poll waiting behind it).
TEST_F(ServiceTest, SettlingAndTheCacheFindVerificationsByIndex) {
  const store::QuerySet q(score_sql());
  for (const char* name : {"settle_judged", "item_cached"}) {
    SCOPED_TRACE(name);
    auto st = verifier_db_->prepare("EXPLAIN QUERY PLAN " + std::string(q[name]));
    ASSERT_TRUE(st.ok()) << st.error().message;
    std::string plan;
    while (true) {
      auto row = st->step();
      ASSERT_TRUE(row.ok());
      if (!*row) break;
      plan += st->text(3) + "\n";
    }
    EXPECT_NE(plan.find("SEARCH v USING INDEX"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("SCAN v"), std::string::npos) << plan;
  }
}

}  // namespace
}  // namespace kforge::score
