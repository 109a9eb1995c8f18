// kforged itself as an unprivileged user (as the shipped unit runs it), with daemon.verify on,
// over a run whose generated tests are hostile: they kill every process they may (kill(-1)) and
// every process whose command line mentions kforge, read every /proc/<pid>/environ for the API
// key, and write to the daemon's database by its path and through /proc/<pid>/fd. The daemon
// must stay up, store each verdict once, keep its database intact and the key out of every
// output. Run as root (CI), it makes an unprivileged user and starts kforged through setpriv.

#include <gtest/gtest.h>
#include <pwd.h>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

constexpr const char* kKey = "sk-kforge-daemon-test-key-9317";

// The hostile test every generated sample gets (the fake provider's "generate" answer).
std::string hostile_test(const std::string& db) {
  return "import os\nimport signal\n\n\n"
         "def test_kforge_wrapper():\n"
         "    try:\n"
         "        kforge_wrapper()\n"
         "    except Exception:\n"
         "        pass\n"
         "    try:\n"
         "        os.kill(-1, signal.SIGKILL)\n"
         "    except OSError:\n"
         "        pass\n"
         "    for name in os.listdir('/proc'):\n"
         "        if not name.isdigit() or int(name) == os.getpid():\n"
         "            continue\n"
         "        try:\n"
         "            with open('/proc/%s/environ' % name, 'rb') as f:\n"
         "                if b'" +
         std::string(kKey) +
         "' in f.read():\n"
         "                    print('FOUND THE KEY in', name)\n"
         "        except OSError:\n"
         "            pass\n"
         "        try:\n"
         "            for fd in os.listdir('/proc/%s/fd' % name):\n"
         "                try:\n"
         "                    with open('/proc/%s/fd/%s' % (name, fd), 'r+b') as f:\n"
         "                        f.write(b'pwned')\n"
         "                    print('WROTE THROUGH', name, fd)\n"
         "                except OSError:\n"
         "                    pass\n"
         "        except OSError:\n"
         "            pass\n"
         "        try:\n"
         "            with open('/proc/%s/cmdline' % name, 'rb') as f:\n"
         "                if b'kforge' in f.read():\n"
         "                    os.kill(int(name), signal.SIGKILL)\n"
         "        except OSError:\n"
         "            pass\n"
         "    for p in ('" +
         db + "', '" + db + "-wal', '" + db +
         "-shm'):\n"
         "        try:\n"
         "            with open(p, 'r+b') as f:\n"
         "                f.write(b'pwned')\n"
         "            print('WROTE', p)\n"
         "        except OSError:\n"
         "            pass\n";
}

TEST(DaemonSandbox, AnUnprivilegedDaemonSurvivesHostileSamples) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  std::vector<std::string> prefix;
  if (::geteuid() == 0) {
    const char* user = "kforge-sandbox-test";
    if (::getpwnam(user) == nullptr) {
      auto add = test::run_process({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                                    "/usr/sbin/nologin", user});
      ASSERT_EQ(add.exit_code, 0) << "useradd: " << add.err;
    }
    passwd* pw = ::getpwnam(user);
    ASSERT_NE(pw, nullptr);
    prefix = {"/usr/bin/setpriv", "--reuid=" + std::to_string(pw->pw_uid),
              "--regid=" + std::to_string(pw->pw_gid), "--clear-groups"};
  }
  {
    // Where the kernel refuses that user the namespaces, its verifier refuses to start (the
    // verifier tests check that error); nothing could be verified here.
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"/usr/bin/unshare", "-U", "-r", "-p", "-f", "--mount-proc", "true"});
    auto r = test::run_process(argv);
    if (r.exit_code != 0)
      GTEST_SKIP() << "this host refuses unprivileged user namespaces (" << r.err
                   << "): kforged's verifier would refuse to start";
  }
  json fake = script("fake_llm_answers.json");
  Site site(fake);
  // The database's path is known once the site exists: the hostile answer names it.
  for (auto& rule : fake["rules"])
    if (rule.value("name", "") == "generate")
      rule["reply_json"]["unitest_code"] = hostile_test(site.db_path().string());
  ASSERT_TRUE(site.fake().set_script(fake).ok());
  Options o;
  o.verify = true;
  site.write_config(o);
  std::string cfg = test::read_text(site.config());
  const std::string no_key = "api_key_env: \"\"";
  auto at = cfg.find(no_key);
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, no_key.size(), "api_key_env: KFORGE_TEST_LLM_KEY");
  // The corpus's code imports torch, which the CI machine lacks: a permissive stand-in (and the
  // verifier tests' stand-in Triton) let the modules load, so the hostile tests run.
  auto stubs = site.dir() / "stubs";
  fs::create_directories(stubs / "torch");
  test::write_text(stubs / "torch" / "__init__.py",
                   "class _Any:\n"
                   "    def __getattr__(self, name):\n        return _Any()\n"
                   "    def __call__(self, *a, **k):\n        return _Any()\n"
                   "    def __getitem__(self, k):\n        return _Any()\n"
                   "    def __iter__(self):\n        return iter(())\n\n\n"
                   "def __getattr__(name):\n    return _Any()\n");
  cfg += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
         "\", \"" + stubs.string() + "\"]\n";
  test::write_text(site.config(), cfg);
  site.import_corpus();
  const int n = 6;
  site.create_run("v1", "v1", {"--limit", std::to_string(n)});
  if (!prefix.empty()) {
    // The unprivileged daemon owns its state directory and database.
    auto r = test::run_process({"/bin/chown", "-R", prefix[1].substr(8) + ":" + prefix[2].substr(8),
                                site.dir().path().string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(),
              {test::binary("apps/kforged/kforged").string(), "-c", site.config().string()});
  Proc d(argv, {"KFORGE_TEST_LLM_KEY=" + std::string(kKey)}, site.dir() / "kforged.log");
  const std::string done = "SELECT count(*) FROM jobs WHERE state = 'done'";
  // Bounded, and over as soon as the daemon dies (what hostile samples did before the sandbox).
  std::int64_t got = 0;
  for (auto until = std::chrono::steady_clock::now() + 180s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(50ms)) {
    got = site.scalar(done);
    if (got >= n || d.wait(0ms)) break;
  }
  EXPECT_EQ(got, n) << d.log();
  EXPECT_EQ(d.wait(0ms), std::nullopt) << "kforged died: " << d.log();
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), n);
  EXPECT_EQ(site.scalar("SELECT count(DISTINCT job_id) FROM verifications"), n);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = "
                        "'ok'"),
            1);
  std::string verdicts;
  {
    auto db = site.open_db();
    auto st = db->prepare(
        "SELECT verdict || ': ' || detail || ' ' || substr(result_json, 1, 600) "
        "FROM verifications");
    ASSERT_TRUE(st.ok());
    while (true) {
      auto row = st->step();
      if (!row.ok() || !*row) break;
      verdicts += st->text(0) + "\n";
    }
  }
  // The hostile tests ran (they reached the verifier) and found nothing.
  EXPECT_GE(site.scalar("SELECT count(*) FROM verifications WHERE result_json LIKE "
                        "'%test_kforge_wrapper%'"),
            n / 2)
      << verdicts;
  for (const char* what : {"FOUND THE KEY", "WROTE"})
    EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE result_json LIKE '%" +
                          std::string(what) + "%'"),
              0)
        << what;
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(60s), std::optional<int>(0)) << d.log();
  // The key is in no output: not the database, its WAL, the log or the verifier's files.
  for (const auto& e : fs::recursive_directory_iterator(site.dir().path())) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(test::read_text(e.path()).find(kKey), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace kforge::pipeline::e2e
