// scripts/run as root: the verifier is pointed at a python3 that the sandbox's uids can start;
// and Ctrl-C in the terminal it runs in: one graceful stop, the fake provider stopped after
// kforged, no call paid twice after a restart.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "kforge/store/db.hpp"
#include "testutil.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A python3 in `dir` (a copy of a shell script: only its modes matter), with `dir`'s and the
// file's modes as given.
fs::path python_in(const fs::path& dir, fs::perms dir_mode, fs::perms file_mode) {
  fs::create_directories(dir);
  auto py = dir / "python3";
  test::write_text(py, "#!/bin/sh\nexit 0\n");
  fs::permissions(py, file_mode);
  fs::permissions(dir, dir_mode);
  return py;
}

test::ProcResult python_for_all(const std::string& path) {
  return test::run_process({(test::source_dir() / "scripts" / "lib" / "python-for-all").string()},
                           {"PATH=" + path + ":/usr/bin:/bin"});
}

TEST(RunScript, PythonForAllSkipsOneUnderAClosedFolderOrClosedToOthers) {
  test::TempDir tmp;
  const auto rwx = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                   fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(tmp.path(), rwx);  // made 0700: open it, as /usr is
  auto closed_dir = python_in(tmp.path() / "home" / "bin", fs::perms::owner_all, rwx);
  fs::permissions(tmp.path() / "home", fs::perms::owner_all);
  auto private_file =
      python_in(tmp.path() / "opt" / "bin", rwx,
                fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  auto open = python_in(tmp.path() / "usr" / "bin", rwx, rwx);
  for (const char* top : {"opt", "usr"}) fs::permissions(tmp.path() / top, rwx);

  auto r = python_for_all(closed_dir.parent_path().string() + ":" +
                          private_file.parent_path().string() + ":" + open.parent_path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, open.string() + "\n");

  // A link is judged by the file it leads to: one into the closed folder is closed too.
  auto link_dir = tmp.path() / "links";
  fs::create_directories(link_dir);
  fs::create_symlink(closed_dir, link_dir / "python3");
  r = python_for_all(link_dir.string() + ":" + open.parent_path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, open.string() + "\n");

  // Nothing open on PATH (the system's python3 aside): the script names the system's, or none.
  r = python_for_all(closed_dir.parent_path().string());
  if (r.exit_code == 0) {
    EXPECT_NE(r.out.find("/usr/bin/python3"), std::string::npos) << r.out;
  }
  EXPECT_EQ(r.out.find(tmp.path().string()), std::string::npos) << r.out;
}

// scripts/run started as a terminal starts it: in a process group of its own, the terminal's
// foreground group, which Ctrl-C signals as a whole.
class RunScriptProcess {
 public:
  RunScriptProcess(const fs::path& root, const fs::path& log) {
    std::vector<std::string> env = test::environment_with(
        {"KFORGE_RUN_NO_BUILD=1", "BUILD_DIR=build", "KFORGE_LLM_BASE_URL=", "OPENAI_API_KEY="});
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      FILE* out = std::freopen(log.c_str(), "w", stdout);
      (void)out;
      ::dup2(1, 2);
      if (::chdir(root.c_str()) != 0) _exit(127);
      std::vector<char*> envp;
      for (auto& e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      std::string script = (root / "scripts" / "run").string();
      char* argv[] = {const_cast<char*>("bash"), script.data(), nullptr};
      ::execve("/bin/bash", argv, envp.data());
      _exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~RunScriptProcess() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The terminal's Ctrl-C: SIGINT to the whole foreground process group.
  void ctrl_c() { ::kill(-pid_, SIGINT); }
  // The exit status, or -1 when it has not exited within `limit` (or died of a signal).
  int wait(std::chrono::seconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

std::int64_t count(const fs::path& db_path, const std::string& sql) {
  auto db = store::Db::open({.path = db_path.string()});
  if (!db.ok()) return -1;
  auto s = (*db)->prepare(sql);
  if (!s.ok()) return -1;
  auto row = s->step();
  return row.ok() && *row ? s->int64(0) : -1;
}

bool wait_for(const fs::path& db_path, const std::string& sql, std::int64_t n,
              std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (count(db_path, sql) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Issue 56, 6: the README's first run. Ctrl-C while calls to a provider answering in 400 ms are
// in flight: kforged sees one signal and stops gracefully (every call in flight answered and
// recorded), the fake provider stops after it, the script exits 0; after a restart to the end
// no call is paid twice; an idle Ctrl-C exits 0 too.
TEST(RunScript, OneCtrlCIsOneGracefulStopAndNoCallIsPaidTwice) {
  test::TempDir tmp;
  const fs::path root = tmp.path() / "kforge";
  const fs::path src = test::source_dir();
  fs::create_directories(root / "scripts");
  fs::copy_file(src / "scripts" / "run", root / "scripts" / "run");
  fs::copy(src / "scripts" / "lib", root / "scripts" / "lib", fs::copy_options::recursive);
  test::write_text(root / "scripts" / "bootstrap", "#!/bin/sh\nexit 0\n");
  fs::permissions(root / "scripts" / "bootstrap", fs::perms::owner_all);
  // The example answers, at 400 ms each.
  std::string answers =
      test::read_text(src / "apps" / "kforge-fake-llm" / "examples" / "pipeline.yaml");
  auto at = answers.find("latency_ms: 5\n");
  ASSERT_NE(at, std::string::npos);
  answers.replace(at, 14, "latency_ms: 400\n");
  fs::create_directories(root / "apps" / "kforge-fake-llm" / "examples");
  test::write_text(root / "apps" / "kforge-fake-llm" / "examples" / "pipeline.yaml", answers);
  fs::create_directory_symlink(test::build_dir(), root / "build");
  const fs::path db = root / "var" / "kforge.db";
  fs::create_directories(root / "var");
  test::write_text(root / "kforge.yaml", "store:\n  path: " + db.string() +
                                             "\npipeline:\n  max_in_flight: 16\n"
                                             "daemon:\n  verify: false\n  http_listen: \"\"\n"
                                             "  shutdown_grace_ms: 30000\n");
  auto kforge = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {test::binary("apps/kforge/kforge").string(), "--config",
                               (root / "kforge.yaml").string()});
    return test::run_process(args);
  };
  auto imported =
      kforge({"import", test::small_corpus().string(), "--map",
              "code=output,description_1=simp_instru,description_2=comp_instru", "--key", "file"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto created = kforge(
      {"run", "create", "first", "--pipeline", "v2", "--repair-rounds", "0", "--limit", "12"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string past_llm =
      "SELECT count(*) FROM jobs WHERE state IN ('verify_queued', 'failed', 'done')";
  const fs::path stats = root / "var" / "fake-llm-stats.json";
  {
    RunScriptProcess run(root, tmp.path() / "run1.log");
    ASSERT_TRUE(wait_for(db, "SELECT count(*) FROM llm_calls", 3, std::chrono::seconds(60)))
        << test::read_text(tmp.path() / "run1.log");
    ASSERT_LT(count(db, past_llm), 12) << "calls still to come when Ctrl-C is pressed";
    run.ctrl_c();
    int rc = run.wait(std::chrono::seconds(60));
    std::string log = test::read_text(tmp.path() / "run1.log");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("stopping: no new leases"), std::string::npos) << log;
    // One signal reached kforged: no second one cut the grace and released calls unfinished.
    EXPECT_EQ(log.find("whose calls had not finished"), std::string::npos) << log;
    // The script's own KFORGE_RUN_NO_BUILD is not taken for a mistyped kforge variable.
    EXPECT_EQ(log.find("is not a kforge variable"), std::string::npos) << log;
  }
  // The fake stopped after kforged: every answer it gave was recorded, no call failed.
  ASSERT_TRUE(fs::exists(stats)) << "the fake provider was not stopped";
  auto first = nlohmann::json::parse(test::read_text(stats));
  EXPECT_EQ(count(db, "SELECT count(*) FROM llm_calls WHERE status = 'ok'"),
            first["answered"].get<std::int64_t>());
  EXPECT_EQ(count(db, "SELECT count(*) FROM llm_calls WHERE status <> 'ok'"), 0);
  fs::rename(stats, tmp.path() / "stats1.json");

  // Restarted: to the end, then an idle Ctrl-C.
  {
    RunScriptProcess run(root, tmp.path() / "run2.log");
    ASSERT_TRUE(wait_for(db, past_llm, 12, std::chrono::seconds(120)))
        << test::read_text(tmp.path() / "run2.log");
    run.ctrl_c();
    EXPECT_EQ(run.wait(std::chrono::seconds(60)), 0) << test::read_text(tmp.path() / "run2.log");
  }
  ASSERT_TRUE(fs::exists(stats));
  auto second = nlohmann::json::parse(test::read_text(stats));
  std::map<std::string, std::int64_t> paid;
  for (const auto* s : {&first, &second})
    for (const auto& [hash, n] : (*s)["answered_by_hash"].items())
      paid[hash] += n.get<std::int64_t>();
  std::int64_t twice = 0;
  for (const auto& [hash, n] : paid) twice += n > 1 ? 1 : 0;
  EXPECT_EQ(twice, 0) << "calls paid twice after the restart";
  EXPECT_EQ(count(db, "SELECT count(*) FROM llm_calls WHERE status = 'ok'"),
            static_cast<std::int64_t>(paid.size()));
}

}  // namespace
}  // namespace kforge
