// compare, export, debug and retry on databases the real pipeline wrote: kforged with the fake
// provider (fake_llm_cpu.json) and its CPU verifier running the stand-in Triton, over the four
// kernels of tests/data/corpus_cpu.json, in a v1 and a v2 run. Per run: vector_add.py and
// vector_sub.py pass, vector_scale.py fails its test, vector_neg.py is rejected at generation
// (its test has no test function) until the scheduler gives up.

#include <gtest/gtest.h>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

const char* kDoneOrFailed = "SELECT count(*) FROM jobs WHERE state IN ('done', 'failed')";

// A site whose runs v1 and v2 went through the real daemon to their end.
std::unique_ptr<Site> pipeline_site() {
  auto site = std::make_unique<Site>(script("fake_llm_cpu.json"));
  Options o;
  o.verify = true;
  o.fake_triton = true;
  site->write_config(o);
  site->import_corpus(cpu_corpus());
  site->create_run("v1", "v1");
  site->create_run("v2", "v2");
  auto d = site->start_daemon();
  if (site->wait_for(kDoneOrFailed, 8, 120s) != 8) {
    ADD_FAILURE() << "the pipeline did not end its 8 jobs\n" << d->log();
    return nullptr;
  }
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  return site;
}

class ReportOnPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { site_ = pipeline_site().release(); }
  static void TearDownTestSuite() {
    delete site_;
    site_ = nullptr;
  }
  void SetUp() override {
    if (site_ == nullptr) GTEST_FAIL() << "no pipeline database";
  }
  static Site* site_;
};
Site* ReportOnPipeline::site_ = nullptr;

TEST_F(ReportOnPipeline, ThePipelineWroteWhatTheScenarioSays) {
  // What the real scheduler and verify stage stored, which the report commands below read.
  EXPECT_EQ(site_->rows("SELECT r.tag, s.key, j.state, j.stage, coalesce(j.error_kind, ''), "
                        "coalesce(v.verdict, '') FROM jobs j JOIN runs r ON r.id = j.run_id "
                        "JOIN samples s ON s.id = j.sample_id LEFT JOIN verifications v ON "
                        "v.job_id = j.id ORDER BY r.tag, s.key",
                        6),
            (std::vector<std::string>{
                "v1|vector_add.py|done|done||passed",
                "v1|vector_neg.py|failed|generate|rejected:no_test_function|",
                "v1|vector_scale.py|done|done||failed",
                "v1|vector_sub.py|done|done||passed",
                "v2|vector_add.py|done|done||passed",
                "v2|vector_neg.py|failed|generate|rejected:no_test_function|",
                "v2|vector_scale.py|done|done||failed",
                "v2|vector_sub.py|done|done||passed",
            }));
}

TEST_F(ReportOnPipeline, CompareCountsTheVerdictsAndFailuresTheDatabaseHolds) {
  auto r = site_->kforge({"compare", "v1", "v2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  const auto& pair = j["comparisons"][0];
  for (const char* tag : {"v1", "v2"}) {
    SCOPED_TRACE(tag);
    const auto& run = pair["runs"][tag];
    EXPECT_EQ(run["samples"], 4);
    EXPECT_EQ(run["verified"], site_->scalar("SELECT count(*) FROM verifications v JOIN runs r ON "
                                             "r.id = v.run_id WHERE r.tag = '" +
                                             std::string(tag) +
                                             "' AND v.verdict = 'passed' AND v.flags_json = '[]'"));
    EXPECT_EQ(run["verified"], 2);
    EXPECT_EQ(run["verdicts"].value("passed", 0), 2) << run.dump();
    EXPECT_EQ(run["verdicts"].value("failed", 0), 1) << run.dump();
    EXPECT_EQ(run["stage_failures"].value("rejected", 0), 1) << run.dump();
    EXPECT_EQ(run["stage_failure_kinds"].value("generate/no_test_function", 0), 1) << run.dump();
    // Tokens and cost are the sums of the run's stage outputs.
    EXPECT_EQ(run["prompt_tokens"],
              site_->scalar("SELECT sum(o.prompt_tokens) FROM stage_outputs o JOIN runs r ON "
                            "r.id = o.run_id WHERE r.tag = '" +
                            std::string(tag) + "'"));
  }
  EXPECT_EQ(pair["paired"]["both_verified"], 2);
  EXPECT_EQ(pair["paired"]["only_a"], 0);
  EXPECT_EQ(pair["paired"]["only_b"], 0);
  EXPECT_EQ(pair["paired"]["neither"], 2);
  auto text = site_->kforge({"compare", "v1", "v2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("4 samples finished in both"), std::string::npos) << text.out;
}

TEST_F(ReportOnPipeline, ExportWritesTheVerifiedSamplesWithTheGeneratedCode) {
  auto out = site_->dir() / "v2.jsonl";
  auto r = site_->kforge({"export", "v2", "--out", out.string(), "--verdict", "passed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exported 2 samples of v2"), std::string::npos) << r.out;
  json corpus = load_json(cpu_corpus());
  std::istringstream lines(test::read_text(out));
  std::string line;
  std::vector<std::string> keys;
  while (std::getline(lines, line)) {
    auto rec = json::parse(line);
    std::string key = rec["file"];
    keys.push_back(key);
    SCOPED_TRACE(key);
    // The original record, every field, then what the pipeline added.
    for (const auto& orig : corpus) {
      if (orig["file"] != key) continue;
      for (const auto& [field, value] : orig.items()) EXPECT_EQ(rec[field], value) << field;
    }
    auto generated =
        json::parse(site_
                        ->rows("SELECT kf_text(o.parsed_text) FROM stage_outputs o JOIN "
                               "samples s ON s.id = o.sample_id JOIN runs "
                               "r ON r.id = o.run_id WHERE r.tag = 'v2' AND o.stage = "
                               "'generate' AND o.status = 'ok' AND "
                               "s.key = '" +
                                   key + "'",
                               1)
                        .at(0));
    EXPECT_EQ(rec["kernel_wrapper"], generated["kernel_wrapper"]);
    EXPECT_EQ(rec["unitest_code"], generated["unitest_code"]);
    EXPECT_EQ(rec["verdict"], "passed");
    EXPECT_TRUE(rec["kernel_analysis"].is_object()) << rec.dump();
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"vector_add.py", "vector_sub.py"}));
}

TEST_F(ReportOnPipeline, DebugFolderHoldsTheVerifiersScriptWhichReproducesTheVerdict) {
  auto out = site_->dir() / "debug";
  auto r = site_->kforge({"debug", "v1", "vector_scale.py", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path folder = out / "vector_scale.py";
  EXPECT_EQ(r.out, folder.string() + "\n");
  // The exact script the verifier stored, and its verdict.
  EXPECT_EQ(test::read_text(folder / "script.py"),
            site_
                ->rows("SELECT v.script FROM verifications v JOIN samples s ON s.id = "
                       "v.sample_id JOIN runs r ON r.id = v.run_id WHERE r.tag = 'v1' AND s.key "
                       "= 'vector_scale.py'",
                       1)
                .at(0));
  auto verdict = load_json(folder / "verdict.json");
  EXPECT_EQ(verdict["verdict"], "failed");
  EXPECT_NE(verdict["detail"].get<std::string>().find("scale(x) != 3 * x"), std::string::npos)
      << verdict.dump();
  // run.sh runs the script by hand with the verifier's Python (verifier.python: /usr/bin/python3)
  // and its python_path (the stand-in Triton): it loads cleanly (the script defines the test;
  // the harness is what calls it), whatever python3 comes first on PATH (here one that fails: the
  // script's preamble imports what the verifier's Python had, torch where installed, which
  // another python3 may lack), and with no PYTHONPATH of the caller's.
  fs::path stub = site_->dir() / "other-python";
  fs::create_directories(stub);
  test::write_text(stub / "python3",
                   "#!/bin/sh\necho 'not the verifier'\\''s python' >&2\nexit 3\n");
  fs::permissions(stub / "python3", fs::perms::owner_all);
  auto rerun = test::run_process({(folder / "run.sh").string()},
                                 {"PATH=" + stub.string() + ":/usr/bin:/bin", "PYTHONPATH="}, 60);
  EXPECT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  const std::string py_path = "PYTHONPATH=" + fake_triton_dir().string();
  auto test_fn =
      test::run_process({"/usr/bin/python3", "-c",
                         "import runpy, sys; ns = runpy.run_path(sys.argv[1]); ns['test_scale']()",
                         (folder / "script.py").string()},
                        {py_path}, 60);
  EXPECT_NE(test_fn.exit_code, 0);
  EXPECT_NE(test_fn.err.find("AssertionError: scale(x) != 3 * x"), std::string::npos)
      << test_fn.out << test_fn.err;
  // --failed: one folder per finished sample that is not verified (the failed test and the
  // rejected generation), each named by its key.
  auto failed = site_->kforge({"debug", "v2", "--failed", "--out", (out / "v2").string()});
  ASSERT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_EQ(failed.out, (out / "v2" / "vector_neg.py").string() + "\n" +
                            (out / "v2" / "vector_scale.py").string() + "\n");
  EXPECT_FALSE(fs::exists(out / "v2" / "vector_neg.py" / "script.py"));
  EXPECT_NE(test::read_text(out / "v2" / "vector_neg.py" / "README.txt").find("no_test_function"),
            std::string::npos);
}

// Retry changes the database, so it gets a pipeline of its own.
TEST(ReportRetryOnPipeline, RetriedSamplesKeepTheirHistoryAndTheDaemonRunsThemAgain) {
  auto site = pipeline_site();
  ASSERT_TRUE(site);
  const std::string outputs_sql =
      "SELECT o.id || '|' || s.key || '|' || o.stage || '|' || o.attempt || '|' || o.status || "
      "'|' || coalesce(o.error_kind, '') FROM stage_outputs o JOIN samples s ON s.id = "
      "o.sample_id JOIN runs r ON r.id = o.run_id WHERE r.tag = 'v1' ORDER BY o.id";
  const std::string verifications_sql =
      "SELECT v.id || '|' || s.key || '|' || v.attempt || '|' || v.verdict FROM verifications v "
      "JOIN samples s ON s.id = v.sample_id JOIN runs r ON r.id = v.run_id WHERE r.tag = 'v1' "
      "ORDER BY v.id";
  const auto outputs_before = site->rows(outputs_sql, 1);
  const auto verifications_before = site->rows(verifications_sql, 1);
  ASSERT_EQ(verifications_before.size(), 3u);

  auto dry = site->kforge({"retry", "v1", "--verdict", "failed", "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(json::parse(dry.out)["requeued"], 1);
  EXPECT_EQ(site->scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'"), 0);

  // The failed verdict goes back to the verifier; the rejected generation back to generate.
  auto a = site->kforge({"retry", "v1", "--verdict", "failed", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json::parse(a.out)["keys"], json::array({"vector_scale.py"}));
  auto b = site->kforge({"retry", "v1", "--failure", "rejected", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(json::parse(b.out)["keys"], json::array({"vector_neg.py"}));
  EXPECT_EQ(site->rows("SELECT s.key || '|' || j.state || '|' || j.stage || '|' || j.attempts "
                       "FROM jobs j JOIN samples s ON s.id = j.sample_id WHERE j.run_id = 1 AND "
                       "j.state NOT IN ('done', 'failed') ORDER BY s.key",
                       1),
            (std::vector<std::string>{"vector_neg.py|queued|generate|0",
                                      "vector_scale.py|verify_queued|verify|0"}));
  // Nothing of the history is touched.
  EXPECT_EQ(site->rows(outputs_sql, 1), outputs_before);
  EXPECT_EQ(site->rows(verifications_sql, 1), verifications_before);

  // The daemon picks them up: a second verdict for vector_scale.py (attempt 2, the first kept),
  // and new generation attempts for vector_neg.py after the three it had.
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kDoneOrFailed, 8, 120s), 8) << d->log();
  ASSERT_EQ(site->wait_for("SELECT count(*) FROM verifications WHERE run_id = 1", 4, 60s), 4);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  auto verifications_after = site->rows(verifications_sql, 1);
  ASSERT_EQ(verifications_after.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(verifications_after.begin(), verifications_after.begin() + 3),
            verifications_before);
  EXPECT_NE(verifications_after[3].find("|vector_scale.py|2|failed"), std::string::npos)
      << verifications_after[3];
  auto outputs_after = site->rows(outputs_sql, 1);
  ASSERT_GT(outputs_after.size(), outputs_before.size());
  EXPECT_EQ(
      std::vector<std::string>(outputs_after.begin(),
                               outputs_after.begin() + static_cast<long>(outputs_before.size())),
      outputs_before);
  for (std::size_t i = outputs_before.size(); i < outputs_after.size(); ++i)
    EXPECT_NE(outputs_after[i].find("|vector_neg.py|generate|"), std::string::npos)
        << outputs_after[i];
  EXPECT_EQ(site->rows("SELECT j.state || '|' || j.error_kind FROM jobs j JOIN samples s ON s.id "
                       "= j.sample_id WHERE j.run_id = 1 AND s.key = 'vector_neg.py'",
                       1),
            std::vector<std::string>{"failed|rejected:no_test_function"});
}

}  // namespace
}  // namespace kforge::pipeline::e2e
