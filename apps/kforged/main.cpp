// kforged: the pipeline daemon. It leases jobs from the database, runs their LLM stages through
// the client with bounded concurrency, checkpoints every stage, and hands generated samples to
// the verifier queue. Under systemd (Type=notify) it reports READY, STATUS, STOPPING and
// watchdog pings; it serves /healthz and /metrics on a loopback address.
//
// Signals: SIGTERM/SIGINT stop leasing, let calls in flight finish within
// daemon.shutdown_grace_ms, release the rest and exit 0 (a second one ends the grace period at
// once). SIGHUP reloads limits, concurrency and prompts from the configuration file, and the
// verifier's reloadable settings (verify::apply_reloadable).

#include <fcntl.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "daemon_loop.hpp"
#include "kforge/app/config.hpp"
#include "kforge/core/file_watch.hpp"
#include "kforge/core/log.hpp"
#include "kforge/pipeline/heartbeat.hpp"
#include "kforge/pipeline/progress.hpp"
#include "kforge/pipeline/search_index.hpp"
#include "score_server.hpp"
#include "verifier_thread.hpp"

namespace kforge::daemon {
namespace {

using namespace std::chrono_literals;

// The pid holding a flock on the file (device, inode), from /proc/locks; "?" if not found.
std::string flock_holder(dev_t dev, ino_t ino) {
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", major(dev), minor(dev),
                static_cast<unsigned long long>(ino));
  std::FILE* f = std::fopen("/proc/locks", "re");
  if (f == nullptr) return "?";
  char line[512];
  std::string pid = "?";
  while (std::fgets(line, sizeof line, f) != nullptr) {
    // "1: FLOCK  ADVISORY  WRITE 12345 08:01:123456 0 EOF"
    char kind[16] = {}, id[64] = {};
    long p = 0;
    if (std::sscanf(line, "%*s %15s %*s %*s %ld %63s", kind, &p, id) == 3 &&
        std::string_view(kind) == "FLOCK" && std::string_view(id) == want) {
      pid = std::to_string(p);
      break;
    }
  }
  std::fclose(f);
  return pid;
}

// An exclusive flock on the database file itself, held for the process's life: while we hold
// it no other kforged uses that file, whatever path (symlink, hard link, relative) it was given,
// so leases carrying this host's prefix belong to a previous, dead process of ours and can be
// taken back at once. flock locks are apart from SQLite's POSIX locks; the descriptor is never
// closed while the database is open (closing it would drop this process's POSIX locks).
Result<int> lock_database(const std::string& db_path) {
  int fd = ::open(db_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("io", db_path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    struct stat st {};
    std::string pid = ::fstat(fd, &st) == 0 ? flock_holder(st.st_dev, st.st_ino) : "?";
    // fd stays open: closing it would drop the POSIX locks SQLite holds on the file; we exit.
    return fail("conflict", "another kforged (pid " + pid + ") is using " + db_path);
  }
  return fd;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

class HttpServer {
 public:
  ~HttpServer() { stop(); }
  Status start(const std::string& listen, Shared& shared, Clock& clock, std::int64_t stale_ms) {
    auto colon = listen.rfind(':');
    std::string host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = std::stoi(listen.substr(colon + 1));
    svr_.Get("/metrics", [&shared](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(shared.mu);
      res.set_content(shared.metrics, "text/plain; version=0.0.4; charset=utf-8");
    });
    svr_.Get("/healthz",
             [&shared, &clock, stale_ms](const httplib::Request&, httplib::Response& res) {
               std::lock_guard lock(shared.mu);
               std::int64_t age = clock.wall_ms() - shared.last_step_wall_ms;
               bool ok = age <= stale_ms;
               nlohmann::json j = {{"status", ok ? "ok" : "stalled"},
                                   {"last_step_age_ms", age},
                                   {"in_flight", shared.in_flight},
                                   {"draining", shared.draining}};
               if (!shared.last_error.empty()) j["last_error"] = shared.last_error;
               res.status = ok ? 200 : 503;
               res.set_content(j.dump() + "\n", "application/json");
             });
    // httplib's default also sets SO_REUSEPORT, which lets a second kforged (on another
    // database) listen on the same port and answer half the scrapes: SO_REUSEADDR only.
    svr_.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    errno = 0;
    bound_ = port == 0 ? svr_.bind_to_any_port(host) : (svr_.bind_to_port(host, port) ? port : -1);
    if (bound_ <= 0)
      return fail("io", "daemon.http_listen: cannot listen on " + listen + ": " +
                            (errno == EADDRINUSE || errno == 0
                                 ? std::string("the address is in use (another kforged? set "
                                               "daemon.http_listen to a free port, :0 for any, "
                                               "or \"\" for none)")
                                 : std::string(std::strerror(errno))));
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    return {};
  }
  int port() const { return bound_; }
  void stop() {
    if (thread_.joinable()) {
      svr_.stop();
      thread_.join();
    }
  }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int bound_ = -1;
};

// Turns SIGTERM/SIGINT and SIGHUP (blocked in every thread) into requests to the loops: a stop
// to the main loop (which stops the verifier once it has drained), a reload to both.
struct SignalTargets {
  DaemonLoop* loop = nullptr;
  std::mutex mu;
  VerifierThread* verifier = nullptr;  // while there is one
};

void signal_thread(sigset_t set, SignalTargets* to) {
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig != SIGHUP) {
      to->loop->request_stop();
      continue;
    }
    to->loop->request_reload();
    std::lock_guard l(to->mu);
    if (to->verifier != nullptr) to->verifier->request_reload();
  }
}

// The prompt library in `dir`; null (the error logged) when it cannot be loaded.
std::unique_ptr<pipeline::PromptLibrary> load_prompts(const std::filesystem::path& dir) {
  auto lib_r = pipeline::PromptLibrary::load(dir);
  if (!lib_r.ok()) {
    spdlog::error("{}", lib_r.error().message);
    return nullptr;
  }
  return std::make_unique<pipeline::PromptLibrary>(std::move(*lib_r));
}

// This start's heartbeat row: host, pid, owner, version, whether it verifies, its metrics.
pipeline::Heartbeat::Options heartbeat_options(const app::Config& cfg, const std::string& owner,
                                               HttpServer& http) {
  pipeline::Heartbeat::Options hbo;
  hbo.host = host_name();
  hbo.pid = ::getpid();
  hbo.owner = owner;
  hbo.version = KFORGE_VERSION;
  hbo.verifies = cfg.daemon.verify;
  if (!cfg.daemon.http_listen.empty())
    hbo.metrics = cfg.daemon.http_listen.substr(0, cfg.daemon.http_listen.rfind(':')) + ":" +
                  std::to_string(http.port());
  return hbo;
}

// Stops the verifier's thread within what is left of the drain's grace, and says what it did.
void stop_verifier(VerifierThread& verifier, DaemonLoop& loop, Clock& clock,
                   SignalTargets& signal_targets) {
  auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(loop.drain_deadline() -
                                                                     clock.steady_now());
  {
    std::lock_guard l(signal_targets.mu);
    signal_targets.verifier = nullptr;
  }
  verifier.stop(std::max(grace, 0ms));
  const auto vs = verifier.stats();
  spdlog::info("verifier stopped: {} verdicts stored ({} verified), {} samples back in the queue",
               vs.stored, vs.verified, vs.requeued);
}

// The answers stored and not yet in the search index (migration 0052), in batches: at start,
// what a previous daemon stored and had not indexed when it was killed; at stop, what was stored
// since the loop's last batch (a stopped daemon leaves none). A failure is logged: the next
// batch, or the viewer's direct read of what is not indexed, covers it.
void index_stored_answers(store::Db& db) {
  if (auto st = pipeline::index_all_answers(db, DaemonLoop::kIndexBatchIds); !st.ok())
    spdlog::warn("search index: {}", st.error().message);
}

// A watch on the database's files that wakes both loops; without it they poll (logged).
Result<std::unique_ptr<FileWatch>> watch_database(const app::Config& cfg, DaemonLoop& loop,
                                                  std::unique_ptr<VerifierThread>& verifier) {
  const std::filesystem::path db_file = std::filesystem::absolute(cfg.store.path);
  auto watch = FileWatch::start(db_file.parent_path().string(),
                                {db_file.filename().string(), db_file.filename().string() + "-wal"},
                                [&loop, &verifier] {
                                  loop.notice_db_change();
                                  if (verifier) verifier->notice_db_change();
                                });
  if (watch.ok())
    loop.set_change_watch(true);
  else
    spdlog::warn("{}; an idle kforged looks for work every {} ms instead", watch.error().message,
                 cfg.pipeline.idle_poll_ms);
  return watch;
}

// /healthz and /metrics on daemon.http_listen (none when it is empty). False (logged) when the
// address cannot be served.
bool start_http(HttpServer& http, const app::Config& cfg, Shared& shared, Clock& clock) {
  std::int64_t stale_ms = std::max<std::int64_t>(30'000, 10 * cfg.pipeline.idle_poll_ms);
  if (cfg.daemon.http_listen.empty()) return true;
  auto st = http.start(cfg.daemon.http_listen, shared, clock, stale_ms);
  if (!st.ok()) {
    spdlog::error("{}", st.error().message);
    return false;
  }
  spdlog::info("serving /healthz and /metrics on {}:{}",
               cfg.daemon.http_listen.substr(0, cfg.daemon.http_listen.rfind(':')), http.port());
  return true;
}

// The scoring endpoint on score.listen (none when it is empty). False (logged) when it cannot
// be served.
bool start_scorer(const app::Config& cfg, Env& env, std::unique_ptr<ScoreServer>& scorer) {
  if (cfg.score.listen.empty()) return true;
  auto s = ScoreServer::start(cfg, env);
  if (!s.ok()) {
    spdlog::error("{}", s.error().message);
    return false;
  }
  scorer = std::move(*s);
  spdlog::info("serving POST /v1/score on {}:{}",
               cfg.score.listen.substr(0, cfg.score.listen.rfind(':')), scorer->port());
  return true;
}

int serve(const std::string& config_path, app::Config cfg) {
  setup_logging(cfg.log.level, cfg.log.file);
  for (const auto& w : cfg.warnings) spdlog::warn("{}", w);
  Env& env = default_env();
  Clock& clock = env.clock();
  auto db_r = app::open_store(cfg);
  if (!db_r.ok()) {
    spdlog::error("{}", db_r.error().message);
    return 1;
  }
  auto db = std::move(*db_r);
  auto lock = lock_database(cfg.store.path);
  if (!lock.ok()) {
    spdlog::error("{}", lock.error().message);
    return 1;
  }
  std::string prefix = cfg.daemon.owner.empty() ? host_name() : cfg.daemon.owner;
  std::string owner = prefix + ":" + std::to_string(::getpid());
  pipeline::JobStore jobs(*db, clock, owner);
  auto reclaimed = jobs.reclaim_leases(prefix + ":*");
  if (!reclaimed.ok()) {
    spdlog::error("{}", reclaimed.error().message);
    return 1;
  }
  if (*reclaimed > 0)
    spdlog::info("took back {} leases of a previous kforged on {}", *reclaimed, prefix);
  index_stored_answers(*db);

  auto dir = pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir);
  if (!dir.ok()) {
    spdlog::error("{}", dir.error().message);
    return 1;
  }
  auto prompts = load_prompts(*dir);
  if (!prompts) return 1;

  llm::ClientOptions copts;
  copts.db_path = cfg.store.path;
  copts.db_busy_timeout_ms = cfg.store.busy_timeout_ms;
  auto gateway = pipeline::make_client_gateway(cfg.llm, copts);
  pipeline::Scheduler sched(jobs, *gateway, *prompts, clock, cfg.pipeline);
  pipeline::Notifier notifier;
  Shared shared;
  DaemonLoop loop({*db, sched, *gateway, notifier, clock, shared}, config_path, cfg, *dir,
                  std::move(prompts));

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  static SignalTargets signal_targets;  // the detached thread may outlive serve()
  signal_targets.loop = &loop;
  std::thread(signal_thread, set, &signal_targets).detach();

  HttpServer http;
  if (!start_http(http, cfg, shared, clock)) return 1;

  // The scoring endpoint (score.listen): its own listener and connection.
  std::unique_ptr<ScoreServer> scorer;
  if (!start_scorer(cfg, env, scorer)) return 1;

  pipeline::Heartbeat::Options hbo = heartbeat_options(cfg, owner, http);
  if (auto lines = pipeline::start_report(*db, clock.wall_ms()); lines.ok())
    for (const auto& l : *lines) spdlog::info("{}", l);
  auto heartbeat = pipeline::Heartbeat::start(*db, clock, hbo);
  if (!heartbeat.ok()) {
    spdlog::error("heartbeat: {}", heartbeat.error().message);
    return 1;
  }
  loop.attach_heartbeat(&*heartbeat);

  auto notify = [&](const std::string& msg) {
    auto r = notifier.notify(msg);
    if (!r.ok() && r.error().is_transient())
      spdlog::debug("{}", r.error().message);
    else if (!r.ok())
      spdlog::warn("{}", r.error().message);
  };
  spdlog::info(
      "kforged {} ready: owner {}, database {}, prompts {}, up to {} stage calls in "
      "flight",
      KFORGE_VERSION, owner, cfg.store.path, dir->string(), cfg.pipeline.max_in_flight);
  notify("READY=1\nSTATUS=" + status_line(*db, sched, clock) +
         "\nMAINPID=" + std::to_string(::getpid()));

  // The verifier runs on its own thread with its own connection: the pool's step() waits on its
  // workers, and the LLM side must not wait behind it.
  std::unique_ptr<VerifierThread> verifier;
  if (cfg.daemon.verify) {
    verifier = std::make_unique<VerifierThread>(cfg, config_path, owner, prefix + ":*", env);
    std::lock_guard l(signal_targets.mu);
    signal_targets.verifier = verifier.get();
  }

  // Idle, the loops sleep until the database's files change (a kforge command's commit, the
  // verifier's, anyone's) or a timer of theirs is due; without the watch they poll.
  auto watch = watch_database(cfg, loop, verifier);

  loop.run();
  if (watch.ok()) watch->reset();
  int left = sched.in_flight();
  if (scorer) scorer->refuse_new();  // new batches: 503 while the verifier drains
  if (verifier) stop_verifier(*verifier, loop, clock, signal_targets);
  auto released = sched.release_all();
  gateway->shutdown(0ms);
  if (!released.ok())
    spdlog::error("releasing leases: {}", released.error().message);
  else if (*released > 0)
    spdlog::info("released {} jobs whose calls had not finished ({} in flight)", *released, left);
  const auto& st = sched.stats();
  spdlog::info("kforged stopped: {} stage answers checkpointed, {} jobs to verify, {} failed",
               st.checkpoints, st.jobs_to_verify, st.jobs_failed);
  if (auto hb = heartbeat->stop(); !hb.ok()) spdlog::warn("heartbeat: {}", hb.error().message);
  if (scorer) scorer->stop();
  index_stored_answers(*db);
  http.stop();
  return 0;
}

}  // namespace
}  // namespace kforge::daemon

int main(int argc, char** argv) {
  CLI::App app{"kforged: the kforge pipeline daemon.", "kforged"};
  std::string config_path;
  bool check = false;
  app.add_option("-c,--config", config_path, "Configuration file");
  app.add_flag("--check-config", check, "Validate the configuration and the prompts, then exit");
  app.set_version_flag("--version", std::string("kforged ") + KFORGE_VERSION);
  app.footer(
      "Configuration: --config FILE, else $KFORGE_CONFIG, else ./kforge.yaml, else "
      "/etc/kforge/kforge.yaml, else built-in defaults; KFORGE_<SECTION>_<KEY> variables "
      "override single keys (KFORGE_DB: store.path).\n"
      "Signals: SIGTERM or SIGINT stop leasing, let calls in flight finish within "
      "daemon.shutdown_grace_ms and exit 0 (a second one stops at once); SIGHUP reloads limits, "
      "concurrency and prompts from the configuration file (a bad file keeps the running one).\n"
      "Liveness: a heartbeat row in the database (kforge status shows it) and, with "
      "daemon.http_listen, /healthz and /metrics.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  // Block the signals before any thread exists, so only the signal thread receives them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  try {
    auto cfg = kforge::app::load_config(config_path);
    if (!cfg.ok()) {
      std::fprintf(stderr, "kforged: error: %s\n", cfg.error().message.c_str());
      return 1;
    }
    if (check) {
      for (const auto& w : cfg->warnings) std::fprintf(stderr, "kforged: warning: %s\n", w.c_str());
      auto dir = kforge::pipeline::PromptLibrary::locate(cfg->pipeline.prompts_dir);
      auto lib = dir.ok() ? kforge::pipeline::PromptLibrary::load(*dir)
                          : kforge::Result<kforge::pipeline::PromptLibrary>(dir.error());
      if (!lib.ok()) {
        std::fprintf(stderr, "kforged: error: %s\n", lib.error().message.c_str());
        return 1;
      }
      std::printf("%s: ok (prompts %s: %zu versions)\n", cfg->source.c_str(), dir->string().c_str(),
                  lib->versions().size());
      return 0;
    }
    return kforge::daemon::serve(config_path, std::move(*cfg));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforged: fatal: %s\n", e.what());
    return 1;
  }
}
