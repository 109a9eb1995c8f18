// The verifier's Slurm backend on a real Slurm 22.05 cluster of one node (slurm-cluster.sh:
// munge, slurmctld and slurmd on loopback, every path under one temp directory), with the real
// kforged and kforge, the fake provider for the LLM stages, and CPU-mode samples (real Python
// without torch: their verdicts are errors; what is checked is the hand-off).
//
// Two runs over the test corpus (up to 100 samples each) through array tasks, with a task that
// exits non-zero, a running task cancelled with scancel, and kforged killed with -9 mid-run and
// restarted; then every sample has exactly one verdict, and `kforge compare` and `kforge export`
// print what the local pool gives on the same samples. Tasks nobody wants any more (a cancelled
// run's, scored items' past their deadline or whose client went away) are scancelled; a task
// holding wanted items too skips the unwanted ones and finishes the wanted.

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <sstream>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

fs::path slurm_src() {
  return test::source_dir() / "tests" / "slurm";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class SlurmVerifier : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) {
      skip_ = "the Slurm daemons of the test cluster need root";
      return;
    }
    auto r =
        test::run_process({"/bin/bash", (slurm_src() / "slurm-cluster.sh").string(), "up"}, {}, 90);
    if (r.exit_code != 0) {
      error_ = "the test cluster did not start: " + r.err;
      return;
    }
    cluster_ = trim(r.out);
    ::setenv("SLURM_CONF", (fs::path(cluster_) / "etc" / "slurm.conf").c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (cluster_.empty()) return;
    test::run_process({"/bin/bash", (slurm_src() / "slurm-cluster.sh").string(), "down", cluster_},
                      {}, 60);
    cluster_.clear();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
    ASSERT_TRUE(fs::exists("/usr/bin/python3")) << "/usr/bin/python3 not found";
  }

  static inline std::string skip_, error_, cluster_;
};

// A site whose daemon verifies on the cluster (backend slurm) or with the local pool.
void configure(Site& site, bool slurm) {
  Options o;
  o.verify = true;
  site.write_config(o);
  if (!slurm) return;
  std::string y = test::read_text(site.config());
  const fs::path shared = site.dir() / "shared";
  y += "  backend: slurm\n  slurm:\n    shared_dir: \"" + shared.string() +
       "\"\n    partition: debug\n    gres: \"gpu:1\"\n    time_limit: \"00:10:00\"\n"
       "    extra_args: [\"--cpus-per-task=1\"]\n"
       "    samples_per_task: 20\n    max_array_tasks: 6\n    submit_interval_ms: 1000\n"
       "    poll_ms: 200\n    kforge: \"" +
       (slurm_src() / "fault_kforge.sh").string() + "\"\n";
  test::write_text(site.config(), y);
}

// kforged's environment for fault_kforge.sh (verifier.slurm.kforge): the fault roles in FAULTS
// (a role whose directory exists is taken already), the real kforge behind them.
std::vector<std::string> fault_env(const fs::path& faults) {
  return {"SLURMTEST_FAULTS=" + faults.string(),
          "SLURMTEST_KFORGE=" + test::binary("apps/kforge/kforge").string()};
}

void create_runs(Site& site) {
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "100"});
  site.create_run("v2", "v2", {"--limit", "100"});
}

std::string slurm_task(Site& site, const std::string& where) {
  auto rows = site.rows(
      "SELECT a.slurm_job_id || '_' || t.task FROM slurm_tasks t JOIN slurm_arrays a ON a.id = "
      "t.array_id WHERE " +
          where,
      1);
  return rows.empty() ? "" : rows.front();
}

// What the reports say about both runs: compare (JSON) and export of every verdict.
std::vector<std::string> reports(Site& site) {
  std::vector<std::string> out;
  auto c = site.kforge({"compare", "v1", "v2", "--json"});
  // Everything but the measured times (wall time of the LLM calls and the verifier).
  auto j = json::parse(c.out, nullptr, false);
  if (j.is_object())
    for (auto& cmp : j["comparisons"])
      for (auto& [tag, run] : cmp["runs"].items()) {
        run.erase("llm_seconds");
        run.erase("verify_seconds");
        run["per_verified"].erase("seconds");
      }
  out.push_back("compare exit " + std::to_string(c.exit_code) + ": " + j.dump(1) + c.err);
  for (const char* tag : {"v1", "v2"}) {
    const fs::path file = site.dir() / (std::string(tag) + ".jsonl");
    auto e =
        site.kforge({"export", tag, "--out", file.string(), "--verdict",
                     "passed,failed,error,timeout,crashed,invalid,skipped", "--include-flagged"});
    out.push_back(std::string("export ") + tag + " exit " + std::to_string(e.exit_code) + e.err);
    out.push_back(fs::exists(file) ? test::read_text(file) : "(no file)");
  }
  return out;
}

TEST_F(SlurmVerifier, ArrayTasksVerifyEverySampleOnceThroughFailureScancelAndKill) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string done = "SELECT count(*) FROM jobs WHERE state = 'done'";
  // Every job ended (a few fail their LLM stages: the fake answers do not suit every sample).
  const std::string ended =
      "SELECT count(*) FROM jobs WHERE state IN ('done', 'failed', 'cancelled')";
  const std::string verified_once = "SELECT count(*) FROM verifications";

  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  create_runs(site);
  // Every sample of the repository's test corpus, in two runs (up to 100 each).
  const std::int64_t total = site.scalar("SELECT count(*) FROM jobs");
  ASSERT_GE(total, 60);
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults);
  const std::vector<std::string> env = fault_env(faults);

  auto d = site.start_daemon(env);
  // The failing task: its 2 verdicts stay, the rest of its shard goes back to the queue.
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_tasks WHERE state = 'failed'", 1, 90s), 1)
      << d->log();
  // The hanging task: scancel it while it runs.
  auto until = std::chrono::steady_clock::now() + 60s;
  while (!fs::exists(faults / "hang" / "task") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(fs::exists(faults / "hang" / "task")) << d->log();
  const std::string hung = trim(test::read_text(faults / "hang" / "task"));
  auto sc = test::run_process({"/usr/bin/scancel", hung});
  ASSERT_EQ(sc.exit_code, 0) << sc.err;
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_tasks WHERE state = 'cancelled'", 1, 30s), 1)
      << d->log();
  EXPECT_EQ(slurm_task(site, "t.state = 'cancelled'"), hung);

  // kill -9 while arrays are out, then a restart that takes them over.
  ASSERT_GE(site.wait_for(done, total * 3 / 10, 120s), total * 3 / 10) << d->log();
  d->kill9();
  // Live tasks of submitted arrays (one whose sbatch the kill interrupted is dropped, or found in
  // Slurm if it went through: AnArraySubmittedJustBeforeAKillIsFoundAndWatched).
  const auto live_before = site.rows(
      "SELECT array_id || '_' || task FROM slurm_tasks WHERE ended_ms IS NULL AND array_id IN "
      "(SELECT id FROM slurm_arrays WHERE slurm_job_id IS NOT NULL) ORDER BY 1",
      1);
  d = site.start_daemon(env);
  ASSERT_EQ(site.wait_for(ended, total, 150s), total) << d->log();
  const auto n = site.scalar(done);
  EXPECT_GE(n, total * 95 / 100);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE error_kind = 'verifier'"), 0);
  if (!live_before.empty()) {
    EXPECT_NE(d->log().find("Slurm array jobs of an earlier kforged"), std::string::npos)
        << d->log();
  }

  // Every task seen to its end.
  ASSERT_EQ(
      site.wait_for("SELECT NOT EXISTS (SELECT 1 FROM slurm_tasks WHERE ended_ms IS NULL)", 1, 30s),
      1);

  // Exactly one verdict per sample.
  EXPECT_EQ(site.scalar(verified_once), n);
  EXPECT_EQ(site.scalar("SELECT count(DISTINCT job_id) FROM verifications"), n);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM (SELECT job_id FROM slurm_task_jobs WHERE outcome "
                        "= 'stored' GROUP BY job_id HAVING count(*) > 1)"),
            0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications WHERE result_json IS NULL OR "
                        "script IS NULL OR coalesce(detail, '') = ''"),
            0);
  // The failed and the cancelled task kept their 2 verdicts and gave the rest back, which
  // later tasks verified.
  for (const char* state : {"failed", "cancelled"}) {
    SCOPED_TRACE(state);
    EXPECT_EQ(
        site.scalar(std::string("SELECT stored FROM slurm_tasks WHERE state = '") + state + "'"),
        2);
    EXPECT_EQ(site.scalar(std::string("SELECT requeued + stored - samples FROM slurm_tasks "
                                      "WHERE state = '") +
                          state + "'"),
              0);
    EXPECT_EQ(site.scalar(std::string("SELECT count(*) FROM slurm_task_jobs tj JOIN slurm_tasks "
                                      "t USING (array_id, task) WHERE t.state = '") +
                          state +
                          "' AND tj.outcome = 'requeued' AND tj.job_id NOT IN (SELECT job_id "
                          "FROM slurm_task_jobs WHERE outcome = 'stored')"),
              0);
  }
  EXPECT_EQ(slurm_task(site, "t.state = 'failed'"),
            trim(test::read_text(faults / "fail" / "task")));
  EXPECT_NE(site.rows("SELECT exit_code FROM slurm_tasks WHERE state = 'failed'", 1),
            std::vector<std::string>{})
      << "exit code recorded";
  EXPECT_EQ(site.rows("SELECT exit_code FROM slurm_tasks WHERE state = 'failed'", 1).front(),
            "3:0");
  // The restart resubmitted nothing that was running: every task other than the two faulty
  // ones ended completed with a verdict for each of its samples.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_tasks WHERE state NOT IN ('completed', "
                        "'failed', 'cancelled') AND NOT (state = 'lost' AND array_id IN (SELECT "
                        "id FROM slurm_arrays WHERE slurm_job_id IS NULL))"),
            0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_tasks WHERE state = 'completed' AND stored "
                        "!= samples"),
            0)
      << ::testing::PrintToString(
             site.rows("SELECT t.array_id, t.task, t.samples, t.stored, t.requeued, tj.job_id, "
                       "coalesce(tj.outcome, '-') FROM slurm_tasks t JOIN slurm_task_jobs tj USING "
                       "(array_id, task) WHERE t.state = 'completed' AND t.stored != t.samples",
                       7))
      << "\nlive at the kill: " << ::testing::PrintToString(live_before) << "\n"
      << d->log();
  for (const auto& t : live_before) {
    auto parts = t.find('_');
    EXPECT_EQ(
        site.scalar("SELECT count(*) FROM slurm_tasks WHERE array_id = " + t.substr(0, parts) +
                    " AND task = " + t.substr(parts + 1) + " AND state = 'completed'"),
        1)
        << "task " << t << " was live at the kill";
  }
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'verifying' OR lease_owner IS "
                        "NOT NULL"),
            0);

  // kforge status: tasks per state.
  auto st = site.kforge({"status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto sj = json::parse(st.out);
  ASSERT_TRUE(sj.contains("slurm")) << st.out;
  EXPECT_EQ(sj["slurm"]["tasks"]["failed"], 1);
  EXPECT_EQ(sj["slurm"]["tasks"]["cancelled"], 1);
  EXPECT_EQ(sj["slurm"]["alerts"].size(), 0u);
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM runs WHERE state = 'finished'", 2, 30s), 2);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  const auto slurm_reports = reports(site);
  std::printf("slurm run: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  // The same samples through the local pool: the same reports.
  Site local(script("fake_llm_answers.json"));
  configure(local, false);
  create_runs(local);
  auto ld = local.start_daemon();
  ASSERT_EQ(local.wait_for(ended, total, 120s), total) << ld->log();
  EXPECT_EQ(local.scalar(done), n);
  ASSERT_EQ(local.wait_for("SELECT count(*) FROM runs WHERE state = 'finished'", 2, 30s), 2);
  ld->signal(SIGTERM);
  EXPECT_EQ(ld->wait(30s), std::optional<int>(0)) << ld->log();
  const auto local_reports = reports(local);
  ASSERT_EQ(slurm_reports.size(), local_reports.size());
  for (std::size_t i = 0; i < slurm_reports.size(); ++i)
    EXPECT_EQ(slurm_reports[i], local_reports[i]) << "report " << i;
  EXPECT_NE(slurm_reports[2].find("\"verdict\""), std::string::npos) << slurm_reports[2];
}

// kforged killed after sbatch submitted its array but before it recorded the job id: the
// restarted daemon finds the array in Slurm by its directory and watches it; nothing is verified
// twice and no task is lost.
TEST_F(SlurmVerifier, AnArraySubmittedJustBeforeAKillIsFoundAndWatched) {
  const std::string ended =
      "SELECT count(*) FROM jobs WHERE state IN ('done', 'failed', 'cancelled')";
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  std::string y = test::read_text(site.config());
  y.replace(y.find("  slurm:\n"), 9,
            "  slurm:\n    sbatch: \"" + (slurm_src() / "die_after_sbatch.sh").string() + "\"\n");
  test::write_text(site.config(), y);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "30"});
  const std::int64_t total = site.scalar("SELECT count(*) FROM jobs");
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // no faulty tasks (fault_kforge.sh): plain kforge
  fs::create_directories(faults / "hang");
  const std::vector<std::string> env = fault_env(faults);
  auto d = site.start_daemon(env);
  EXPECT_EQ(d->wait(90s), std::optional<int>(-SIGKILL)) << d->log();
  ASSERT_TRUE(fs::exists(faults / "sbatch" / "out")) << d->log();
  std::string job = trim(test::read_text(faults / "sbatch" / "out"));
  job = job.substr(0, job.find(';'));
  ASSERT_EQ(site.scalar("SELECT count(*) FROM slurm_arrays WHERE slurm_job_id IS NULL"), 1);
  const std::int64_t first = site.scalar("SELECT min(id) FROM slurm_arrays");
  const std::int64_t in_first =
      site.scalar("SELECT count(*) FROM slurm_task_jobs WHERE array_id = " + std::to_string(first));
  ASSERT_GT(in_first, 0);

  d = site.start_daemon(env);
  ASSERT_EQ(site.wait_for(ended, total, 150s), total) << d->log();
  EXPECT_NE(d->log().find("Slurm array " + job +
                          " was submitted by an earlier kforged that died before recording it"),
            std::string::npos)
      << d->log();
  EXPECT_EQ(
      site.rows("SELECT slurm_job_id FROM slurm_arrays WHERE id = " + std::to_string(first), 1),
      std::vector<std::string>{job});
  // Every task seen to its end (its verdicts are stored as it writes them, before Slurm says
  // it completed).
  ASSERT_EQ(
      site.wait_for("SELECT NOT EXISTS (SELECT 1 FROM slurm_tasks WHERE ended_ms IS NULL)", 1, 30s),
      1);
  // The array's own tasks verified its samples; nothing was dropped, lost or verified twice.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_task_jobs WHERE array_id = " +
                        std::to_string(first) + " AND outcome = 'stored'"),
            in_first);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_tasks WHERE state != 'completed'"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"),
            site.scalar("SELECT count(DISTINCT job_id) FROM verifications"));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"),
            site.scalar("SELECT count(*) FROM jobs WHERE state = 'done'"));
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
}

// Repair rounds through the cluster: each round's code goes out in an array task of its own and
// its verdict comes back for the next round (the samples of tests/pipeline/repair, with the
// stand-in Triton on the nodes' python_path, and the provider script that fixes a sample only
// when the repair prompt holds the verifier's evidence).
TEST_F(SlurmVerifier, RepairRoundsGoThroughTheCluster) {
  const fs::path repair = test::source_dir() / "tests" / "pipeline" / "repair";
  Site site(script("repair/fake_llm.json"));
  configure(site, true);
  std::string y = test::read_text(site.config());
  y += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
       "\"]\n";
  test::write_text(site.config(), y);
  auto imp = site.kforge({"import", (repair / "corpus.json").string(), "--map",
                          "code=code,description_1=description,description_2=description", "--key",
                          "key"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const fs::path keys = site.dir() / "keys";
  test::write_text(keys, "double\nadd\n");
  site.create_run("fix", "v1", {"--samples-from", keys.string(), "--repair-rounds", "2"});
  // A run that requires hip:gfx942: its tasks compile for it although the node's configuration
  // names no target, and `wide` (32 warps of 64 threads), which passes, is not verified.
  const fs::path amd_keys = site.dir() / "amd.keys";
  test::write_text(amd_keys, "wide\n");
  site.create_run("amd", "v1",
                  {"--samples-from", amd_keys.string(), "--require-target", "hip:gfx942"});
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // no faulty tasks (fault_kforge.sh): plain kforge
  fs::create_directories(faults / "hang");
  auto d = site.start_daemon(fault_env(faults));
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state IN ('done', 'failed')", 3, 150s),
            3)
      << d->log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  auto rounds = [&](const std::string& key) {
    return site.rows(
        "SELECT v.repair_round, v.verdict, v.flags_json FROM verifications v JOIN samples s ON "
        "s.id = v.sample_id WHERE s.key = '" +
            key + "' ORDER BY v.id",
        3);
  };
  EXPECT_EQ(rounds("double"), (std::vector<std::string>{"0|failed|[]", "1|passed|[]"}));
  EXPECT_EQ(rounds("add"),
            (std::vector<std::string>{"0|passed|[\"mutant_survived\"]", "1|passed|[]"}));
  EXPECT_EQ(rounds("wide"), (std::vector<std::string>{"0|passed|[\"cross_compile_failed\"]"}));
  EXPECT_EQ(site.rows("SELECT json_extract(v.result_json, '$.cross_compile.targets.\"hip:gfx942\""
                      ".result') || '|' || json_extract(v.result_json, "
                      "'$.cross_compile.required[0]') FROM verifications v JOIN samples s ON "
                      "s.id = v.sample_id WHERE s.key = 'wide'",
                      1),
            std::vector<std::string>{"error|hip:gfx942"});
  // Every round's verdict came from an array task of the cluster, each stored once.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_task_jobs WHERE outcome = 'stored'"), 5);
  EXPECT_GE(site.scalar("SELECT count(*) FROM slurm_arrays WHERE slurm_job_id IS NOT NULL"), 2);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'done' AND repair_round = 1"), 2);
}

// sbatch refusing the array (an unknown partition): the jobs stay queued, `kforge status`
// raises the alert; `kforge run cancel` leaves nothing behind.
TEST_F(SlurmVerifier, ARejectedSubmissionIsAnAlertAndTheSamplesWait) {
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  std::string y = test::read_text(site.config());
  y.replace(y.find("partition: debug"), 16, "partition: nosuch");
  test::write_text(site.config(), y);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "5"});
  auto d = site.start_daemon({"SLURMTEST_FAULTS=/nonexistent", "SLURMTEST_KFORGE=/bin/false"});
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_alerts WHERE kind = 'submit'", 1, 60s), 1)
      << d->log();
  auto st = site.kforge({"status"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("ALERT      Slurm rejects submissions"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("nosuch"), std::string::npos) << st.out;
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_arrays"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'"), 5);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
}

// `kforge run cancel` scancels the run's tasks.
TEST_F(SlurmVerifier, RunCancelScancelsTheRunsTasks) {
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "5"});
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // the first task takes the hanging role
  auto d = site.start_daemon(fault_env(faults));
  auto until = std::chrono::steady_clock::now() + 60s;
  while (!fs::exists(faults / "hang" / "task") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(fs::exists(faults / "hang" / "task")) << d->log();
  // Its 2 verdicts are stored before the cancel: a verdict read after the run was cancelled is
  // dropped with the run's other jobs.
  ASSERT_GE(site.wait_for("SELECT count(*) FROM verifications", 2, 60s), 2) << d->log();
  auto c = site.kforge({"run", "cancel", "v1"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("1 Slurm tasks cancelled (scancel)"), std::string::npos) << c.out;
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_tasks WHERE state = 'cancelled'", 1, 30s), 1)
      << d->log();
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_tasks WHERE ended_ms IS NULL"), 0);
  // The hanging task verified 2 before it hung; the run's other jobs are cancelled.
  EXPECT_GE(site.scalar("SELECT count(*) FROM verifications"), 2);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications") +
                site.scalar("SELECT count(*) FROM jobs WHERE state = 'cancelled'"),
            5);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
}

// POST /v1/score with verifier.backend slurm: the scored items are verified by array tasks of
// the cluster as a run's jobs are, and answered in their order.
TEST_F(SlurmVerifier, ScoredItemsGoThroughTheCluster) {
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  const int port = free_port();
  std::string y = test::read_text(site.config());
  y += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
       "\"]\n  preload: [triton, triton.language]\n";
  y += "score:\n  listen: \"127.0.0.1:" + std::to_string(port) + "\"\n";
  test::write_text(site.config(), y);
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // no faulty tasks (fault_kforge.sh): plain kforge
  fs::create_directories(faults / "hang");
  auto d = site.start_daemon(fault_env(faults));
  const std::string wrapper =
      "def add(x, y):\n    out = [0.0] * len(x)\n    n = len(x)\n"
      "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
      "    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)\n    return out\n";
  const std::string code = load_json(cpu_corpus())[0]["output"];
  json items = json::array();
  for (const char* want : {"[2.0, 4.0]", "[9.0, 4.0]"})
    items.push_back({{"id", want},
                     {"code", code},
                     {"kernel_wrapper", wrapper},
                     {"unitest_code", std::string("def test_add():\n    x = [1.0, 2.0]\n") +
                                          "    assert add(x, x) == " + want + ", 'wrong sum'\n"}});
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(150, 0);
  const std::string body = json{{"items", items}, {"deadline_s", 140}}.dump();
  auto r = c.Post("/v1/score", body, "application/json");
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!r && std::chrono::steady_clock::now() < until) {  // the endpoint is not up yet
    std::this_thread::sleep_for(200ms);
    r = c.Post("/v1/score", body, "application/json");
  }
  ASSERT_TRUE(r) << d->log();
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body);
  ASSERT_EQ(out["results"].size(), 2u) << r->body;
  EXPECT_EQ(out["results"][0]["id"], "[2.0, 4.0]");
  EXPECT_EQ(out["results"][0]["verdict"], "passed") << out["results"][0].dump(2) << d->log();
  EXPECT_EQ(out["results"][1]["verdict"], "failed") << out["results"][1].dump(2);
  EXPECT_EQ(out["results"][1]["reward"], 0.0);
  // Both verdicts came from array tasks of the cluster.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM slurm_task_jobs WHERE outcome = 'stored'"), 2);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
}

// Sends a POST of `body` to /v1/score on a raw socket, unread (closing it is a trainer that
// goes away).
int open_post(int port, const json& body) {
  const std::string text = body.dump();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req =
      "POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(text.size()) + "\r\n\r\n" + text;
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  return fd;
}

// Everything the server sends on fd until it closes (or 300 s pass); closes fd.
std::string read_all(int fd) {
  timeval tv{300, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[65536];
  std::string out;
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
  ::close(fd);
  return out;
}

// Scored items on the cluster that nobody wants any more, one past its deadline and one whose
// client went away: the backend scancels each one's array task (it holds nothing else), which
// ends CANCELLED in Slurm; nothing of them is stored and the late one is answered with a null
// reward. Their tests sleep past any deadline here (verifier.timeout_s raised to 600), so a task
// that was not scancelled would still be running.
TEST_F(SlurmVerifier, TasksOfScoredItemsNobodyWantsAreScancelled) {
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  const int port = free_port();
  std::string y = test::read_text(site.config());
  y.replace(y.find("timeout_s: 30"), 13, "timeout_s: 600");
  y += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
       "\"]\n  preload: [triton, triton.language]\n";
  y += "score:\n  listen: \"127.0.0.1:" + std::to_string(port) + "\"\n";
  test::write_text(site.config(), y);
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // no faulty tasks (fault_kforge.sh): plain kforge
  fs::create_directories(faults / "hang");
  auto d = site.start_daemon(fault_env(faults));
  auto up = std::chrono::steady_clock::now() + 60s;
  for (bool ready = false; !ready && std::chrono::steady_clock::now() < up;) {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Get("/v1/queue");
    ready = r && r->status == 200;
    if (!ready) std::this_thread::sleep_for(100ms);
  }
  const std::string code = load_json(cpu_corpus())[0]["output"];
  auto item = [&](const std::string& id) {
    return json{{"id", id},
                {"code", code},
                {"kernel_wrapper",
                 "def add(x, y):\n    out = [0.0] * len(x)\n    n = len(x)\n"
                 "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
                 "    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)\n    return out\n"},
                {"unitest_code", "def test_add():\n    import time\n    time.sleep(3600)  # " + id +
                                     "\n    assert add([1.0], [1.0]) == [2.0]\n"}};
  };
  // One run per tag, so each item goes out in an array task of its own.
  int late = open_post(port, {{"items", {item("late")}}, {"deadline_s", 30}, {"tag", "late"}});
  int gone = open_post(port, {{"items", {item("gone")}}, {"deadline_s", 300}, {"tag", "gone"}});
  auto task_of = [](const std::string& tag, const std::string& where) {
    return "SELECT count(*) FROM slurm_tasks t JOIN runs r ON r.id = t.run_id WHERE r.tag = '" +
           tag + "' AND " + where;
  };
  ASSERT_EQ(site.wait_for(task_of("gone", "t.state = 'running'"), 1, 60s), 1) << d->log();
  // The late item's task went out before its deadline (the order this test is about).
  ASSERT_EQ(site.scalar(task_of("late", "1")), 1) << d->log();
  ::close(gone);  // the trainer went away
  const std::string answer = read_all(late);
  EXPECT_NE(answer.find("\"status\":\"deadline\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"reward\":null"), std::string::npos) << answer;
  for (const char* tag : {"late", "gone"}) {
    SCOPED_TRACE(tag);
    EXPECT_EQ(site.wait_for(task_of(tag, "t.state = 'cancelled'"), 1, 60s), 1) << d->log();
    EXPECT_EQ(site.scalar(task_of(tag, "t.slurm_state = 'CANCELLED'")), 1);
    EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id WHERE "
                          "r.tag = '" +
                          std::string(tag) + "' AND j.state = 'cancelled'"),
              1);
  }
  EXPECT_NE(d->log().find("Slurm tasks whose samples are no longer wanted"), std::string::npos)
      << d->log();
  // Nothing of them was stored; their shard rows were dropped, not requeued.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
  EXPECT_EQ(site.rows("SELECT outcome FROM slurm_task_jobs", 1),
            (std::vector<std::string>{"dropped", "dropped"}));
  EXPECT_EQ(site.rows("SELECT r.tag || '|' || i.outcome FROM score_items i JOIN score_batches b "
                      "ON b.id = i.batch_id JOIN runs r ON r.id = b.run_id ORDER BY r.tag",
                      1),
            (std::vector<std::string>{"gone|cancelled", "late|deadline"}));
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
}

// One array task holding scored items still wanted and others nobody wants (their client went
// away): the task is not scancelled, its skip file lists the unwanted ones, and its kforge verify
// stops the one running and never starts the other; the wanted ones get their verdicts and the
// task ends by itself. The node runs one sample at a time and the unwanted items' tests sleep an
// hour (verifier.timeout_s 600), so the last wanted item, queued behind them in the shard, is
// only verified because they were stopped.
TEST_F(SlurmVerifier, ATaskHoldingWantedAndUnwantedItemsStopsOnlyTheUnwanted) {
  Site site(script("fake_llm_answers.json"));
  configure(site, true);
  const int port = free_port();
  std::string y = test::read_text(site.config());
  y.replace(y.find("timeout_s: 30"), 13, "timeout_s: 600");
  y.replace(y.find("cpu_workers: 2"), 14, "cpu_workers: 1");  // the node's kforge verify
  // The three requests below go out in one array (a partial one waits this long).
  y.replace(y.find("submit_interval_ms: 1000"), 24, "submit_interval_ms: 5000");
  y += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
       "\"]\n  preload: [triton, triton.language]\n";
  y += "score:\n  listen: \"127.0.0.1:" + std::to_string(port) + "\"\n";
  test::write_text(site.config(), y);
  const fs::path faults = site.dir() / "faults";
  fs::create_directories(faults / "fail");  // no faulty tasks (fault_kforge.sh): plain kforge
  fs::create_directories(faults / "hang");
  auto d = site.start_daemon(fault_env(faults));
  auto up = std::chrono::steady_clock::now() + 60s;
  for (bool ready = false; !ready && std::chrono::steady_clock::now() < up;) {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Get("/v1/queue");
    ready = r && r->status == 200;
    if (!ready) std::this_thread::sleep_for(100ms);
  }
  const std::string code = load_json(cpu_corpus())[0]["output"];
  auto item = [&](const std::string& id, bool hang) {
    return json{{"id", id},
                {"code", code},
                {"kernel_wrapper",
                 "def add(x, y):\n    out = [0.0] * len(x)\n    n = len(x)\n"
                 "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
                 "    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)\n    return out\n"},
                {"unitest_code", std::string("def test_add():\n") +
                                     (hang ? "    import time\n    time.sleep(3600)\n" : "") +
                                     "    assert add([1.0], [1.0]) == [2.0]  # " + id + "\n"}};
  };
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  auto post_later = [&](const json& items) -> std::int64_t {
    auto r = c.Post(
        "/v1/score",
        json{{"items", items}, {"deadline_s", 600}, {"tag", "mixed"}, {"wait", false}}.dump(),
        "application/json");
    EXPECT_TRUE(r && r->status == 202) << (r ? r->body : "no answer");
    return r && r->status == 202 ? json::parse(r->body)["batch"].get<std::int64_t>() : -1;
  };
  // One run (the tag), so one shard in lease order: w1, u1, u2, w2.
  const std::int64_t first = post_later(json::array({item("w1", false)}));
  int gone = open_post(
      port,
      {{"items", {item("u1", true), item("u2", true)}}, {"deadline_s", 600}, {"tag", "mixed"}});
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM score_items", 3, 60s), 3) << d->log();
  const std::int64_t last = post_later(json::array({item("w2", false)}));
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_task_jobs", 4, 60s), 4) << d->log();
  ASSERT_EQ(site.scalar("SELECT count(DISTINCT array_id || '_' || task) FROM slurm_task_jobs"), 1)
      << "the four items went out in more than one task: " << d->log();
  auto key_of = [&](const std::string& id) {
    auto k = site.rows(
        "SELECT s.key FROM score_items i JOIN jobs j ON j.id = i.job_id JOIN samples s ON "
        "s.id = j.sample_id WHERE i.item_id = '" +
            id + "'",
        1);
    return k.empty() ? std::string("?") : k.front();
  };
  const fs::path dir = site.rows("SELECT dir FROM slurm_arrays", 1).front();
  const fs::path task_log = dir / "task-0.log";
  // w1 verified: the node's one slot takes u1 next (u2 and w2 wait behind it).
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM verifications", 1, 120s), 1) << d->log();
  ::close(gone);  // the trainer of u1 and u2 went away; w2's still waits

  auto g = c.Get(("/v1/score/" + std::to_string(last) + "?wait_s=240").c_str());
  ASSERT_TRUE(g) << d->log();
  json w2 = json::parse(g->body);
  ASSERT_TRUE(w2["done"].get<bool>()) << g->body << d->log() << test::read_text(task_log);
  EXPECT_EQ(w2["results"][0]["verdict"], "passed") << g->body;
  auto g1 = c.Get(("/v1/score/" + std::to_string(first) + "?wait_s=30").c_str());
  ASSERT_TRUE(g1);
  EXPECT_EQ(json::parse(g1->body)["results"][0]["verdict"], "passed") << g1->body;
  // The task ended by itself (not scancelled), its shard rows settled: the wanted stored, the
  // unwanted dropped.
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM slurm_tasks WHERE ended_ms IS NOT NULL", 1, 60s), 1)
      << d->log();
  EXPECT_EQ(site.rows("SELECT state || '|' || slurm_state FROM slurm_tasks", 1),
            (std::vector<std::string>{"completed|COMPLETED"}));
  EXPECT_EQ(site.rows("SELECT idx || '|' || outcome FROM slurm_task_jobs ORDER BY idx", 1),
            (std::vector<std::string>{"0|stored", "1|dropped", "2|dropped", "3|stored"}));
  EXPECT_EQ(site.rows("SELECT item_id || '|' || outcome FROM score_items ORDER BY item_id", 1),
            (std::vector<std::string>{"u1|cancelled", "u2|cancelled", "w1|judged", "w2|judged"}));
  // Nothing of the unwanted ones was stored, and the node wrote no line for them.
  EXPECT_EQ(site.rows("SELECT s.key FROM verifications v JOIN samples s ON s.id = v.sample_id "
                      "ORDER BY v.id",
                      1),
            (std::vector<std::string>{key_of("w1"), key_of("w2")}));
  std::vector<std::string> lines;
  std::istringstream results(test::read_text(dir / "result-0.jsonl"));
  for (std::string l; std::getline(results, l);)
    if (!l.empty()) lines.push_back(json::parse(l)["key"]);
  EXPECT_EQ(lines, (std::vector<std::string>{key_of("w1"), key_of("w2")}));
  EXPECT_EQ(test::read_text(dir / "skip-0.txt"), "1\n2\n");
  // Both withdrawn on the node (u1 stopped while it ran or, had it not started yet, never
  // started; u2 never started).
  const std::string log = test::read_text(task_log);
  EXPECT_NE(log.find("2 withdrawn (listed in the skip file): "), std::string::npos) << log;
  EXPECT_NE(d->log().find("2 of its samples are no longer wanted"), std::string::npos) << d->log();
  EXPECT_EQ(d->log().find("Slurm tasks whose samples are no longer wanted"), std::string::npos)
      << d->log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
}

}  // namespace
}  // namespace kforge::pipeline::e2e
