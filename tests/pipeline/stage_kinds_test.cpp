// Open stage kinds: a pipeline version the product has never seen (tests/pipeline/stage_kinds/t3:
// stage names the shipped versions do not use, survey and write, an extra analysis stage, `plan`,
// and an extra answer field, write's `reference`) is found through the ordinary prompts directory
// lookup and runs end to end through the scheduler, with the real LLM client, against
// kforge-fake-llm; then the verifier's queue, export, debug and retry find its code by the code
// stage's kind. Nothing in C++ or SQL names its stages: the spec (pipeline.yaml), the templates
// and the schemas are all there is.

#include <gtest/gtest.h>

#include <filesystem>

#include "db_util.hpp"
#include "kforge/app/retry.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/scheduler.hpp"
#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/report/debug.hpp"
#include "kforge/report/export.hpp"
#include "kforge/report/outcomes.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using store::StageKind;

const char* kCode = R"PY(
import triton
import triton.language as tl

@triton.jit
def copy_transpose_kernel(X, Z, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pass
)PY";

json generation_answer() {
  return {{"kernel_wrapper",
           "import torch\n\ndef copy_t(x):\n    z = torch.empty(x.shape[1], x.shape[0])\n"
           "    copy_transpose_kernel[(1,)](x, z, 1, 1, BLOCK_M=16, BLOCK_N=16)\n    return z\n"},
          {"unitest_code",
           "import torch\n\ndef test_copy_t():\n    x = torch.randn(3, 5, device='cuda')\n"
           "    assert torch.equal(copy_t(x), x.t())\n"},
          {"reference", "def reference(x):\n    return x.t().contiguous()\n"}};
}

// The fake provider answers each stage by the marker its template starts with.
json script() {
  auto rule = [](const char* stage, json answer) {
    return json{{"name", stage},
                {"match", {{"contains", std::string("STAGE ") + stage + "."}}},
                {"reply_json", std::move(answer)}};
  };
  return {{"rules",
           {rule("t3-survey", {{"analysis", {{"core_function", "copies X into Z transposed"}}}}),
            rule("t3-plan", {{"plan", {{"steps", {"check Z against X.T on odd shapes"}}}}}),
            rule("t3-write", generation_answer())}},
          {"defaults", {{"reply", "no rule for this request"}}}};
}

class StageKinds : public ::testing::Test {
 protected:
  void SetUp() override {
    // The shipped prompts and the test's version side by side, found as any prompts directory.
    fs::copy(test::source_dir() / "prompts", dir_.path() / "prompts", fs::copy_options::recursive);
    fs::copy(test::source_dir() / "tests" / "pipeline" / "stage_kinds" / "t3",
             dir_.path() / "prompts" / "t3", fs::copy_options::recursive);
    auto located = PromptLibrary::locate((dir_.path() / "prompts").string());
    ASSERT_TRUE(located.ok()) << located.error().message;
    auto lib = PromptLibrary::load(*located);
    ASSERT_TRUE(lib.ok()) << lib.error().message;
    prompts_ = std::make_unique<PromptLibrary>(std::move(*lib));
    auto db = store::Db::open({.path = (dir_.path() / "kforge.db").string()});
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    jobs_ = std::make_unique<JobStore>(*db_, clock_, "hostA:1");
  }
  void TearDown() override {
    sched_.reset();
    if (gateway_) gateway_->shutdown(std::chrono::milliseconds(0));
  }

  // Runs the three stages of t3 for three samples, with the real client against the fake
  // provider, until every job waits for the verifier.
  void run_t3() {
    auto spec = prompts_->pipeline("t3");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    const PipelineSpec& t3 = **spec;
    auto s = fake_llm::FakeLlmServer::start(script());
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    store::Samples samples(*db_);
    for (int i = 0; i < 3; ++i) {
      store::SampleRow r;
      r.key = "s" + std::to_string(i);
      r.code = std::string(kCode) + "\n# variant " + r.key + "\n";
      r.code_sha256 = sha256_hex(r.code);
      r.record_json = json{{"key", r.key}}.dump();
      r.source = "test";
      r.source_index = i;
      ASSERT_TRUE(samples.insert(r, clock_.wall_ms()).ok());
    }
    NewRun run;
    run.tag = "third";
    run.pipeline = "t3";
    run.model = "fake-model";
    run.first_stage = t3.first_stage();
    run.prompts = t3.identities();
    run.sample_ids = *jobs_->sample_ids(-1);
    ASSERT_TRUE(jobs_->create_run(run).ok());

    llm::LlmConfig llm;
    llm.base_url = server_->base_url();
    llm.model = "fake-model";
    llm.api_key_env = "KFORGE_TEST_NO_KEY";
    llm::ClientOptions o;
    o.db_path = (dir_.path() / "kforge.db").string();
    o.env = [](const std::string&) -> std::optional<std::string> { return "sk-test"; };
    gateway_ = make_client_gateway(llm, o);
    PipelineConfig cfg;
    cfg.idle_poll_ms = 20;
    sched_ = std::make_unique<Scheduler>(*jobs_, *gateway_, *prompts_, clock_, cfg);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto done = [&] {
      return scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'") == 3;
    };
    while (!done() && std::chrono::steady_clock::now() < until) {
      auto r = sched_->step();
      ASSERT_TRUE(r.ok()) << r.error().message;
      sched_->wait(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(done()) << text(
        "SELECT group_concat(state || ' ' || stage || ' ' || "
        "coalesce(error, ''), '; ') FROM jobs");
  }

  std::int64_t scalar(const std::string& sql) { return test::db_scalar(*db_, sql); }
  std::string text(const std::string& sql) { return test::db_text(*db_, sql); }

  test::TempDir dir_;
  Clock& clock_ = system_clock();
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<PromptLibrary> prompts_;
  std::unique_ptr<JobStore> jobs_;
  std::unique_ptr<fake_llm::FakeLlmServer> server_;
  std::unique_ptr<LlmGateway> gateway_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(StageKinds, AThirdVersionWithAnExtraStageAndFieldRunsEndToEndAndIsStored) {
  auto spec = prompts_->pipeline("t3");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  const PipelineSpec& t3 = **spec;
  ASSERT_EQ(t3.stages.size(), 3u);
  EXPECT_EQ(t3.stages[0].name, "survey");
  EXPECT_EQ(t3.stages[1].name, "plan");
  EXPECT_EQ(t3.stages[1].kind, StageKind::analysis);
  EXPECT_EQ(t3.stages[2].name, "write");
  EXPECT_EQ(t3.stages[2].kind, StageKind::code);
  EXPECT_FALSE(t3.repair.has_value());
  EXPECT_EQ(t3.identities()["plan"]["kind"], "analysis");

  run_t3();
  if (HasFatalFailure()) return;

  // Every stage answered once per sample, in the spec's order, each answer stored.
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE stage = 'verify'"), 3);
  for (const char* stage : {"survey", "plan", "write"})
    EXPECT_EQ(scalar(std::string("SELECT count(*) FROM stage_outputs WHERE status = 'ok' AND "
                                 "prompt_version = 't3' AND stage = '") +
                     stage + "'"),
              3)
        << stage;
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs"), 9);
  EXPECT_EQ(server_->stats()["by_rule"]["t3-plan"].get<int>(), 3);
  // The extra stage saw the analysis; the code stage saw both analyses' answers, merged.
  std::string plan_request =
      text("SELECT kf_text(request_text) FROM stage_outputs WHERE stage = 'plan' LIMIT 1");
  EXPECT_NE(plan_request.find("copies X into Z transposed"), std::string::npos) << plan_request;
  std::string write_request =
      text("SELECT kf_text(request_text) FROM stage_outputs WHERE stage = 'write' LIMIT 1");
  EXPECT_NE(write_request.find("copies X into Z transposed"), std::string::npos);
  EXPECT_NE(write_request.find("check Z against X.T on odd shapes"), std::string::npos);
  // The extra answer field is kept with the answer.
  auto parsed = json::parse(
      text("SELECT kf_text(parsed_text) FROM stage_outputs WHERE stage = 'write' LIMIT 1"));
  EXPECT_EQ(parsed["reference"], "def reference(x):\n    return x.t().contiguous()\n");

  // Report learns the run's stages from what the run recorded, not from its version's name.
  auto info = report::find_run(*db_, "third");
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(info->has_analysis());
  EXPECT_EQ(info->stages(StageKind::analysis), (std::vector<std::string>{"survey", "plan"}));
  EXPECT_EQ(info->stages(StageKind::code), (std::vector<std::string>{"write"}));
}

// The code stage's answer holds the code (the view code_outputs joins the kinds the run recorded,
// migration 0021), whatever the stage is called: the verifier's queue leases it, export and
// debug show it, and retry verifies it again.
TEST_F(StageKinds, TheCodeOfAStageOfKindCodeReachesTheVerifierExportDebugAndRetry) {
  run_t3();
  if (HasFatalFailure()) return;
  const json answer = generation_answer();
  const std::string wrapper = answer["kernel_wrapper"], test = answer["unitest_code"];

  // The verifier: every job leased with the write stage's code, round 0.
  JobsVerifyQueue queue(*db_);
  const std::int64_t now = clock_.wall_ms();
  std::vector<verify::LeasedSample> leased;
  for (int i = 0; i < 3; ++i) {
    auto l = queue.lease("hostV:1", now + 60'000, now);
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE(l->has_value()) << "lease " << i;
    EXPECT_EQ((*l)->request.kernel_wrapper, wrapper) << (*l)->request.key;
    EXPECT_EQ((*l)->request.unitest_code, test) << (*l)->request.key;
    EXPECT_EQ((*l)->job.round, 0);
    leased.push_back(std::move(**l));
  }
  for (const auto& l : leased) {
    verify::VerifyResult r;
    r.key = l.request.key;
    r.verdict = verify::Verdict::failed;
    r.detail = "AssertionError: transposed wrong";
    auto stored = queue.store_verdict("hostV:1", l.job, r, now + 1);
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    EXPECT_EQ(*stored, verify::VerdictOutcome::stored);
  }

  // Export: each record carries the code and the analysis.
  const fs::path out = dir_.path() / "third.jsonl";
  auto exported = report::export_run(*db_, "third", out, {});
  ASSERT_TRUE(exported.ok()) << exported.error().message;
  EXPECT_EQ(exported->written, 3);
  auto lines = read_file(out);
  ASSERT_TRUE(lines.ok()) << lines.error().message;
  int records = 0;
  for (std::size_t at = 0, nl; (nl = lines->find('\n', at)) != std::string::npos; at = nl + 1) {
    auto rec = json::parse(lines->substr(at, nl - at));
    EXPECT_EQ(rec["kernel_wrapper"], wrapper) << rec.dump();
    EXPECT_EQ(rec["unitest_code"], test) << rec.dump();
    EXPECT_EQ(rec["verdict"], "failed") << rec.dump();
    EXPECT_FALSE(rec["kernel_analysis"].is_null()) << rec.dump();
    ++records;
  }
  EXPECT_EQ(records, 3);

  // Debug: the sample's folder holds the code the verdict judged.
  auto folder = report::write_debug(*db_, "third", "s1", dir_.path() / "debug");
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  EXPECT_EQ(read_file(*folder / "kernel_wrapper.py").value_or(""), wrapper);
  EXPECT_EQ(read_file(*folder / "unitest_code.py").value_or(""), test);
  EXPECT_TRUE(fs::exists(*folder / "write.request.json"));

  // Retry: the code stage, by its name in this run, is a place to start again (a dry run); and
  // the failed samples go back to the verifier, which gets the same code again.
  report::RetryOptions from_write;
  from_write.verdicts = {"failed"};
  from_write.stage = "write";
  auto dry = app::retry(*db_, "third", from_write, now + 2, Commit::no);
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  EXPECT_EQ(dry->selection.by_stage,
            (std::vector<std::pair<std::string, std::int64_t>>{{"write", 3}}));
  report::RetryOptions again;
  again.verdicts = {"failed"};
  auto retried = app::retry(*db_, "third", again, now + 2, Commit::yes);
  ASSERT_TRUE(retried.ok()) << retried.error().message;
  EXPECT_EQ(retried->result.requeued, 3);
  auto relisted = queue.lease("hostV:1", now + 60'000, now + 3);
  ASSERT_TRUE(relisted.ok()) << relisted.error().message;
  ASSERT_TRUE(relisted->has_value());
  EXPECT_EQ((*relisted)->request.kernel_wrapper, wrapper);
  EXPECT_EQ((*relisted)->request.unitest_code, test);
}

}  // namespace
}  // namespace kforge::pipeline
