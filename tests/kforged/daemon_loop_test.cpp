// kforged's main loop driven step by step: a ManualClock, a real SQLite database in a temp dir,
// the real sd_notify protocol to a datagram socket the test reads, and a provider (the outside
// world) behind the gateway that answers only when the test says so.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <mutex>

#include "daemon_loop.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::daemon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The outside world: a provider that holds every request until answered.
class HeldProvider final : public pipeline::LlmGateway {
 public:
  std::string request_sha256(const std::string& model, const llm::ChatRequest& req) override {
    return sha256_hex(request_json(model, req));
  }
  std::string request_json(const std::string& model, const llm::ChatRequest& req) override {
    json m = json::array();
    for (const auto& x : req.messages) m.push_back({{"role", x.role}, {"content", x.content}});
    return json{{"model", model}, {"messages", m}}.dump();
  }
  void submit(const std::string&, llm::ChatRequest, llm::Callback done) override {
    std::lock_guard lock(mu_);
    held_.push_back(std::move(done));
  }
  void reload_limits(const llm::LlmConfig& cfg) override {
    reloaded_max_in_flight_ = cfg.max_in_flight;
  }
  llm::Stats stats() const override { return {}; }
  void shutdown(std::chrono::milliseconds) override {}

  std::size_t held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  // Fails every held call (a transient provider error), as an outage would.
  void fail_all() {
    std::deque<llm::Callback> calls;
    {
      std::lock_guard lock(mu_);
      calls.swap(held_);
    }
    for (auto& done : calls)
      done(Error("http", "POST http://fake/v1/chat/completions: 503", Transient::yes));
  }
  int reloaded_max_in_flight_ = -1;

 private:
  std::mutex mu_;
  std::deque<llm::Callback> held_;
};

// systemd's end of sd_notify: a datagram socket the daemon writes to.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
  }
  ~NotifySocket() { ::close(fd_); }
  // Every message received since the last call.
  std::vector<std::string> take() {
    std::vector<std::string> out;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof buf, 0)) > 0)
      out.emplace_back(buf, static_cast<std::size_t>(n));
    return out;
  }
  static int count(const std::vector<std::string>& msgs, const std::string& prefix) {
    int n = 0;
    for (const auto& m : msgs) n += m.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class DaemonLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "kforge.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    jobs_ = std::make_unique<pipeline::JobStore>(*db_, clock_, "hostA:1");
    cfg_.source = "(test)";
    cfg_.pipeline.max_in_flight = 4;
    cfg_.pipeline.idle_poll_ms = 1'000;
    cfg_.daemon.status_interval_ms = 60'000;
    cfg_.daemon.shutdown_grace_ms = 10'000;
    auto lib = pipeline::PromptLibrary::load(prompts_dir());
    ASSERT_TRUE(lib.ok()) << lib.error().message;
    auto prompts = std::make_unique<pipeline::PromptLibrary>(std::move(*lib));
    sched_ =
        std::make_unique<pipeline::Scheduler>(*jobs_, provider_, *prompts, clock_, cfg_.pipeline);
    // WATCHDOG_USEC of 2 s: a WATCHDOG=1 every second.
    std::map<std::string, std::string> env = {{"NOTIFY_SOCKET", socket_path()},
                                              {"WATCHDOG_USEC", "2000000"}};
    notifier_ = std::make_unique<pipeline::Notifier>(
        [env](const std::string& k) -> std::optional<std::string> {
          auto it = env.find(k);
          if (it == env.end()) return std::nullopt;
          return it->second;
        });
    loop_ = std::make_unique<DaemonLoop>(
        DaemonLoop::Parts{*db_, *sched_, provider_, *notifier_, clock_, shared_},
        config_path().string(), cfg_, prompts_dir(), std::move(prompts));
  }

  std::filesystem::path prompts_dir() const { return test::source_dir() / "prompts"; }
  std::filesystem::path config_path() const { return dir_ / "kforge.yaml"; }
  std::string socket_path() const { return (dir_ / "notify.sock").string(); }

  // A run of n samples through the v2 pipeline: its first calls go to the provider. Created on
  // the loop's own connection, or (elsewhere) on another one, as `kforge run create` would.
  void start_run(int n, bool elsewhere = false) {
    std::unique_ptr<store::Db> other;
    if (elsewhere) {
      store::OpenOptions o;
      o.path = (dir_ / "kforge.db").string();
      auto db = store::Db::open(o);
      ASSERT_TRUE(db.ok()) << db.error().message;
      other = std::move(*db);
    }
    store::Db& db = elsewhere ? *other : *db_;
    pipeline::JobStore jobs(db, clock_, "cli");
    store::Samples samples(db);
    for (int i = 0; i < n; ++i) {
      store::SampleRow r;
      r.key = "s" + std::to_string(i);
      r.code = "import triton\n\n@triton.jit\ndef k(X):\n    pass\n# " + r.key + "\n";
      r.code_sha256 = sha256_hex(r.code);
      r.record_json = json{{"key", r.key}}.dump();
      r.source = "test";
      r.source_index = i;
      ASSERT_TRUE(samples.insert(r, clock_.wall_ms()).ok());
    }
    auto lib = pipeline::PromptLibrary::load(prompts_dir());
    ASSERT_TRUE(lib.ok());
    const pipeline::PipelineSpec* spec = *lib->pipeline("v2");
    pipeline::NewRun run;
    run.tag = "a";
    run.pipeline = "v2";
    run.model = "fake-model";
    run.first_stage = spec->first_stage();
    run.prompts = spec->identities();
    run.sample_ids = *jobs.sample_ids(-1);
    ASSERT_TRUE(jobs.create_run(run).ok());
  }

  // Runs SQL on a connection of its own (another process's view of the database).
  void exec_elsewhere(const std::string& sql) {
    store::OpenOptions o;
    o.path = (dir_ / "kforge.db").string();
    auto other = store::Db::open(o);
    ASSERT_TRUE(other.ok()) << other.error().message;
    ASSERT_TRUE((*other)->exec(sql).ok()) << sql;
  }

  test::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<pipeline::JobStore> jobs_;
  HeldProvider provider_;
  app::Config cfg_;
  std::unique_ptr<pipeline::Scheduler> sched_;
  NotifySocket systemd_{socket_path()};
  std::unique_ptr<pipeline::Notifier> notifier_;
  Shared shared_;
  std::unique_ptr<DaemonLoop> loop_;
};

TEST_F(DaemonLoopTest, TheWatchdogIsFedOnlyWhileStepsSucceed) {
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "WATCHDOG=1"), 0);  // not due yet
  clock_.advance(1s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "WATCHDOG=1"), 1);

  // The database breaks under the loop: steps fail, back off on the clock, and starve the
  // watchdog, so systemd restarts a daemon that cannot work.
  exec_elsewhere("ALTER TABLE jobs RENAME TO jobs_away");
  for (int i = 1; i <= 3; ++i) {
    clock_.advance(6s);
    auto before = clock_.steady_now();
    ASSERT_TRUE(loop_->step());
    EXPECT_EQ(loop_->consecutive_errors(), i);
    EXPECT_EQ(clock_.steady_now() - before, std::chrono::milliseconds(100 * i)) << "back-off";
    EXPECT_EQ(NotifySocket::count(systemd_.take(), "WATCHDOG=1"), 0) << i;
  }
  {
    std::lock_guard l(shared_.mu);
    EXPECT_NE(shared_.last_error.find("jobs"), std::string::npos) << shared_.last_error;
  }
  // Repaired: the next step succeeds and feeds it again.
  exec_elsewhere("ALTER TABLE jobs_away RENAME TO jobs");
  clock_.advance(6s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->consecutive_errors(), 0);
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "WATCHDOG=1"), 1);
  std::lock_guard l(shared_.mu);
  EXPECT_EQ(shared_.last_step_wall_ms, clock_.wall_ms());
}

TEST_F(DaemonLoopTest, MetricsAndStatusAreRefreshedOnTheirIntervals) {
  start_run(3);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(sched_->in_flight(), 3);
  {
    std::lock_guard l(shared_.mu);
    EXPECT_NE(shared_.metrics.find("kforge_uptime_seconds 0"), std::string::npos)
        << shared_.metrics;
    EXPECT_EQ(shared_.in_flight, 3);
  }
  clock_.advance(1500ms);
  ASSERT_TRUE(loop_->step());
  {
    std::lock_guard l(shared_.mu);
    EXPECT_NE(shared_.metrics.find("kforge_uptime_seconds 1.5"), std::string::npos)
        << shared_.metrics;
  }
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "STATUS="), 0);  // every 60 s here
  clock_.advance(60s);
  ASSERT_TRUE(loop_->step());
  auto msgs = systemd_.take();
  ASSERT_EQ(NotifySocket::count(msgs, "STATUS="), 1);
  for (const auto& m : msgs)
    if (m.rfind("STATUS=", 0) == 0) {
      EXPECT_NE(m.find("a 0/3 jobs ended (0%), 0 past the LLM stages, 0 at the verifier"),
                std::string::npos)
          << m;
    }
  EXPECT_EQ(loop_->next_wait(), 1000ms);  // idle_poll_ms; the watchdog's 1 s is not shorter
}

// With a change watch, an idle loop does not look for work on every step: only when another
// connection committed (the watch calls notice_db_change and data_version moved), or after
// kIdleLook. Its own writes, or a watch event with nothing committed elsewhere, do not count.
TEST_F(DaemonLoopTest, AnIdleWatchedLoopLooksForWorkOnlyWhenAnotherConnectionCommitted) {
  loop_->set_change_watch(true);
  ASSERT_TRUE(loop_->step());  // the first step looks
  EXPECT_EQ(loop_->quiet_steps(), 0u);
  clock_.advance(1s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->quiet_steps(), 1u);
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "WATCHDOG=1"), 1) << "quiet steps feed it";

  // `kforge run create` commits on its own connection; until the watch says so, nothing looks.
  start_run(2, /*elsewhere=*/true);
  clock_.advance(1s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 0u);
  EXPECT_EQ(loop_->next_wait(), 1000ms) << "the watchdog's interval, not idle_poll_ms";
  loop_->notice_db_change();
  EXPECT_EQ(loop_->next_wait(), 0ms);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 2u) << "picked up on the change";
  EXPECT_EQ(loop_->quiet_steps(), 2u);
  provider_.fail_all();  // back off: the calls end, the jobs wait
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(sched_->in_flight(), 0);
}

TEST_F(DaemonLoopTest, AnIdleWatchedLoopLooksAgainAfterItsIdleLookWithoutAChange) {
  loop_->set_change_watch(true);
  ASSERT_TRUE(loop_->step());
  // Work written on the loop's own connection moves no data_version: a watch event alone is not
  // a reason to look, but the idle look is.
  start_run(3);
  loop_->notice_db_change();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 0u);
  clock_.advance(DaemonLoop::kIdleLook - 1s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 0u);
  clock_.advance(1s);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 3u);
}

TEST_F(DaemonLoopTest, WithoutAWatchAnIdleLoopPollsAsBefore) {
  ASSERT_TRUE(loop_->step());
  start_run(2, /*elsewhere=*/true);
  clock_.advance(1s);  // idle_poll_ms
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(provider_.held(), 2u);
  EXPECT_EQ(loop_->quiet_steps(), 0u);
}

TEST_F(DaemonLoopTest, AStopDrainsUntilNothingIsInFlight) {
  start_run(2);
  ASSERT_TRUE(loop_->step());
  ASSERT_EQ(provider_.held(), 2u);
  loop_->request_stop();
  EXPECT_TRUE(loop_->step()) << "calls in flight get the grace period";
  EXPECT_TRUE(sched_->draining());
  EXPECT_EQ(loop_->drain_deadline(), clock_.steady_now() + 10s);
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "STOPPING=1"), 1);
  EXPECT_EQ(loop_->next_wait(), 100ms);
  // The calls end (the provider fails them); once checkpointed, nothing is in flight.
  provider_.fail_all();
  EXPECT_FALSE(loop_->step());
  EXPECT_EQ(sched_->in_flight(), 0);
}

TEST_F(DaemonLoopTest, TheGracePeriodEndsTheDrain) {
  start_run(2);
  ASSERT_TRUE(loop_->step());
  loop_->request_stop();
  EXPECT_TRUE(loop_->step());
  clock_.advance(9'999ms);
  EXPECT_TRUE(loop_->step());
  clock_.advance(1ms);
  EXPECT_FALSE(loop_->step()) << "grace spent";
  EXPECT_EQ(sched_->in_flight(), 2);  // main() releases their leases
}

TEST_F(DaemonLoopTest, ASecondStopEndsTheGraceAtOnce) {
  start_run(2);
  ASSERT_TRUE(loop_->step());
  loop_->request_stop();
  EXPECT_TRUE(loop_->step());
  loop_->request_stop();
  EXPECT_FALSE(loop_->step());
}

TEST_F(DaemonLoopTest, AReloadAppliesTheFileAndABadFileKeepsTheCurrentConfiguration) {
  {
    std::ofstream f(config_path());
    f << "store:\n  path: " << (dir_ / "kforge.db").string()
      << "\npipeline:\n  max_in_flight: 7\ndaemon:\n  status_interval_ms: 500\nllm:\n  "
         "max_in_flight: 5\n";
  }
  loop_->request_reload();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->config().pipeline.max_in_flight, 7);
  EXPECT_EQ(loop_->config().daemon.status_interval_ms, 500);
  EXPECT_EQ(provider_.reloaded_max_in_flight_, 5);
  // Now the status line is due every 500 ms.
  systemd_.take();
  clock_.advance(500ms);
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(NotifySocket::count(systemd_.take(), "STATUS="), 1);

  {
    std::ofstream f(config_path());
    f << "pipeline:\n  max_in_flight: nonsense\n";
  }
  loop_->request_reload();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->config().pipeline.max_in_flight, 7) << "kept";
}

// The daemon's progress line agrees with kforge status: jobs at the verifier have not ended,
// so a run whose samples all wait there is at 0%, with no rate or ETA of LLM work left.
TEST_F(DaemonLoopTest, TheStatusLineCountsTheJobsThatEndedAsStatusDoes) {
  start_run(3);
  exec_elsewhere("UPDATE jobs SET state = 'verify_queued', stage = 'verify'");
  std::string line = status_line(*db_, *sched_, clock_);
  EXPECT_NE(line.find("a 0/3 jobs ended (0%), 3 past the LLM stages, 3 at the verifier"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("100%"), std::string::npos) << line;
  EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
  exec_elsewhere("UPDATE jobs SET state = 'done', stage = 'done' WHERE id = 1");
  line = status_line(*db_, *sched_, clock_);
  EXPECT_NE(line.find("a 1/3 jobs ended (33%), 3 past the LLM stages, 2 at the verifier"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace kforge::daemon
