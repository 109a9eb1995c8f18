// End to end: the real kforged and kforge binaries against the fake provider on loopback, over
// the tests' corpus (records of TritonBench-G), with scripted faults, kill -9 at several points,
// SIGTERM, expired leases, a changed prompt, SIGHUP, /metrics and the systemd notification
// protocol.

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "daemon_util.hpp"
#include "db_util.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/notify.hpp"
#include "kforge/report/viewer.hpp"

namespace kforge::pipeline::e2e {
namespace {

std::string state_of(Site& s, const std::string& tag, const std::string& key) {
  for (const auto& row : final_states(s, tag))
    if (row.rfind(key + "|", 0) == 0) return row.substr(key.size() + 1);
  return "(none)";
}

TEST(Daemon, BothPipelinesRunTheCorpusThroughScriptedFaultsAndStopOnSigterm) {
  Site site(script("fake_llm_faults.json"));
  site.import_corpus();
  site.create_run("v1", "v1");
  site.create_run("v2", "v2");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(kPastLlm, 2 * kN), 2 * kN) << d->log();

  // Scripted permanent failures end their jobs with the reason.
  EXPECT_EQ(state_of(site, "v1", "dequantize_rowwise.py"), "failed|generate|llm:http");
  EXPECT_EQ(state_of(site, "v2", "dequantize_rowwise.py"), "failed|analyze|llm:http");
  EXPECT_EQ(state_of(site, "v1", "kldiv_compute.py"), "failed|generate|parse");
  EXPECT_EQ(state_of(site, "v2", "kldiv_compute.py"), "failed|analyze|parse");
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs o JOIN samples s ON s.id = "
                        "o.sample_id WHERE s.key = 'kldiv_compute.py' AND o.status = "
                        "'parse_error'"),
            6);  // three attempts in each run, each kept
  // Faults that a retry fixes: an unparsable analysis, a rejected wrapper, a reply cut at
  // max_tokens, prose and several fences around the JSON, and transport faults.
  for (const char* key : {"layer_norm_triton.py", "rms_norm_triton.py", "softmax_triton1.py"})
    EXPECT_EQ(state_of(site, "v2", key), "verify_queued|verify|") << key;
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs o JOIN samples s ON s.id = "
                        "o.sample_id JOIN runs r ON r.id = o.run_id WHERE r.tag = 'v2' AND "
                        "s.key = 'layer_norm_triton.py' AND o.stage = 'analyze'"),
            2);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs WHERE status = 'rejected' AND "
                        "error_kind = 'no_kernel_launch' AND sample_id = (SELECT id FROM "
                        "samples WHERE key = 'rms_norm_triton.py')"),
            2);
  // The reply cut at max_tokens (4096) was asked once more with 8192 by the client, in the same
  // job attempt: no stage output is spent on it.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs WHERE error_kind IN ('length', "
                        "'truncated')"),
            0);
  EXPECT_EQ(
      site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok' AND kf_text(request_text) "
                  "LIKE '%\"max_tokens\":8192%'"),
      2);
  // The cut answers were paid for too: each is a row of its own, asked with 4096.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'error' AND error_kind = "
                        "'truncated' AND http_status = 200 AND kf_text(request_text) LIKE "
                        "'%\"max_tokens\":4096%'"),
            2);
  auto stats = site.fake().stats();
  for (const char* rule : {"transient_503", "reset_once", "rate_limited_once", "truncate_once",
                           "prose_analyze", "fences_generate"})
    EXPECT_GT(stats["by_rule"].value(rule, 0), 0) << rule;
  // No attempt was paid twice: every answer the server gave is one recorded call, and no call
  // identity (request, job, stage, attempt, and the max_tokens it was sent with) has two. (Equal
  // bytes may be asked again by a later attempt: that is a new request.)
  EXPECT_EQ(stats["answered"].get<std::int64_t>(),
            site.scalar("SELECT count(*) FROM llm_calls WHERE status <> 'replayed' AND "
                        "http_status = 200"));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM (SELECT request_sha256 FROM llm_calls WHERE "
                        "status <> 'replayed' AND http_status = 200 GROUP BY 1, "
                        "json_extract(kf_text(request_text), '$.max_tokens') HAVING count(*) > 1)"),
            0);
  // Every job the faults did not end reached the verifier queue, and all ok answers carry the
  // prompt identity of their run.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'"), 2 * kN - 4);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state NOT IN ('verify_queued', "
                        "'failed')"),
            0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs o JOIN runs r ON r.id = o.run_id "
                        "WHERE o.prompt_version <> r.pipeline"),
            0);

  auto status = site.kforge({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto st = json::parse(status.out);
  EXPECT_EQ(st["samples"], kN);
  ASSERT_EQ(st["runs"].size(), 2u);
  EXPECT_EQ(st["runs"][1]["tag"], "v2");
  EXPECT_EQ(st["runs"][1]["progress"]["past_llm"], kN);
  EXPECT_GT(st["runs"][1]["tokens"]["prompt"].get<std::int64_t>(), 20'000);
  bool saw_parse = false;
  for (const auto& e : st["runs"][1]["errors"]) saw_parse = saw_parse || e["kind"] == "parse";
  EXPECT_TRUE(saw_parse) << st["runs"][1]["errors"].dump();

  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), 0) << d->log();
  EXPECT_NE(d->log().find("kforged stopped"), std::string::npos);
}

TEST(Daemon, KillNineAtSeveralPointsEndsWithTheUninterruptedOutputsAndNoRepeatedAnswer) {
  // The reference: one uninterrupted run.
  Site ref(script("fake_llm_faults.json", 40));
  ref.import_corpus();
  ref.create_run("v2", "v2");
  {
    auto d = ref.start_daemon();
    ASSERT_EQ(ref.wait_for(kPastLlm, kN), kN) << d->log();
    d->signal(SIGTERM);
    ASSERT_EQ(d->wait(20s), 0);
  }

  Site site(script("fake_llm_faults.json", 40));
  site.import_corpus();
  site.create_run("v2", "v2");
  const char* ok_outputs = "SELECT count(*) FROM stage_outputs WHERE status = 'ok'";
  const std::vector<std::int64_t> points = {8, 20, 34, 48, 62};
  json before = json::object();  // the provider's answer counts at that moment
  std::int64_t lost_in_flight = 0;
  // The answers the killed daemon stored (indexed or not: migration 0052's batches come after
  // the checkpoints), which the next one must index at its start.
  std::int64_t stored_at_kill = 0, unindexed_at_kills = 0;
  const char* indexed_upto = "SELECT outputs_upto FROM search_indexed";
  for (std::size_t i = 0; i <= points.size(); ++i) {
    auto d = site.start_daemon();
    EXPECT_GE(site.wait_for(indexed_upto, stored_at_kill), stored_at_kill)
        << "the answers a killed daemon stored are indexed by the next\n"
        << d->log();
    if (i < points.size()) {
      // Killed past the point and while this daemon holds leases: the previous daemon may have
      // stored past this point already before its kill, and a new daemon's first moments (its
      // reclaim of the dead owner's leases) hold no call in flight.
      const std::string mine =
          "(SELECT count(*) FROM jobs WHERE state = 'leased' AND "
          "lease_owner LIKE '%:" +
          std::to_string(d->pid()) + "')";
      ASSERT_EQ(site.wait_for(std::string("SELECT (") + ok_outputs +
                                  ") >= " + std::to_string(points[i]) + " AND " + mine + " > 0",
                              1),
                1)
          << "point " << points[i] << ", " << site.scalar(ok_outputs) << " ok outputs\n"
          << d->log();
      d->kill9();
      EXPECT_GT(site.scalar("SELECT count(*) FROM jobs WHERE state = 'leased'"), 0)
          << "killed with calls in flight";
      stored_at_kill = site.scalar("SELECT coalesce(max(id), 0) FROM stage_outputs");
      unindexed_at_kills += stored_at_kill - site.scalar(indexed_upto);
      // The provider finishes what it was answering to the dead daemon before we count.
      auto until = std::chrono::steady_clock::now() + 10s;
      while (site.fake().stats()["in_flight"].get<int>() > 0 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(5ms);
    } else {
      ASSERT_EQ(site.wait_for(kPastLlm, kN), kN) << d->log();
      d->signal(SIGTERM);
      ASSERT_EQ(d->wait(20s), 0) << d->log();
    }
    // Answered again since the previous kill: only what was lost in flight, never a stored one.
    json now = site.fake().stats()["answered_by_hash"];
    for (const auto& [hash, n] : now.items()) {
      std::int64_t was = before.value(hash, std::int64_t{0});
      if (n.get<std::int64_t>() > was && was > 0) {
        // Equal bytes may be a later attempt (a new call identity, asked again by design); the
        // identity check below proves no stored answer was paid for again.
        lost_in_flight += n.get<std::int64_t>() - was;
      }
    }
    before = now;
  }
  // Every answer that holds code is in the search index once the last daemon stopped.
  EXPECT_EQ(site.scalar(indexed_upto), site.scalar("SELECT max(id) FROM stage_outputs"));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM search_output_texts t WHERE NOT EXISTS "
                        "(SELECT 1 FROM search_text s WHERE s.rowid = t.text_id)"),
            0);
  EXPECT_GT(site.scalar("SELECT count(*) FROM search_text WHERE rowid % 4 = 1"), 0);
  // Whether a kill lands between a store and its batch depends on timing (reported, not
  // asserted); SearchIndex's and DaemonSearch's tests make that case on purpose.
  std::printf("answers stored but not indexed at the kills: %lld\n",
              static_cast<long long>(unindexed_at_kills));
  // Identical results: every job's final state and every stage output, attempt by attempt.
  EXPECT_EQ(final_states(site, "v2"), final_states(ref, "v2"));
  EXPECT_EQ(outputs(site, "v2"), outputs(ref, "v2"));
  // No job or output duplicated.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs"), kN);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM (SELECT job_id, stage, attempt FROM stage_outputs "
                        "GROUP BY 1, 2, 3 HAVING count(*) > 1)"),
            0);
  // Answers repeated at all were only those lost in flight at a kill.
  // (Answers given but never recorded: their process was killed first.)
  std::int64_t repeated = site.fake().stats()["answered"].get<std::int64_t>() -
                          site.scalar(
                              "SELECT count(*) FROM llm_calls WHERE status <> 'replayed' AND "
                              "http_status = 200");
  EXPECT_LE(repeated, lost_in_flight);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM (SELECT request_sha256 FROM llm_calls WHERE "
                        "status <> 'replayed' AND http_status = 200 GROUP BY 1, "
                        "json_extract(kf_text(request_text), '$.max_tokens') HAVING count(*) > 1)"),
            0);
  EXPECT_GT(site.scalar("SELECT count(*) FROM job_events WHERE kind = 'lease_reclaimed'"), 0);
  // A kill between an answer's store and its checkpoint is replayed, not asked again; whether a
  // kill here lands in that window depends on timing, so the deterministic check is
  // ProviderTest.AnAnswerLostBeforeItsCheckpointIsReplayedAndPaidOnce.
}

TEST(Daemon, SigtermLetsCallsInFlightFinishThenExitsZero) {
  Site site(script("fake_llm_answers.json", 1500));
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "20"});
  int sock = -1;
  (void)sock;
  auto d = site.start_daemon();
  auto until = std::chrono::steady_clock::now() + 30s;
  while (site.fake().stats()["in_flight"].get<int>() < 8 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_GE(site.fake().stats()["in_flight"].get<int>(), 8) << d->log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), 0) << d->log();
  auto stats = site.fake().stats();
  std::int64_t answered = stats["answered"];
  EXPECT_GE(answered, 8);
  // Everything answered was checkpointed, nothing is left leased, and nothing new was leased.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs"), answered);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'leased'"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'queued'"), 20 - answered);
  EXPECT_EQ(stats["requests"].get<std::int64_t>(), answered);
}

TEST(Daemon, SigtermAfterTheGracePeriodReleasesTheCallsStillRunning) {
  json s = script("fake_llm_answers.json");
  s["defaults"] = {{"latency_ms", 20'000}};
  Site site(s);
  Options o;
  o.grace_ms = 300;
  site.write_config(o);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "4"});
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'leased'", 4), 4);
  // All four calls running at the provider (a leased job's call may still wait for the client's
  // slow start to let it out).
  auto until = std::chrono::steady_clock::now() + 30s;
  while (site.fake().stats()["in_flight"].get<int>() < 4 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(site.fake().stats()["in_flight"].get<int>(), 4) << d->log();
  auto t0 = std::chrono::steady_clock::now();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(10s), 0) << d->log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'queued'"), 4);
  EXPECT_NE(d->log().find("released 4 jobs whose calls had not finished (4 in flight)"),
            std::string::npos)
      << d->log();
}

TEST(Daemon, ADeadDaemonsLeasesExpireAndAnotherOwnerFinishesTheRun) {
  Site site(script("fake_llm_answers.json", 300));
  Options o;
  o.owner = "hostB";
  o.lease_ms = 1500;
  site.write_config(o);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "30"});
  auto d = site.start_daemon();
  ASSERT_GE(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'leased'", 10), 10) << d->log();
  d->kill9();
  o.owner = "hostC";  // another machine: it cannot know hostB is dead, so it waits for expiry
  site.write_config(o);
  auto t0 = std::chrono::steady_clock::now();
  auto c = site.start_daemon();
  ASSERT_EQ(site.wait_for(kPastLlm, 30), 30) << c->log();
  EXPECT_GE(site.scalar("SELECT count(*) FROM job_events WHERE kind = 'lease_expired' AND "
                        "message LIKE '%hostB:%'"),
            1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM job_events WHERE kind = 'lease_reclaimed'"), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);
  c->signal(SIGTERM);
  EXPECT_EQ(c->wait(20s), 0);
}

TEST(Daemon, RefusesARunWhosePromptChangedAndGoesOnWithTheOthers) {
  Site site(script("fake_llm_answers.json"));
  fs::path prompts = site.dir().path() / "prompts";
  fs::copy(test::source_dir() / "prompts", prompts, fs::copy_options::recursive);
  Options o;
  o.prompts_dir = prompts.string();
  site.write_config(o);
  site.import_corpus();
  site.create_run("old", "v2", {"--limit", "5"});
  site.create_run("other", "v1", {"--limit", "5"});
  test::write_text(prompts / "v2" / "analyze.md",
                   test::read_text(prompts / "v2" / "analyze.md") + "\nBe brief.\n");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE run_id = 2 AND state = "
                          "'verify_queued'",
                          5),
            5);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE run_id = 1 AND state = 'queued'"), 5);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs WHERE run_id = 1"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM job_events WHERE run_id = 1 AND kind = "
                        "'prompt_changed' AND message LIKE '%prompts/v2/analyze.md changed%'"),
            1);
  auto st = site.kforge({"status", "old"});
  EXPECT_NE(st.out.find("REFUSED by the daemon: prompts/v2/analyze.md changed"), std::string::npos)
      << st.out;
  ASSERT_EQ(site.kforge({"run", "pause", "old"}).exit_code, 0);
  auto resume = site.kforge({"run", "resume", "old"});
  EXPECT_EQ(resume.exit_code, 1);
  EXPECT_NE(resume.err.find("cannot resume: prompts/v2/analyze.md changed"), std::string::npos)
      << resume.err;
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), 0);
}

std::string http_get(int port, const std::string& path, int* status = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get(path.c_str());
  if (!res) return "";
  if (status) *status = res->status;
  return res->body;
}

// A datagram socket standing in for systemd's notification socket. Like systemd it reads all the
// time (a reader thread), so the sender's queue never fills.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("bind " + path.string());
    reader_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        char buf[4096];
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) continue;
        std::lock_guard lock(mu_);
        all_.emplace_back(buf, static_cast<std::size_t>(n));
      }
    });
  }
  ~NotifySocket() {
    stop_ = true;
    reader_.join();
    ::close(fd_);
  }
  // Datagrams not yet returned, up to the first that contains `what` (waiting up to timeout).
  std::vector<std::string> until(const std::string& what, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (true) {
      {
        std::lock_guard lock(mu_);
        for (std::size_t i = next_; i < all_.size(); ++i)
          if (all_[i].find(what) != std::string::npos) {
            std::vector<std::string> got(all_.begin() + static_cast<long>(next_),
                                         all_.begin() + static_cast<long>(i) + 1);
            next_ = i + 1;
            return got;
          }
      }
      if (std::chrono::steady_clock::now() >= end) return {};
      std::this_thread::sleep_for(10ms);
    }
  }
  std::vector<std::string> all() {
    std::lock_guard lock(mu_);
    return all_;
  }

 private:
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> all_;
  std::size_t next_ = 0;
};

TEST(Daemon, SpeaksTheSystemdProtocolServesMetricsAndReloadsOnSighup) {
  Site site(script("fake_llm_answers.json", 30));
  Options o;
  int port = free_port();
  o.http_listen = "127.0.0.1:" + std::to_string(port);
  site.write_config(o);
  site.import_corpus();
  site.create_run("v2", "v2", {"--limit", "10"});
  NotifySocket sock(site.dir().path() / "notify");
  auto d = site.start_daemon(
      {"NOTIFY_SOCKET=" + (site.dir().path() / "notify").string(), "WATCHDOG_USEC=200000"});
  auto first = sock.until("READY=1", 20s);
  ASSERT_FALSE(first.empty()) << d->log();
  EXPECT_NE(first.back().find("READY=1\nSTATUS="), std::string::npos) << first.back();
  EXPECT_NE(first.back().find("MAINPID=" + std::to_string(d->pid())), std::string::npos);
  ASSERT_EQ(site.wait_for(kPastLlm, 10), 10) << d->log();
  // Past the LLM stages, waiting for a verifier (daemon.verify is off): none ended, as kforge
  // status counts them.
  auto more =
      sock.until("v2 0/10 jobs ended (0%), 10 past the LLM stages, 10 at the verifier", 10s);
  ASSERT_FALSE(more.empty());
  EXPECT_NE(more.back().find(
                "STATUS=v2 0/10 jobs ended (0%), 10 past the LLM stages, 10 at the verifier; "),
            std::string::npos)
      << more.back();
  // WATCHDOG_USEC=200000: a ping every 100 ms while the loop steps.
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(sock.until("WATCHDOG=1", 5s).empty()) << k;

  int status = 0;
  std::string health = http_get(port, "/healthz", &status);
  EXPECT_EQ(status, 200) << health;
  EXPECT_NE(health.find("\"status\":\"ok\""), std::string::npos) << health;
  std::this_thread::sleep_for(1200ms);  // the metrics page is refreshed every second
  std::string metrics = http_get(port, "/metrics");
  for (const char* line : {"kforge_jobs{run=\"v2\",state=\"verify_queued\"} 10",
                           "kforge_stage_outputs_total{stage=\"analyze\",status=\"ok\"} 10",
                           "kforge_llm_requests_total{outcome=\"ok\"} 20",
                           "kforge_llm_request_duration_seconds_bucket{le=\"+Inf\"} 20",
                           "kforge_llm_request_duration_seconds_count 20",
                           "# TYPE kforge_llm_request_duration_seconds histogram",
                           "kforge_llm_tokens_total{kind=\"prompt\"}"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;

  o.max_in_flight = 3;
  o.http_listen = "127.0.0.1:" + std::to_string(port);
  site.write_config(o);
  d->signal(SIGHUP);
  auto until = std::chrono::steady_clock::now() + 10s;
  while (d->log().find("SIGHUP: reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  ASSERT_NE(d->log().find("up to 3 stage calls in flight, 3 LLM requests"), std::string::npos)
      << d->log();
  // The new limits hold: a new run of 10 samples (each answer takes 30 ms) never has more than
  // 3 requests at the provider at once; under the old limit of 16 all 10 would go together.
  site.fake().reset_stats();
  site.create_run("after", "v1", {"--limit", "10"});
  ASSERT_EQ(site.wait_for(kPastLlm, 20), 20) << d->log();
  auto after = site.fake().stats();
  EXPECT_EQ(after["answered"], 10);
  EXPECT_LE(after["max_in_flight"].get<int>(), 3);
  EXPECT_GE(after["max_in_flight"].get<int>(), 2) << "the requests did not overlap at all";

  d->signal(SIGTERM);
  auto stopping = sock.until("STOPPING=1", 10s);
  ASSERT_FALSE(stopping.empty());
  EXPECT_NE(stopping.back().find("STOPPING=1"), std::string::npos);
  EXPECT_EQ(d->wait(20s), 0);
}

TEST(Daemon, ASecondDaemonOnTheSameDatabaseIsRefused) {
  Site site(script("fake_llm_answers.json"));
  auto a = site.start_daemon();
  auto until = std::chrono::steady_clock::now() + 20s;
  while (a->log().find("ready") == std::string::npos && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  auto b = site.start_daemon();
  EXPECT_EQ(b->wait(20s), 1);
  EXPECT_NE(b->log().find("another kforged (pid " + std::to_string(a->pid()) + ") is using"),
            std::string::npos)
      << b->log();
  a->signal(SIGTERM);
  EXPECT_EQ(a->wait(20s), 0);
}

TEST(Daemon, TheLockFollowsTheFileThroughASymlinkAndAHardLink) {
  Site site(script("fake_llm_answers.json"));
  auto a = site.start_daemon();
  auto until = std::chrono::steady_clock::now() + 20s;
  while (a->log().find("ready") == std::string::npos && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  ASSERT_NE(a->log().find("ready"), std::string::npos) << a->log();
  const fs::path symlink = site.dir() / "symlink.db";
  fs::create_symlink(site.db_path(), symlink);
  fs::create_directories(site.dir() / "elsewhere");
  const fs::path hardlink = site.dir() / "elsewhere" / "hardlink.db";
  fs::create_hard_link(site.db_path(), hardlink);
  for (const fs::path& other : {symlink, hardlink}) {
    auto b = site.start_daemon({"KFORGE_DB=" + other.string()});
    EXPECT_EQ(b->wait(20s), 1) << other;
    EXPECT_NE(b->log().find("another kforged (pid " + std::to_string(a->pid()) + ") is using " +
                            other.string()),
              std::string::npos)
        << b->log();
  }
  a->signal(SIGTERM);
  ASSERT_EQ(a->wait(20s), 0);
  // The lock goes with the process: the next daemon, through the hard link, starts.
  auto c = site.start_daemon({"KFORGE_DB=" + hardlink.string()});
  until = std::chrono::steady_clock::now() + 20s;
  while (c->log().find("ready") == std::string::npos && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_NE(c->log().find("ready"), std::string::npos) << c->log();
  c->signal(SIGTERM);
  EXPECT_EQ(c->wait(20s), 0);
}

TEST(Notifier, SendsDatagramsToAPathOrAnAbstractSocketAndReadsTheWatchdog) {
  test::TempDir dir;
  NotifySocket sock(dir / "n.sock");
  std::map<std::string, std::string> env = {{"NOTIFY_SOCKET", (dir / "n.sock").string()},
                                            {"WATCHDOG_USEC", "3000000"},
                                            {"WATCHDOG_PID", std::to_string(::getpid())}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  Notifier n(lookup);
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), std::chrono::microseconds(1'500'000));
  ASSERT_TRUE(n.notify("READY=1\nSTATUS=hello").ok());
  auto got = sock.until("READY", 2s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "READY=1\nSTATUS=hello");

  env["WATCHDOG_PID"] = "1";  // meant for another process
  EXPECT_EQ(Notifier(lookup).watchdog_interval().count(), 0);
  env.erase("NOTIFY_SOCKET");
  Notifier off(lookup);
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.notify("READY=1").ok());
  env["NOTIFY_SOCKET"] = (dir / "missing.sock").string();
  auto err = Notifier(lookup).notify("READY=1");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("missing.sock"), std::string::npos);

  // The abstract namespace ('@name').
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = "kforge-test-" + std::to_string(::getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())),
            0);
  env["NOTIFY_SOCKET"] = "@" + name;
  ASSERT_TRUE(Notifier(lookup).notify("WATCHDOG=1").ok());
  char buf[64];
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  ssize_t len = ::recv(fd, buf, sizeof buf, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(len)), "WATCHDOG=1");
  ::close(fd);
}

// A verifier that cannot start is an alert in `kforge status`, with its reason, and the run's
// entry says its samples wait for the verifier.
TEST(DaemonVerifier, AVerifierThatCannotStartIsAnAlertAndTheRunSaysItsSamplesWait) {
  Site site(script("fake_llm_answers.json"));
  Options o;
  o.verify = true;
  site.write_config(o);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "5"});
  auto d = site.start_daemon({"KFORGE_VERIFIER_PYTHON=/nonexistent/python3"});
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'verify_queued'", 5, 60s), 5)
      << d->log();
  std::string out;
  auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    auto st = site.kforge({"status"});
    ASSERT_EQ(st.exit_code, 0) << st.err;
    out = st.out;
    if (out.find("ALERT") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(out.find("ALERT      verifier"), std::string::npos) << out << d->log();
  EXPECT_NE(out.find("/nonexistent/python3"), std::string::npos) << out;
  EXPECT_NE(out.find("5 samples wait for the verifier"), std::string::npos) << out;
  auto js = site.kforge({"status", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_FALSE(json::parse(js.out)["verifier_alerts"].empty()) << js.out;
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(60s), std::optional<int>(0)) << d->log();
}

}  // namespace
}  // namespace kforge::pipeline::e2e

namespace kforge::pipeline::e2e {
namespace {

// The verifier in the daemon: generated samples leave 'verify_queued' for the pool and end
// 'done' with exactly one verdict each, also across a kill -9 while samples are being verified.
// Here the samples run in real Python without torch or Triton, so their verdicts are errors;
// what is checked is the hand-off, not the kernels.
TEST(DaemonVerifier, GeneratedSamplesAreVerifiedOnceAcrossAKill) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  Site site(script("fake_llm_answers.json"));
  Options o;
  o.verify = true;
  site.write_config(o);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "12", "--repair-rounds", "0"});
  const std::string done = "SELECT count(*) FROM jobs WHERE state = 'done'";
  const std::string verifying = "SELECT count(*) FROM jobs WHERE state = 'verifying'";
  {
    auto d = site.start_daemon();
    ASSERT_GE(site.wait_for(done, 3, 120s), 3) << d->log();
    d->kill9();
  }
  // The kill caught samples being verified: their jobs are still 'verifying' under the dead
  // daemon's lease, with no verdict.
  const std::int64_t at_kill = site.scalar(verifying);
  EXPECT_GT(at_kill, 0) << "the kill came when nothing was being verified";
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs j WHERE j.state = 'verifying' AND EXISTS "
                        "(SELECT 1 FROM verifications v WHERE v.job_id = j.id)"),
            0);
  const std::int64_t done_at_kill = site.scalar(done);
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(done, 12, 180s), 12) << d->log();
  // One verdict per job, none lost or doubled by the kill, each with the script that ran.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 12);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE attempt = 1"), 12)
      << "a job verified before the kill was verified again (" << done_at_kill << " were done)";
  EXPECT_EQ(site.scalar("SELECT count(DISTINCT job_id) FROM verifications"), 12);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE verdict NOT IN ('passed', "
                        "'failed', 'error', 'timeout', 'crashed', 'invalid', 'skipped')"),
            0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE result_json IS NULL"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE coalesce(detail, '') = ''"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'verifying' OR lease_owner IS "
                        "NOT NULL"),
            0);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(60s), std::optional<int>(0)) << d->log();
  auto status = site.kforge({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
}

// With the verifier off, generated samples wait in 'verify_queued'.
TEST(DaemonVerifier, OffLeavesSamplesQueued) {
  Site site(script("fake_llm_answers.json"));
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "5"});
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'verify_queued'", 5, 60s), 5)
      << d->log();
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(60s), std::optional<int>(0)) << d->log();
}

// Answers a daemon stored and was killed before indexing (written here by the pipeline's own
// lease and checkpoint, under a dead owner, and never indexed): the viewer's search finds them
// meanwhile, and the next kforged indexes them as it starts (migration 0052).
TEST(DaemonSearch, AnswersStoredButNotIndexedAreFoundAndIndexedByTheNextStart) {
  Site site(script("fake_llm_answers.json"));
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "5"});
  std::int64_t newest = 0;
  {
    auto db = site.open_db();
    ManualClock clock;
    JobStore jobs(*db, clock, "gone-host:1");
    auto run = jobs.run_by_tag("v1");
    ASSERT_TRUE(run.ok() && run->has_value());
    auto leased = jobs.lease((*run)->id, 2, 60'000);
    ASSERT_TRUE(leased.ok());
    ASSERT_EQ(leased->size(), 2u);
    for (const auto& job : *leased) {
      StageOutput o;
      o.stage = job.stage;
      o.prompt_version = "v1";
      o.prompt_sha256 = "p";
      o.request_json = "{}";
      o.parsed_json = R"({"kernel_wrapper": "def stored_unindexed_)" + std::to_string(job.id) +
                      R"((x): pass", "unitest_code": "pass"})";
      NextState next;
      next.state = store::JobState::failed;
      next.stage = job.stage;
      next.error_kind = "test";
      next.error = "stored by the test";
      auto held = jobs.checkpoint(job, o, next, {});
      ASSERT_TRUE(held.ok() && *held) << (held.ok() ? "lease lost" : held.error().message);
    }
    newest = test::db_scalar(*db, "SELECT max(id) FROM stage_outputs");
    EXPECT_EQ(test::db_scalar(*db, "SELECT outputs_upto FROM search_indexed"), 0);
    auto keys = report::view(*db, {"/keys", {{"tag", "v1"}, {"q", "stored_unindexed_"}}},
                             report::ViewOptions{});
    EXPECT_EQ(std::count(keys.body.begin(), keys.body.end(), '\n'), 2) << keys.body;
  }
  auto d = site.start_daemon();
  const char* indexed =
      "SELECT count(*) FROM search_text WHERE rowid % 4 = 1 AND "
      "body LIKE '%stored_unindexed_%'";
  EXPECT_EQ(site.wait_for(indexed, 2), 2) << d->log();
  EXPECT_GE(site.wait_for("SELECT outputs_upto FROM search_indexed", newest), newest);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(60s), std::optional<int>(0)) << d->log();
  // Stopped: every answer it stored is indexed too.
  EXPECT_EQ(site.scalar("SELECT outputs_upto FROM search_indexed"),
            site.scalar("SELECT max(id) FROM stage_outputs"));
}

// kforged --help names the signals it answers and where it reads its configuration.
TEST(KforgedBinary, HelpNamesItsSignalsAndConfiguration) {
  auto r = test::run_process({test::binary("apps/kforged/kforged").string(), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"SIGTERM", "SIGINT", "SIGHUP", "$KFORGE_CONFIG", "./kforge.yaml",
                        "/etc/kforge/kforge.yaml", "KFORGE_<SECTION>_<KEY>"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

}  // namespace
}  // namespace kforge::pipeline::e2e
