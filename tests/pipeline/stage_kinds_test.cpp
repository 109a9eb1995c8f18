// Open stage kinds: a pipeline version the product has never seen (tests/pipeline/stage_kinds/t3:
// an extra analysis stage, `plan`, and an extra answer field, generate's `reference`) is found
// through the ordinary prompts directory lookup and runs end to end through the scheduler, with
// the real LLM client, against kforge-fake-llm. Nothing in C++ names its stages: the spec
// (pipeline.yaml), the templates and the schemas are all there is.

#include <gtest/gtest.h>

#include <filesystem>

#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/scheduler.hpp"
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
           {rule("t3-analyze", {{"analysis", {{"core_function", "copies X into Z transposed"}}}}),
            rule("t3-plan", {{"plan", {{"steps", {"check Z against X.T on odd shapes"}}}}}),
            rule("t3-generate", generation_answer())}},
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

  std::int64_t scalar(const std::string& sql) {
    auto s = db_->prepare(sql);
    EXPECT_TRUE(s.ok()) << s.error().message;
    EXPECT_TRUE(*s->step());
    return s->int64(0);
  }
  std::string text(const std::string& sql) {
    auto s = db_->prepare(sql);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!*s->step()) return "";
    return s->text(0);
  }

  test::TempDir dir_;
  SystemClock clock_;
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
  EXPECT_EQ(t3.stages[0].name, "analyze");
  EXPECT_EQ(t3.stages[1].name, "plan");
  EXPECT_EQ(t3.stages[1].kind, StageKind::analysis);
  EXPECT_EQ(t3.stages[2].name, "generate");
  EXPECT_EQ(t3.stages[2].kind, StageKind::code);
  EXPECT_FALSE(t3.repair.has_value());
  EXPECT_EQ(t3.identities()["plan"]["kind"], "analysis");

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

  // Every stage answered once per sample, in the spec's order, each answer stored.
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE stage = 'verify'"), 3);
  for (const char* stage : {"analyze", "plan", "generate"})
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
  std::string generate_request =
      text("SELECT kf_text(request_text) FROM stage_outputs WHERE stage = 'generate' LIMIT 1");
  EXPECT_NE(generate_request.find("copies X into Z transposed"), std::string::npos);
  EXPECT_NE(generate_request.find("check Z against X.T on odd shapes"), std::string::npos);
  // The extra answer field is kept with the answer.
  auto parsed = json::parse(
      text("SELECT kf_text(parsed_text) FROM stage_outputs WHERE stage = 'generate' LIMIT 1"));
  EXPECT_EQ(parsed["reference"], "def reference(x):\n    return x.t().contiguous()\n");

  // Report learns the run's stages from what the run recorded, not from its version's name.
  auto info = report::find_run(*db_, "third");
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(info->has_analysis());
  EXPECT_EQ(info->stages(StageKind::analysis), (std::vector<std::string>{"analyze", "plan"}));
  EXPECT_EQ(info->stages(StageKind::code), (std::vector<std::string>{"generate"}));
}

}  // namespace
}  // namespace kforge::pipeline
