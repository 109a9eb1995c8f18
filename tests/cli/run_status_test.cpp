// kforge run create|pause|resume|cancel and kforge status, through the real binary.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

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
  r = site_->kforge({"run", "create", "x", "--pipeline", "v9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown pipeline 'v9'"), std::string::npos) << r.err;
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
  // Nothing moves a paused run on: --watch stops at once and says so.
  auto watch = site_->kforge({"status", "r", "--watch", "--interval", "0.1"});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_NE(watch.out.find("stopped watching: run r is paused (kforge run resume r)"),
            std::string::npos)
      << watch.out;
  EXPECT_EQ(site_->kforge({"run", "resume", "r"}).exit_code, 0);
  EXPECT_EQ(site_->rows("SELECT state FROM runs", 1), (std::vector<std::string>{"active"}));
  auto c = site_->kforge({"run", "cancel", "r"});
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_NE(c.out.find("3 jobs cancelled"), std::string::npos) << c.out;
  EXPECT_EQ(site_->scalar("SELECT count(*) FROM jobs WHERE state = 'cancelled'"), 3);
  // Cancelled before any answer: none got past the LLM stages, and the bar is not full.
  auto st = site_->kforge({"status", "r"});
  EXPECT_NE(st.out.find("] 0%  0/3 jobs ended; 0 past the LLM stages, 0 at the verifier; 3 "
                        "cancelled"),
            std::string::npos)
      << st.out;
  auto sj = json::parse(site_->kforge({"status", "r", "--json"}).out)["runs"][0]["progress"];
  EXPECT_EQ(sj["past_llm"], 0);
  EXPECT_EQ(sj["cancelled"], 3);
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
  EXPECT_NE(watch.err.find("stopped watching: run two is cancelled"), std::string::npos)
      << watch.err;
  // A run with LLM work left but no daemon: nothing moves it on, and --watch says so.
  watch = site_->kforge({"status", "one", "--watch", "--interval", "0.1"});
  EXPECT_EQ(watch.exit_code, 0);
  EXPECT_NE(watch.out.find("stopped watching: run one is generating: no kforged is running on "
                           "this database"),
            std::string::npos)
      << watch.out;
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

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// A kforged whose verifier cannot start: the samples wait at the verifier for good, so status
// says so and --watch stops, saying why, instead of redrawing "verifying" forever.
TEST_F(RunCli, WatchStopsAndSaysWhyWhenTheVerifierCannotStart) {
  Options o;
  o.verify = true;
  site_->write_config(o);
  std::string cfg = test::read_text(site_->config());
  auto at = cfg.find("python: /usr/bin/python3");
  ASSERT_NE(at, std::string::npos) << cfg;
  cfg.replace(at, 24, "python: /nonexistent/python3");
  test::write_text(site_->config(), cfg);
  site_->create_run("g", "v2", {"--limit", "3"});
  auto d = site_->start_daemon();
  ASSERT_EQ(site_->wait_for(kPastLlm, 3), 3) << d->log();
  ASSERT_EQ(site_->wait_for("SELECT count(*) FROM verifier_devices WHERE device = 'verifier'", 1),
            1)
      << d->log();
  auto st = site_->kforge({"status", "g", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto run = json::parse(st.out)["runs"][0];
  EXPECT_EQ(run["phase"], "generated") << run.dump();
  EXPECT_TRUE(has(run["waits_for"].get<std::string>(),
                  "3 samples wait for a verifier: the running kforged's verifier cannot start: "
                  "verifier.python: /nonexistent/python3"))
      << run.dump();
  auto watch = site_->kforge({"status", "g", "--watch", "--interval", "0.1"});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_TRUE(has(watch.out,
                  "stopped watching: run g is generated: 3 samples wait for a "
                  "verifier: the running kforged's verifier cannot start"))
      << watch.out;
}

// With no daemon running there is no rate and no ETA, whatever finished a minute ago.
TEST_F(RunCli, NoRateOrEtaWithoutADaemon) {
  Site site(script("fake_llm_answers.json", 200));
  Options o;
  o.max_in_flight = 2;
  site.write_config(o);
  site.import_corpus();
  site.create_run("r", "v1");
  auto d = site.start_daemon();
  ASSERT_GE(site.wait_for(kPastLlm, 4), 4) << d->log();
  auto running = json::parse(site.kforge({"status", "r", "--json"}).out);
  ASSERT_GT(running["runs"][0]["samples_per_minute"].get<double>(), 0) << running.dump();
  d->kill9();
  ASSERT_LT(site.scalar(kPastLlm), test::kSmallCorpusRecords);
  auto j = json::parse(site.kforge({"status", "r", "--json"}).out);
  EXPECT_EQ(j["runs"][0]["samples_per_minute"].get<double>(), 0) << j["runs"][0].dump();
  EXPECT_TRUE(j["runs"][0]["eta_s"].is_null()) << j["runs"][0].dump();
  auto text = site.kforge({"status", "r"});
  EXPECT_TRUE(has(text.out, "rate - samples/min   ETA -")) << text.out;
  EXPECT_TRUE(has(text.out, "no kforged is running")) << text.out;
}

TEST_F(RunCli, CancelTwiceIsIdempotentLikePause) {
  ASSERT_EQ(site_->kforge({"run", "create", "c", "--pipeline", "v1", "--limit", "2"}).exit_code, 0);
  ASSERT_EQ(site_->kforge({"run", "cancel", "c"}).exit_code, 0);
  auto again = site_->kforge({"run", "cancel", "c"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("run 'c' is cancelled already"), std::string::npos) << again.out;
}

// kforged's heartbeat: status says whether a daemon runs, since when and where its metrics are;
// names a killed one stale; marks alerts of a dead daemon old; says what a generated run with
// verification off waits for; and two daemons never share a metrics port.
TEST_F(RunCli, StatusKnowsWhetherTheDaemonLives) {
  auto st = site_->kforge({"status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_EQ(json::parse(st.out)["daemon"]["state"], "none");

  Options o;
  o.http_listen = "127.0.0.1:0";
  site_->write_config(o);  // verify: false
  ASSERT_EQ(site_
                ->kforge({"run", "create", "g", "--pipeline", "v2", "--limit", "3",
                          "--repair-rounds", "0"})
                .exit_code,
            0);
  auto d = site_->start_daemon();
  ASSERT_EQ(site_->wait_for(kPastLlm, 3), 3) << d->log();
  st = site_->kforge({"status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto j = json::parse(st.out);
  EXPECT_EQ(j["daemon"]["state"], "running") << j["daemon"].dump();
  EXPECT_EQ(j["daemon"]["pid"], d->pid());
  EXPECT_EQ(j["daemon"]["verifies"], false);
  ASSERT_TRUE(j["daemon"]["metrics"].is_string()) << j["daemon"].dump();
  std::string metrics = j["daemon"]["metrics"].get<std::string>();
  EXPECT_EQ(metrics.rfind("127.0.0.1:", 0), 0u) << metrics;
  EXPECT_EQ(j["runs"][0]["phase"], "generated");
  EXPECT_TRUE(has(j["runs"][0]["waits_for"].get<std::string>(),
                  "3 samples wait for a verifier: the running kforged has daemon.verify: false"))
      << j["runs"][0].dump();
  EXPECT_EQ(j["runs"][0]["progress"]["ended"], 0);
  EXPECT_EQ(j["runs"][0]["progress"]["verifying"], 3);
  auto text = site_->kforge({"status"});
  EXPECT_TRUE(has(text.out, "daemon     running since ")) << text.out;
  EXPECT_TRUE(has(text.out, "pid " + std::to_string(d->pid()))) << text.out;
  EXPECT_TRUE(has(text.out, "metrics " + metrics)) << text.out;
  // The bar counts verification: nothing is verified, so it is at 0%, not 100%.
  EXPECT_TRUE(has(text.out, "] 0%  0/3 jobs ended; 3 past the LLM stages, 3 at the verifier"))
      << text.out;
  EXPECT_TRUE(has(text.out, "phase    generated: 3 samples wait for a verifier")) << text.out;
  // --watch stops at once: nothing running can move the run on, and it said why.
  auto watch = site_->kforge({"status", "g", "--watch", "--interval", "0.1"});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_TRUE(has(watch.out, "wait for a verifier")) << watch.out;

  // A second kforged, on another database, may not listen on the same metrics port.
  Site other(script("fake_llm_answers.json"));
  Options o2;
  o2.http_listen = metrics;
  other.write_config(o2);
  other.import_corpus();
  auto d2 = other.start_daemon();
  auto rc = d2->wait(20s);
  ASSERT_TRUE(rc.has_value()) << d2->log();
  EXPECT_EQ(*rc, 1) << d2->log();
  EXPECT_TRUE(
      has(d2->log(), "daemon.http_listen: cannot listen on " + metrics + ": the address is in use"))
      << d2->log();

  // Killed without a word: stale at once (its pid is gone from this host), and an alert it left
  // (written while it lived) is old.
  pid_t pid = d->pid();
  std::int64_t since = j["daemon"]["since_ms"].get<std::int64_t>();
  d->kill9();
  {
    auto db = site_->open_db();
    ASSERT_TRUE(db->exec("INSERT INTO verifier_devices (device, in_rotation, start_failures, "
                         "reason, updated_ms) VALUES ('cuda:0', 0, 3, 'worker exited at start', " +
                         std::to_string(since) + ")")
                    .ok());
  }
  st = site_->kforge({"status", "--json"});
  j = json::parse(st.out);
  EXPECT_EQ(j["daemon"]["state"], "stale") << j["daemon"].dump();
  EXPECT_TRUE(has(j["daemon"]["why"].get<std::string>(),
                  "pid " + std::to_string(pid) + " is gone from this host"));
  EXPECT_EQ(j["verifier_alerts"][0]["old"], true);
  EXPECT_EQ(j["runs"][0]["phase"], "generated");
  EXPECT_TRUE(has(j["runs"][0]["waits_for"].get<std::string>(), "no kforged is running"));
  text = site_->kforge({"status"});
  EXPECT_TRUE(has(text.out, "daemon     STALE: pid " + std::to_string(pid))) << text.out;
  EXPECT_TRUE(has(text.out, "old ALERT  verifier device cuda:0")) << text.out;
  EXPECT_TRUE(has(text.out, "a kforged that is no longer running")) << text.out;

  // A restart says what it finds and resumes; a clean stop is "stopped".
  ASSERT_EQ(site_
                ->kforge({"run", "create", "h", "--pipeline", "v1", "--limit", "2",
                          "--repair-rounds", "0"})
                .exit_code,
            0);
  auto d3 = site_->start_daemon();
  ASSERT_EQ(site_->wait_for(kPastLlm, 5), 5) << d3->log();
  d3->signal(SIGTERM);
  ASSERT_EQ(d3->wait(20s), 0) << d3->log();
  EXPECT_TRUE(has(d3->log(), "the previous kforged (pid " + std::to_string(pid))) << d3->log();
  EXPECT_TRUE(has(d3->log(), "did not stop cleanly")) << d3->log();
  EXPECT_TRUE(has(d3->log(), "resuming run g: 3 jobs: 0 for the LLM stages, 3 to verify"))
      << d3->log();
  EXPECT_TRUE(has(d3->log(), "resuming run h: 2 jobs: 2 for the LLM stages, 0 to verify"))
      << d3->log();
  j = json::parse(site_->kforge({"status", "--json"}).out);
  EXPECT_EQ(j["daemon"]["state"], "stopped") << j["daemon"].dump();
  EXPECT_FALSE(j["daemon"]["stopped_ms"].is_null());
  text = site_->kforge({"status"});
  EXPECT_TRUE(has(text.out, "daemon     not running: the last one")) << text.out;
}

// A heartbeat that stopped long ago on another host is stale by its age.
TEST_F(RunCli, AnOldBeatFromAnotherHostIsStale) {
  auto now = kforge::system_clock().wall_ms();
  {
    auto db = site_->open_db();
    ASSERT_TRUE(db->exec("INSERT INTO daemon_heartbeats (host, pid, owner, version, started_ms, "
                         "beat_ms, interval_ms, metrics, verifies) VALUES ('elsewhere', 4242, "
                         "'elsewhere:4242', 'x', " +
                         std::to_string(now - 3'600'000) + ", " + std::to_string(now - 120'000) +
                         ", 5000, NULL, 1)")
                    .ok());
  }
  auto j = json::parse(site_->kforge({"status", "--json"}).out);
  EXPECT_EQ(j["daemon"]["state"], "stale");
  EXPECT_TRUE(has(j["daemon"]["why"].get<std::string>(), "no beat for 120 s")) << j.dump();
  {
    auto db = site_->open_db();
    ASSERT_TRUE(db->exec("UPDATE daemon_heartbeats SET beat_ms = " + std::to_string(now)).ok());
  }
  j = json::parse(site_->kforge({"status", "--json"}).out);
  EXPECT_EQ(j["daemon"]["state"], "running");
  EXPECT_EQ(j["daemon"]["host"], "elsewhere");
}

// Issue 56, 10: a kforged that died and was not reaped (a zombie: it answers kill(pid, 0)) is not
// running, however recent its last beat: no rate, no ETA.
TEST_F(RunCli, AZombieDaemonOnThisHostIsNotRunning) {
  ASSERT_EQ(site_
                ->kforge({"run", "create", "z", "--pipeline", "v1", "--limit", "2",
                          "--repair-rounds", "0"})
                .exit_code,
            0);
  pid_t zombie = ::fork();
  if (zombie == 0) _exit(0);
  ASSERT_GT(zombie, 0);
  std::this_thread::sleep_for(200ms);  // exited; not reaped until the end of the test
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto now = kforge::system_clock().wall_ms();
  {
    auto db = site_->open_db();
    ASSERT_TRUE(db->exec("INSERT INTO daemon_heartbeats (host, pid, owner, version, started_ms, "
                         "beat_ms, interval_ms, metrics, verifies) VALUES ('" +
                         std::string(host) + "', " + std::to_string(zombie) + ", 'z', 'x', " +
                         std::to_string(now - 60'000) + ", " + std::to_string(now) +
                         ", 5000, NULL, 1)")
                    .ok());
  }
  auto j = json::parse(site_->kforge({"status", "--json"}).out);
  EXPECT_EQ(j["daemon"]["state"], "stale") << j["daemon"].dump();
  EXPECT_TRUE(has(j["daemon"]["why"].get<std::string>(),
                  "pid " + std::to_string(zombie) + " is gone from this host"))
      << j.dump();
  EXPECT_TRUE(has(j["runs"][0]["waits_for"].get<std::string>(), "no kforged is running"))
      << j.dump();
  auto text = site_->kforge({"status", "z"});
  EXPECT_FALSE(has(text.out, "running since")) << text.out;
  EXPECT_TRUE(has(text.out, "daemon     STALE: pid " + std::to_string(zombie))) << text.out;
  EXPECT_TRUE(has(text.out, "ETA -")) << text.out;
  ::waitpid(zombie, nullptr, 0);
}

// Exports feed kforge verify: --out - writes to stdout, --map names the code's field.
TEST_F(RunCli, ExportToStdoutAndVerifyWithAMap) {
  auto d = site_->start_daemon();
  ASSERT_EQ(site_
                ->kforge({"run", "create", "e", "--pipeline", "v1", "--limit", "2",
                          "--repair-rounds", "0"})
                .exit_code,
            0);
  ASSERT_EQ(site_->wait_for(kPastLlm, 2), 2) << d->log();
  auto out = site_->kforge({"export", "e", "--out", "-", "--format", "jsonl"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_FALSE(std::filesystem::exists(site_->dir() / "-"));
  EXPECT_TRUE(has(out.err, "exported 2 samples of e to stdout")) << out.err;
  std::vector<json> recs;
  std::size_t pos = 0;
  while (pos < out.out.size()) {
    auto nl = out.out.find('\n', pos);
    recs.push_back(json::parse(out.out.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_TRUE(recs[0].contains("output"));
  EXPECT_TRUE(recs[0]["kernel_wrapper"].is_string());
  test::write_text(site_->dir() / "e.jsonl", out.out);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), 0);
  Options o;
  o.verify = true;  // the verifier section: CPU, /usr/bin/python3
  site_->write_config(o);
  // Without a map the export's code (the corpus's "output") is not found: the summary says so.
  auto v = site_->kforge(
      {"verify", (site_->dir() / "e.jsonl").string(), "--workers", "1", "--slowest", "0"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(has(v.out,
                  "2 records have no string field 'code' and were skipped; --map "
                  "code=FIELD"))
      << v.out;
  v = site_->kforge({"verify", (site_->dir() / "e.jsonl").string(), "--map", "code=output,key=file",
                     "--workers", "1", "--slowest", "0", "--json",
                     (site_->dir() / "v.jsonl").string()});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_FALSE(has(v.out, "have no string field")) << v.out;
  auto line = json::parse(test::read_text(site_->dir() / "v.jsonl")
                              .substr(0, test::read_text(site_->dir() / "v.jsonl").find('\n')));
  EXPECT_EQ(line["key"], recs[0]["file"]);
  EXPECT_NE(line["verdict"], "skipped") << line.dump();
  auto bad = site_->kforge({"verify", (site_->dir() / "e.jsonl").string(), "--map", "cod=x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(has(bad.err, "--map: unknown target 'cod'")) << bad.err;
}

}  // namespace
}  // namespace kforge::pipeline::e2e
