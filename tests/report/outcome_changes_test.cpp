// The viewer's change numbers on the jobs' rows (migration 0053): what the pipeline's own stage
// statements (lease and checkpoint, which number their job themselves, without a trigger) and
// a deletion leave for a reader of a moving run (report's outcome_change_mark and
// outcome_changes_since), through the pipeline's JobStore on a real database.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "db_util.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/report/outcomes.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::test {
namespace {

struct Site {
  TempDir dir;
  std::unique_ptr<store::Db> db;
  ManualClock clock;
  std::unique_ptr<pipeline::JobStore> jobs;
  std::int64_t run = 0;
  std::vector<std::int64_t> samples;

  Site() {
    auto opened = store::Db::open({.path = (dir / "k.db").string(), .migrate = true});
    EXPECT_TRUE(opened.ok());
    db = std::move(opened).value();
    jobs = std::make_unique<pipeline::JobStore>(*db, clock, "host:1");
    store::Samples s(*db);
    for (int i = 0; i < 6; ++i) {
      store::SampleRow r;
      r.key = "s" + std::to_string(i) + ".py";
      r.code = "def k" + std::to_string(i) + "(): pass\n";
      r.code_sha256 = sha256_hex(r.code);
      r.record_json = "{}";
      r.source = "c.jsonl";
      r.source_index = i;
      EXPECT_TRUE(s.insert(r, 1).ok());
      samples.push_back(db_scalar(*db, "SELECT id FROM samples WHERE key = '" + r.key + "'"));
    }
    pipeline::NewRun nr;
    nr.tag = "a";
    nr.pipeline = "v2";
    nr.model = "m";
    nr.first_stage = "generate";
    nr.sample_ids = samples;
    auto id = jobs->create_run(nr);
    EXPECT_TRUE(id.ok());
    run = id.ok() ? *id : 0;
  }
  std::int64_t mark() {
    auto m = report::outcome_change_mark(*db, run);
    EXPECT_TRUE(m.ok());
    return m.ok() ? *m : -1;
  }
  report::OutcomeChanges since(std::int64_t m) {
    auto c = report::outcome_changes_since(*db, run, m);
    EXPECT_TRUE(c.ok());
    auto out = c.ok() ? *c : report::OutcomeChanges{};
    std::sort(out.samples.begin(), out.samples.end());
    return out;
  }
};

TEST(OutcomeChanges, ALeaseAndACheckpointNumberTheirJobsAndTheAnswerComesThroughWithIt) {
  Site s;
  const std::int64_t created = s.mark();
  EXPECT_EQ(created, 6);  // each job numbered as it was made
  auto leased = s.jobs->lease(s.run, 2, 60'000);
  ASSERT_TRUE(leased.ok());
  ASSERT_EQ(leased->size(), 2u);
  const std::int64_t after_lease = s.mark();
  EXPECT_GT(after_lease, created);
  auto c = s.since(created);
  EXPECT_EQ(c.samples, (std::vector<std::int64_t>{s.samples[0], s.samples[1]}));
  EXPECT_FALSE(c.removed);
  EXPECT_EQ(c.mark, after_lease);

  pipeline::StageOutput o;
  o.stage = "generate";
  o.prompt_version = "v";
  o.prompt_sha256 = "p";
  o.request_json = "{}";
  o.parsed_json = R"({"kernel_wrapper": "def w(): pass", "unitest_code": "pass"})";
  pipeline::NextState next;
  next.state = store::JobState::verify_queued;
  next.stage = "verify";
  auto held = s.jobs->checkpoint((*leased)[1], o, next, {});
  ASSERT_TRUE(held.ok() && *held);
  c = s.since(after_lease);
  EXPECT_EQ(c.samples, (std::vector<std::int64_t>{s.samples[1]}));
  EXPECT_GT(c.mark, after_lease);
  // A lease's renewal alone changes nothing shown: no number.
  const std::int64_t before_renew = s.mark();
  ASSERT_TRUE(s.jobs->renew_leases(90'000).ok());
  EXPECT_EQ(s.mark(), before_renew);
}

TEST(OutcomeChanges, ADeletedJobIsPastEveryNumberTheRunHadEvenWhenItHeldTheNewest) {
  Site s;
  auto leased = s.jobs->lease(s.run, 1, 60'000);  // s0's job now holds the run's newest number
  ASSERT_TRUE(leased.ok());
  const std::int64_t seen = s.mark();
  EXPECT_EQ(db_scalar(*s.db, "SELECT max(change_seq) FROM jobs"), seen);
  ASSERT_TRUE(s.db->exec("DELETE FROM jobs WHERE id = " + std::to_string((*leased)[0].id)).ok());
  auto c = s.since(seen);
  EXPECT_TRUE(c.removed) << "the reader that saw " << seen << " must read the run whole";
  EXPECT_GT(s.mark(), seen);
  // The run's next change is numbered past the deletion.
  const std::int64_t gone = s.mark();
  auto more = s.jobs->lease(s.run, 1, 60'000);
  ASSERT_TRUE(more.ok());
  c = s.since(gone);
  EXPECT_EQ(c.samples, (std::vector<std::int64_t>{s.samples[1]}));
  EXPECT_FALSE(c.removed);
}

}  // namespace
}  // namespace kforge::test
