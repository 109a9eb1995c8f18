// The scheduler's logic, driven step by step with a ManualClock, a real SQLite database in a
// temp dir, and a fake LLM provider behind the gateway that answers only when the test says so.

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>

#include "db_util.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/scheduler.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The outside world: a provider that holds every request until answered or failed.
class FakeProvider final : public LlmGateway {
 public:
  struct Pending {
    std::string model;
    llm::ChatRequest req;
    llm::Callback done;
  };
  std::string request_sha256(const std::string& model, const llm::ChatRequest& req) override {
    return sha256_hex(request_json(model, req));
  }
  std::string request_json(const std::string& model, const llm::ChatRequest& req) override {
    json m = json::array();
    for (const auto& x : req.messages) m.push_back({{"role", x.role}, {"content", x.content}});
    return json{{"model", model}, {"messages", m}}.dump();
  }
  void submit(const std::string& model, llm::ChatRequest req, llm::Callback done) override {
    std::lock_guard lock(mu_);
    pending_.push_back(Pending{model, std::move(req), std::move(done)});
    ++submitted_;
  }
  void reload_limits(const llm::LlmConfig&) override {}
  llm::Stats stats() const override { return {}; }
  void shutdown(std::chrono::milliseconds) override {}
  // At most `limit` requests held at once (kforge batch import's llm.batch.lines_in_memory).
  int room() const override {
    std::lock_guard lock(mu_);
    return limit_ - static_cast<int>(pending_.size());
  }
  void limit(int n) { limit_ = n; }
  // Batch mode (llm.mode batch): the scheduler stores each request's body and hands its id.
  bool stores_request_bodies(const std::string&) const override { return batch_; }
  void batch(bool on) { batch_ = on; }

  std::size_t pending() {
    std::lock_guard lock(mu_);
    return pending_.size();
  }
  Pending take() {
    std::lock_guard lock(mu_);
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    return p;
  }
  const Pending& peek(std::size_t i) {
    std::lock_guard lock(mu_);
    return pending_[i];
  }
  void answer(const std::string& content) {
    Pending p = take();
    llm::ChatResponse r;
    r.request_sha256 = request_sha256(p.model, p.req);
    r.content = content;
    r.prompt_tokens = 100;
    r.completion_tokens = 20;
    r.cost_usd = 0.001;
    p.done(r);
  }
  void fail(const std::string& kind, Transient t) {
    Pending p = take();
    p.done(Error(kind, "POST http://fake/v1/chat/completions: scripted " + kind, t));
  }
  int submitted() const { return submitted_; }

 private:
  mutable std::mutex mu_;
  std::deque<Pending> pending_;
  int submitted_ = 0;
  int limit_ = std::numeric_limits<int>::max();
  bool batch_ = false;
};

const char* kCode = R"PY(
import triton
import triton.language as tl

@triton.jit
def copy_transpose_kernel(X, Z, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pass
)PY";

json analysis_answer(const std::string& kernel = "copy_transpose_kernel") {
  return {{"analysis",
           {{"core_function", "copies X into Z transposed"},
            {"functional_contract", "Z == X.T"},
            {"golden_reference", "def reference(X):\n    return X.t().contiguous()"},
            {"memory_access_pattern", {{"input_tensors", "X row-major"}, {"output_tensors", "Z"}}},
            {"key_parameters", {"BLOCK_M", "BLOCK_N"}},
            {"kernel_launches",
             {{{"kernel", kernel}, {"grid", "(cdiv(M, BLOCK_M),)"}, {"constexpr_arguments", ""}}}},
            {"preconditions", json::array()},
            {"edge_cases",
             {{"size_one", "ok"},
              {"non_multiple_of_block", "masked"},
              {"empty", "early return"},
              {"special_values", "copied"}}},
            {"numerics", "exact"}}}};
}

std::string generation_answer(bool launches = true) {
  std::string wrapper =
      "import torch\n\ndef copy_t(x):\n    z = torch.empty(x.shape[1], x.shape[0])\n";
  wrapper += launches ? "    copy_transpose_kernel[(1,)](x, z, 1, 1, BLOCK_M=16, BLOCK_N=16)\n"
                      : "    z.copy_(x.t())\n";
  wrapper += "    return z\n";
  return json{{"kernel_wrapper", wrapper},
              {"unitest_code",
               "import torch\n\ndef test_copy_t():\n    x = torch.randn(3, 5, device='cuda')\n"
               "    assert torch.equal(copy_t(x), x.t())\n"}}
      .dump();
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "kforge.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto lib = PromptLibrary::load(test::source_dir() / "prompts");
    ASSERT_TRUE(lib.ok()) << lib.error().message;
    prompts_ = std::make_unique<PromptLibrary>(std::move(*lib));
    jobs_ = std::make_unique<JobStore>(*db_, clock_, "hostA:1");
    cfg_.max_in_flight = 8;
    cfg_.lease_ms = 60'000;
    cfg_.max_attempts = 3;
    cfg_.max_transient_failures = 3;
    cfg_.retry_backoff_ms = 1'000;
    cfg_.failure_streak_pause = 3;
  }

  void add_samples(int n, const std::string& code = kCode, const std::string& prefix = "s") {
    store::Samples samples(*db_);
    for (int i = 0; i < n; ++i) {
      store::SampleRow r;
      r.key = prefix + std::to_string(i);
      r.code = code + "\n# variant " + r.key + "\n";
      r.code_sha256 = sha256_hex(r.code);
      r.description_1 = "copies X to Z";  // wrong on purpose: the code transposes
      r.description_2 = "a copy kernel";
      r.record_json = json{{"key", r.key}}.dump();
      r.source = "test";
      r.source_index = i;
      ASSERT_TRUE(samples.insert(r, clock_.wall_ms()).ok());
    }
  }

  std::int64_t create_run(const std::string& tag, const std::string& version, int limit = -1) {
    const PipelineSpec* spec = *prompts_->pipeline(version);
    NewRun run;
    run.tag = tag;
    run.pipeline = version;
    run.model = "fake-model";
    run.first_stage = spec->first_stage();
    run.prompts = spec->identities();
    run.sample_ids = *jobs_->sample_ids(limit);
    auto id = jobs_->create_run(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return *id;
  }

  std::unique_ptr<Scheduler> scheduler(JobStore& store) {
    return std::make_unique<Scheduler>(store, provider_, *prompts_, clock_, cfg_);
  }

  StepReport step(Scheduler& s) {
    auto r = s.step();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : StepReport{};
  }

  std::map<std::string, std::int64_t> states() {
    std::map<std::string, std::int64_t> out;
    auto s = db_->prepare("SELECT state || ':' || stage, count(*) FROM jobs GROUP BY 1");
    while (*s->step()) out[s->text(0)] = s->int64(1);
    return out;
  }

  std::int64_t scalar(const std::string& sql) { return test::db_scalar(*db_, sql); }

  test::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<PromptLibrary> prompts_;
  std::unique_ptr<JobStore> jobs_;
  PipelineConfig cfg_;
  FakeProvider provider_;
};

TEST_F(SchedulerTest, V2RunsAnalyzeThenGenerateBoundToTheStoredAnalysis) {
  add_samples(3);
  create_run("v2-a", "v2");
  auto s = scheduler(*jobs_);
  auto r = step(*s);
  EXPECT_EQ(r.leased, 3);
  ASSERT_EQ(provider_.pending(), 3u);
  const auto& first = provider_.peek(0);
  ASSERT_EQ(first.req.messages.size(), 1u);
  const std::string& prompt = first.req.messages[0].content;
  EXPECT_NE(prompt.find("def copy_transpose_kernel"), std::string::npos);
  EXPECT_NE(prompt.find("- `copy_transpose_kernel(X, Z, M, N, BLOCK_M: tl.constexpr, "
                        "BLOCK_N: tl.constexpr)` (line 6)"),
            std::string::npos);
  EXPECT_EQ(prompt.find("a copy kernel"), std::string::npos) << "analysis must see code only";
  EXPECT_EQ(prompt.find("{{"), std::string::npos);
  EXPECT_EQ(first.model, "fake-model");
  EXPECT_EQ(first.req.run, "v2-a");  // stored with the call (llm_calls.run_tag): the run's cost
  for (int i = 0; i < 3; ++i) provider_.answer(analysis_answer().dump());
  r = step(*s);
  EXPECT_EQ(r.completed, 3);
  EXPECT_EQ(r.submitted, 3);  // straight on to generate
  ASSERT_EQ(provider_.pending(), 3u);
  EXPECT_NE(provider_.peek(0).req.messages[0].content.find("\"functional_contract\": \"Z == X.T\""),
            std::string::npos);
  for (int i = 0; i < 3; ++i)
    provider_.answer("Here you go:\n```json\n" + generation_answer() + "\n```");
  r = step(*s);
  EXPECT_EQ(r.completed, 3);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"verify_queued:verify", 3}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'ok'"), 6);
  auto sha = (*prompts_->pipeline("v2"))->stage("generate")->sha256;
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE stage = 'generate' AND "
                   "prompt_version = 'v2' AND prompt_sha256 = '" +
                   sha +
                   "' AND kf_text(parsed_text) LIKE "
                   "'%copy_transpose_kernel[(1,)]%'"),
            3);
  EXPECT_EQ(scalar("SELECT sum(prompt_tokens) FROM stage_outputs"), 600);
  EXPECT_EQ(s->in_flight(), 0);
}

// In batch mode a waiting call holds its request's body by its id in the text store (read back
// for the stage output); an interactive one holds it in memory and writes no text before its
// checkpoint. Either way the stage output records the same request.
TEST_F(SchedulerTest, OnlyBatchModeCallsHoldTheirRequestBodyInTheTextStore) {
  add_samples(2);
  create_run("v2-a", "v2");
  auto s = scheduler(*jobs_);
  const std::string bodies = "SELECT count(*) FROM texts WHERE kf_text(id) LIKE '%\"messages\"%'";
  step(*s);
  ASSERT_EQ(provider_.pending(), 2u);
  EXPECT_EQ(provider_.peek(0).req.stored_body, 0);
  EXPECT_EQ(scalar(bodies), 0) << "no body stored while it waits";
  provider_.answer(analysis_answer().dump());
  provider_.batch(true);
  step(*s);  // the first sample's generate call, in batch mode
  ASSERT_EQ(provider_.pending(), 2u);
  std::int64_t id = provider_.peek(1).req.stored_body;
  ASSERT_NE(id, 0);
  EXPECT_EQ(scalar("SELECT count(*) FROM texts WHERE id = " + std::to_string(id) +
                   " AND kf_text(id) LIKE '%functional_contract%'"),
            1);
  provider_.answer(analysis_answer().dump());
  provider_.answer("```json\n" + generation_answer() + "\n```");
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'ok' AND "
                   "kf_text(request_text) LIKE '%\"messages\"%'"),
            3);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE stage = 'generate' AND "
                   "request_text = " +
                   std::to_string(id)),
            1);
}

// Issue 56, 7: a gateway that may hold only so many requests (kforge batch import reads each
// answer from its file when the request comes, llm.batch.lines_in_memory at a time) gets no more
// than its room in a step, whatever max_in_flight allows; more as calls complete.
TEST_F(SchedulerTest, NoMoreIsSubmittedThanTheGatewayHasRoomFor) {
  add_samples(8);
  create_run("v2-a", "v2");
  provider_.limit(3);
  auto s = scheduler(*jobs_);
  auto r = step(*s);
  EXPECT_EQ(r.submitted, 3);
  EXPECT_EQ(r.leased, 3) << "leased only what is submitted";
  EXPECT_EQ(provider_.pending(), 3u);
  r = step(*s);
  EXPECT_EQ(r.leased, 0);
  EXPECT_EQ(provider_.pending(), 3u);
  provider_.answer(analysis_answer().dump());
  r = step(*s);
  EXPECT_EQ(r.completed, 1);
  EXPECT_EQ(r.submitted, 1);
  EXPECT_EQ(provider_.pending(), 3u);
  EXPECT_EQ(s->in_flight(), 3);
  // Room again: the rest up to max_in_flight.
  provider_.limit(100);
  r = step(*s);
  EXPECT_EQ(s->in_flight(), 8);
  EXPECT_EQ(provider_.submitted(), 9);
}

TEST_F(SchedulerTest, AnUnusableAnswerIsRetriedWithItAndTheReasonThenFailsWithEveryErrorKept) {
  add_samples(1);
  create_run("v1-a", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  provider_.answer("Sorry, I cannot help with that.");
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  {
    const auto& retry = provider_.peek(0);
    ASSERT_EQ(retry.req.messages.size(), 3u);
    EXPECT_EQ(retry.req.messages[1].role, "assistant");
    EXPECT_EQ(retry.req.messages[1].content, "Sorry, I cannot help with that.");
    EXPECT_NE(retry.req.messages[2].content.find("could not be used"), std::string::npos);
  }
  provider_.answer(generation_answer(false));  // parses, but launches no kernel
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  EXPECT_NE(provider_.peek(0).req.messages[2].content.find("launches none of the code's kernels"),
            std::string::npos);
  provider_.answer("{\"kernel_wrapper\": 1}");
  step(*s);
  EXPECT_EQ(provider_.pending(), 0u);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"failed:generate", 1}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'parse_error'"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'rejected' AND "
                   "error_kind = 'no_kernel_launch'"),
            1);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'rejected:no_kernel_launch'"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'parse'"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'failed' AND message LIKE "
                   "'3 unusable answers at stage generate%'"),
            1);
  EXPECT_EQ(scalar("SELECT attempts FROM jobs"), 3);
}

TEST_F(SchedulerTest, TransientErrorsBackOffAndRepeatTheSameRequestThenFail) {
  add_samples(1);
  create_run("v1-t", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  std::string sha = provider_.request_sha256("fake-model", provider_.peek(0).req);
  provider_.fail("timeout", Transient::yes);
  step(*s);
  EXPECT_EQ(provider_.pending(), 0u) << "not before the backoff";
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"queued:generate", 1}}));
  clock_.advance(std::chrono::milliseconds(999));
  step(*s);
  EXPECT_EQ(provider_.pending(), 0u);
  clock_.advance(std::chrono::milliseconds(1));
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  EXPECT_EQ(provider_.request_sha256("fake-model", provider_.peek(0).req), sha);
  provider_.fail("connect", Transient::yes);
  step(*s);
  clock_.advance(std::chrono::milliseconds(1'999));  // the second backoff doubles
  step(*s);
  EXPECT_EQ(provider_.pending(), 0u);
  clock_.advance(std::chrono::milliseconds(1));
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  provider_.fail("rate_limit", Transient::yes);
  step(*s);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"failed:generate", 1}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'llm_error'"), 3);
  // A failed call's identity is hashed from the body held for it when its outcome is read (no
  // answer brings it): the gateway's identity of the request asked.
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'llm_error' AND "
                   "request_sha256 = '" +
                   sha + "'"),
            3);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind LIKE 'llm:%'"), 3);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'failed' AND message LIKE "
                   "'3 provider failures%rate_limit%'"),
            1);
}

TEST_F(SchedulerTest, PermanentErrorsFailAtOnceAndAStreakPausesTheRun) {
  add_samples(5);
  create_run("v1-p", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  ASSERT_EQ(provider_.pending(), 5u);
  for (int i = 0; i < 3; ++i) provider_.fail("http", Transient::no);
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'failed'"), 3);
  auto run = jobs_->run_by_tag("v1-p");
  EXPECT_EQ((*run)->state, store::RunState::paused);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'paused' AND job_id IS NULL"), 1);
  // The two still in flight finish; nothing new is leased while paused.
  provider_.answer(generation_answer());
  provider_.answer(generation_answer());
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'"), 2);
  EXPECT_EQ(provider_.submitted(), 5);
}

TEST_F(SchedulerTest, ADeadOwnersLeasesExpireAndAreTakenAgainWithoutItsLateAnswer) {
  add_samples(2);
  create_run("v1-l", "v1");
  {
    auto a = scheduler(*jobs_);  // the daemon that will "die"
    step(*a);
    ASSERT_EQ(provider_.pending(), 2u);
  }
  JobStore other(*db_, clock_, "hostB:7");
  auto b = scheduler(other);
  step(*b);
  EXPECT_EQ(provider_.pending(), 2u) << "live leases are not taken";
  clock_.advance(std::chrono::milliseconds(cfg_.lease_ms));
  auto r = step(*b);
  EXPECT_EQ(r.leased, 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE lease_owner = 'hostB:7'"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'lease_expired' AND message "
                   "LIKE '%hostA:1%'"),
            2);
  // The dead owner's checkpoint would be refused now.
  LeasedJob stale{1, 1, 1, "generate", 0};
  NextState next{store::JobState::verify_queued, "verify", 0, 0, std::nullopt, std::nullopt};
  auto held = jobs_->checkpoint(stale, std::nullopt, next, {});
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(*held);
  provider_.take();  // A's calls, answered after its death: dropped with A's callbacks
  provider_.take();
  provider_.answer(generation_answer());
  provider_.answer(generation_answer());
  step(*b);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"verify_queued:verify", 2}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs"), 2);
}

TEST_F(SchedulerTest, LeasesAreRenewedWhileCallsRun) {
  add_samples(1);
  create_run("v1-r", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  std::int64_t first = scalar("SELECT lease_expires_ms FROM jobs");
  for (int i = 0; i < 6; ++i) {
    clock_.advance(std::chrono::milliseconds(cfg_.lease_ms / 2));
    step(*s);
  }
  EXPECT_GT(scalar("SELECT lease_expires_ms FROM jobs"), first + cfg_.lease_ms);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'leased'"), 1);
}

TEST_F(SchedulerTest, ConcurrentRunsShareTheCapacityFairly) {
  add_samples(20);
  create_run("A", "v1");
  create_run("B", "v2");
  auto s = scheduler(*jobs_);
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 1"), 4);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 2"), 4);
  // A third run joins: each gets a third as calls complete.
  create_run("C", "v1", 6);
  clock_.advance(std::chrono::milliseconds(cfg_.idle_poll_ms));
  for (int i = 0; i < 8; ++i) {
    auto p = provider_.peek(0);
    bool analyze = p.req.messages[0].content.find("# How to analyse") != std::string::npos;
    provider_.answer(analyze ? analysis_answer().dump() : generation_answer());
  }
  step(*s);
  std::int64_t a = scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 1");
  std::int64_t b = scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 2");
  std::int64_t c = scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 3");
  EXPECT_EQ(a + b + c, 8);
  for (std::int64_t n : {a, b, c}) {
    EXPECT_GE(n, 2);
    EXPECT_LE(n, 3);
  }
}

TEST_F(SchedulerTest, ARunWhoseShareIsUnusedLeavesItToTheOthers) {
  add_samples(10);
  create_run("small", "v1", 2);
  create_run("big", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 1"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'leased' AND run_id = 2"), 6);
}

TEST_F(SchedulerTest, ARunIsRefusedWhenATemplateItStartedWithChanged) {
  add_samples(2);
  test::TempDir copy;
  fs::copy(test::source_dir() / "prompts", copy.path() / "prompts", fs::copy_options::recursive);
  create_run("v2-old", "v2");
  create_run("v1-ok", "v1");
  auto gen = copy.path() / "prompts" / "v2" / "generate.md";
  test::write_text(gen, test::read_text(gen) + "\nAlso add docstrings.\n");
  auto changed = PromptLibrary::load(copy.path() / "prompts");
  ASSERT_TRUE(changed.ok());
  Scheduler s(*jobs_, provider_, *changed, clock_, cfg_);
  step(s);
  EXPECT_EQ(provider_.pending(), 2u);  // only v1's jobs
  for (std::size_t i = 0; i < provider_.pending(); ++i)
    EXPECT_EQ(provider_.peek(i).req.messages[0].content.find("# How to analyse"),
              std::string::npos);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE run_id = 1 AND state = 'queued'"), 2);
  ASSERT_EQ(s.refused().size(), 1u);
  EXPECT_NE(s.refused().begin()->second.find("prompts/v2/generate.md changed"), std::string::npos);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'prompt_changed' AND run_id = 1"),
            1);
}

TEST_F(SchedulerTest, CancellingARunDropsTheAnswersOfItsCallsInFlight) {
  add_samples(2);
  create_run("v1-c", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  auto n = jobs_->cancel_run("v1-c");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  provider_.answer(generation_answer());
  provider_.answer(generation_answer());
  step(*s);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"cancelled:generate", 2}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs"), 0);
  EXPECT_EQ(s->stats().lost_leases, 2u);
}

TEST_F(SchedulerTest, DrainingStopsLeasingAndReleaseGivesJobsBack) {
  add_samples(4);
  create_run("v1-d", "v1");
  cfg_.max_in_flight = 2;
  auto s = scheduler(*jobs_);
  step(*s);
  s->drain();
  provider_.answer(generation_answer());
  step(*s);
  EXPECT_EQ(provider_.pending(), 1u) << "nothing new leased while draining";
  auto released = s->release_all();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 1);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"queued:generate", 3},
                                                           {"verify_queued:verify", 1}}));
  provider_.answer(generation_answer());  // the abandoned call's late answer changes nothing
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs"), 1);
}

TEST_F(SchedulerTest, CodeWithoutKernelsFailsBeforeAnyCall) {
  add_samples(1, "import torch\n\ndef f(x):\n    return x\n");
  create_run("v2-n", "v2");
  auto s = scheduler(*jobs_);
  auto r = step(*s);
  EXPECT_EQ(provider_.submitted(), 0);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"failed:analyze", 1}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM job_events WHERE kind = 'failed' AND message LIKE "
                   "'before any LLM call: the code defines no @triton.jit kernel'"),
            1);
  (void)r;
}

TEST_F(SchedulerTest, AnAnalysisNamingAnUnknownKernelIsRejected) {
  add_samples(1);
  create_run("v2-u", "v2");
  auto s = scheduler(*jobs_);
  step(*s);
  provider_.answer(analysis_answer("copy_kernel").dump());
  step(*s);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'rejected' AND error_kind "
                   "= 'unknown_kernel'"),
            1);
  ASSERT_EQ(provider_.pending(), 1u);
  EXPECT_EQ(provider_.peek(0).req.messages.size(), 3u);
}

TEST_F(SchedulerTest, ACheckpointThatCannotBeWrittenIsKeptForTheNextStep) {
  add_samples(2);
  create_run("v1-b", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  provider_.answer(generation_answer());
  provider_.answer(generation_answer());
  store::OpenOptions o;
  o.path = (dir_ / "kforge.db").string();
  auto other = store::Db::open(o);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->exec("BEGIN IMMEDIATE").ok());  // another writer holds the lock
  ASSERT_TRUE(db_->exec("PRAGMA busy_timeout = 50").ok());
  auto r = s->step();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "sqlite");
  EXPECT_EQ(s->in_flight(), 2);
  ASSERT_TRUE((*other)->exec("ROLLBACK").ok());
  auto again = step(*s);
  EXPECT_EQ(again.completed, 2);
  EXPECT_EQ(s->in_flight(), 0);
  EXPECT_EQ(states(), (std::map<std::string, std::int64_t>{{"verify_queued:verify", 2}}));
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs"), 2);
}

TEST_F(SchedulerTest, StructuredOutputAsksTheClientToParseAgainstTheStageSchema) {
  add_samples(1);
  create_run("v2-s", "v2");
  cfg_.structured_output = true;
  auto s = scheduler(*jobs_);
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  {
    const auto& req = provider_.peek(0).req;
    EXPECT_TRUE(req.expect_json);
    ASSERT_TRUE(req.response_schema.has_value());
    EXPECT_EQ(*req.response_schema, (*prompts_->pipeline("v2"))->stage("analyze")->schema);
    EXPECT_EQ(req.schema_name, "kforge_v2_analyze");
  }
  provider_.fail("parse", Transient::no);  // the client found no valid JSON in the reply
  step(*s);
  ASSERT_EQ(provider_.pending(), 1u);
  const auto& retry = provider_.peek(0).req;
  ASSERT_EQ(retry.messages.size(), 2u);  // the unparsed answer is not known: only the reason
  EXPECT_EQ(retry.messages[1].role, "user");
  EXPECT_NE(retry.messages[1].content.find("scripted parse"), std::string::npos);
  EXPECT_EQ(scalar("SELECT count(*) FROM stage_outputs WHERE status = 'llm_error' AND "
                   "error_kind = 'parse'"),
            1);
}

TEST_F(SchedulerTest, ARunFinishesWhenEveryJobHasEnded) {
  add_samples(1);
  create_run("v1-f", "v1");
  auto s = scheduler(*jobs_);
  step(*s);
  provider_.fail("http", Transient::no);
  step(*s);
  clock_.advance(std::chrono::milliseconds(1'000));
  step(*s);
  EXPECT_EQ((*jobs_->run_by_tag("v1-f"))->state, store::RunState::finished);
}

}  // namespace
}  // namespace kforge::pipeline
