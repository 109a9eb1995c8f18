// kforge run create|pause|resume|cancel and kforge status, through the real binary.

#include <gtest/gtest.h>

#include "daemon_util.hpp"
#include "kforge/core/clock.hpp"

namespace kforge::pipeline::e2e {
namespace {

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    site_ = std::make_unique<Site>(script("fake_llm_answers.json"));
    site_->import_corpus();
  }
  std::unique_ptr<Site> site_;
};

TEST_F(RunCli, CreateEnqueuesOneJobPerSampleAtThePipelinesFirstStage) {
  auto r = site_->kforge({"run", "create", "a", "--pipeline", "v2", "--limit", "7", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["jobs"], 7);
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["prompts"]["analyze"]["version"], "v2");
  EXPECT_EQ(j["prompts"]["analyze"]["sha256"],
            sha256_hex(test::read_text(test::source_dir() / "prompts" / "v2" / "analyze.md")));
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs WHERE stage = 'analyze' AND state = "
                          "'queued'"),
            7);
  auto b = site_->kforge(
      {"run", "create", "b", "--pipeline", "v1", "--limit", "7", "--model", "other-model"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("run 'b' created: 7 jobs, pipeline v1 (generate), model other-model"),
            std::string::npos)
      << b.out;
  // The same samples: an A/B pair.
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs a JOIN jobs b ON a.sample_id = b.sample_id "
                          "WHERE a.run_id = 1 AND b.run_id = 2"),
            7);
}

TEST_F(RunCli, SamplesFromAFileOfKeysOrAJsonList) {
  test::write_text(site_->dir() / "keys.txt",
                   "# two kernels\nkldiv_compute.py\n\n  softmax_triton1.py  \n");
  auto r = site_->kforge({"run", "create", "k", "--pipeline", "v1", "--samples-from",
                          (site_->dir() / "keys.txt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(site_->rows("SELECT s.key FROM jobs j JOIN samples s ON s.id = j.sample_id ORDER BY "
                        "j.id",
                        1),
            (std::vector<std::string>{"kldiv_compute.py", "softmax_triton1.py"}));
  test::write_text(site_->dir() / "keys.json", R"(["softmax_triton1.py", "kldiv_compute.py"])");
  auto l = site_->kforge({"run", "create", "l", "--pipeline", "v1", "--limit", "1",
                          "--samples-from", (site_->dir() / "keys.json").string()});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs WHERE run_id = 2"), 1);
}

TEST_F(RunCli, BadInputIsRefusedNamingWhereAndCreatesNothing) {
  test::write_text(site_->dir() / "bad.txt", "kldiv_compute.py\nno_such.py\n");
  auto r = site_->kforge({"run", "create", "x", "--pipeline", "v1", "--samples-from",
                          (site_->dir() / "bad.txt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.txt:2: no sample with key 'no_such.py'"), std::string::npos) << r.err;
  test::write_text(site_->dir() / "dup.txt", "kldiv_compute.py\n\nkldiv_compute.py\n");
  r = site_->kforge({"run", "create", "x", "--pipeline", "v1", "--samples-from",
                     (site_->dir() / "dup.txt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("dup.txt:3: sample 'kldiv_compute.py' is listed twice (first at 1)"),
            std::string::npos)
      << r.err;
  r = site_->kforge({"run", "create", "x", "--pipeline", "v3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown pipeline 'v3'"), std::string::npos) << r.err;
  r = site_->kforge({"run", "create", "bad tag", "--pipeline", "v1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM runs"), 0);
  ASSERT_EQ(site_->kforge({"run", "create", "x", "--pipeline", "v1"}).exit_code, 0);
  r = site_->kforge({"run", "create", "x", "--pipeline", "v2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run 'x' exists already"), std::string::npos) << r.err;
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs"), test::kSmallCorpusRecords);
}

TEST_F(RunCli, PauseResumeCancel) {
  ASSERT_EQ(site_->kforge({"run", "create", "r", "--pipeline", "v2", "--limit", "3"}).exit_code, 0);
  auto p = site_->kforge({"run", "pause", "r"});
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(site_->rows("SELECT state FROM runs", 1), (std::vector<std::string>{"paused"}));
  EXPECT_NE(site_->kforge({"run", "pause", "r"}).out.find("paused already"), std::string::npos);
  EXPECT_EQ(site_->kforge({"run", "resume", "r"}).exit_code, 0);
  EXPECT_EQ(site_->rows("SELECT state FROM runs", 1), (std::vector<std::string>{"active"}));
  auto c = site_->kforge({"run", "cancel", "r"});
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_NE(c.out.find("3 jobs cancelled"), std::string::npos) << c.out;
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs WHERE state = 'cancelled'"), 3);
  auto again = site_->kforge({"run", "resume", "r"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("run 'r' is cancelled"), std::string::npos) << again.err;
  auto missing = site_->kforge({"run", "pause", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no run 'nope'"), std::string::npos);
}

TEST_F(RunCli, StatusShowsEveryRunOrOneAndKeepsItsJsonShape) {
  ASSERT_EQ(site_->kforge({"run", "create", "one", "--pipeline", "v1", "--limit", "2"}).exit_code,
            0);
  ASSERT_EQ(site_->kforge({"run", "create", "two", "--pipeline", "v2", "--limit", "3"}).exit_code,
            0);
  auto all = site_->kforge({"status", "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto j = json::parse(all.out);
  EXPECT_EQ(j["samples"], test::kSmallCorpusRecords);
  EXPECT_EQ(j["jobs"]["queued"], 5);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["jobs_by_stage"]["analyze"]["queued"], 3);
  EXPECT_EQ(j["runs"][1]["progress"]["remaining"], 3);
  EXPECT_TRUE(j["runs"][1]["eta_s"].is_null());
  auto one = site_->kforge({"status", "two"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("run two  (pipeline v2"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("run one"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("[..............................] 0%  0/3 jobs"), std::string::npos)
      << one.out;
  auto none = site_->kforge({"status", "three"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no run 'three'"), std::string::npos);
  // --watch returns once the run has no LLM work left.
  ASSERT_EQ(site_->kforge({"run", "cancel", "two"}).exit_code, 0);
  auto watch = site_->kforge({"status", "two", "--watch", "--json", "--interval", "0.1"});
  EXPECT_EQ(watch.exit_code, 0);
  EXPECT_EQ(json::parse(watch.out)["runs"][0]["state"], "cancelled");
}

TEST_F(RunCli, StatusWrapsWholeMessagesAndSaysWhyARunWaits) {
  ASSERT_EQ(site_->kforge({"run", "create", "w", "--pipeline", "v1", "--limit", "1"}).exit_code, 0);
  std::string long_msg =
      "POST http://127.0.0.1:9/v1/chat/completions [run=w sample=a stage=generate "
      "attempt=1]: HTTP 401 (attempt 1; not retried: the key, the model or the "
      "endpoint must be fixed first): Incorrect API key provided: sk-xx***yy";
  {
    auto db = site_->open_db();
    auto now = kforge::system_clock().wall_ms();
    ASSERT_TRUE(db->exec("INSERT INTO job_events (run_id, level, kind, message, created_ms) "
                         "SELECT id, 'error', 'paused', '" +
                         long_msg + "', " + std::to_string(now) + " FROM runs")
                    .ok());
    ASSERT_TRUE(db->exec("UPDATE runs SET wait_until_ms = " + std::to_string(now + 90'000) +
                         ", wait_reason = 'provider asked to wait until 12:34:56 UTC (HTTP 503)'")
                    .ok());
  }
  auto st = site_->kforge({"status", "w"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("waiting  provider asked to wait until 12:34:56 UTC (HTTP 503)"),
            std::string::npos)
      << st.out;
  // Every word of the message is shown, on lines of at most 100 columns.
  std::string joined;
  std::size_t pos = 0;
  while (pos < st.out.size()) {
    std::size_t nl = st.out.find('\n', pos);
    if (nl == std::string::npos) nl = st.out.size();
    std::string line = st.out.substr(pos, nl - pos);
    EXPECT_LE(line.size(), 100u) << line;
    joined += line + " ";
    pos = nl + 1;
  }
  EXPECT_NE(joined.find("Incorrect"), std::string::npos) << st.out;
  EXPECT_NE(joined.find("sk-xx***yy"), std::string::npos) << st.out;
}

}  // namespace
}  // namespace kforge::pipeline::e2e
