// kforge batch export TAG --out requests.jsonl / kforge batch import TAG results.jsonl: a run's
// ready stage requests as a batch input file (OpenAI Batch API and `vllm run-batch` format), and
// the answers of a result file checkpointed exactly as the daemon checkpoints them.
//
// Both drive the daemon's own scheduler over this run's jobs only, through a gateway that
// writes the requests (export) or answers them from the file (import, through the LLM client's
// answer(): parsed, recorded in llm_calls and checkpointed as stage outputs); requests they do
// not answer are given back to the queue unchanged, so their identity, and the custom_id the
// file carries, stays the same until they are answered.

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "batch_export_file.hpp"
#include "batch_result_file.hpp"
#include "commands.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/llm/batch_file.hpp"
#include "kforge/llm/client.hpp"
#include "kforge/llm/errors.hpp"
#include "kforge/llm/result_line.hpp"
#include "kforge/pipeline/gateway.hpp"
#include "kforge/pipeline/heartbeat.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/scheduler.hpp"

namespace kforge::cli {
namespace {

using json = nlohmann::json;

struct BatchArgs {
  std::string tag;
  std::string out;
  std::string file;
  bool json = false;
};

// Writes requests (export) or answers them from a result file (import); the rest are held and
// never answered (their jobs go back to the queue at the end). An import reads an answer from the
// file when its request comes, and takes at most llm.batch.lines_in_memory requests with their
// answers at a time (room()): the scheduler submits no more until some are recorded.
class OfflineGateway final : public pipeline::LlmGateway {
 public:
  OfflineGateway(const llm::LlmConfig& cfg, llm::ClientOptions opts, ResultFile* results)
      : clients_(offline(cfg), std::move(opts)),
        results_(results),
        in_memory_(cfg.batch.lines_in_memory) {}
  ~OfflineGateway() override { shutdown(std::chrono::milliseconds(0)); }

  std::string request_sha256(const std::string& model, const llm::ChatRequest& req) override {
    auto c = client(model);
    return c.ok() ? (*c)->request_sha256(req) : std::string();
  }
  std::string request_json(const std::string& model, const llm::ChatRequest& req) override {
    auto c = client(model);
    return c.ok() ? (*c)->request_json(req) : std::string("{}");
  }
  std::string request_sha256_of(const std::string& model, const llm::ChatRequest& req,
                                const std::string& body) override {
    auto c = client(model);
    return c.ok() ? (*c)->request_sha256(req, body) : std::string();
  }
  void submit(const std::string& model, llm::ChatRequest req, llm::Callback done) override {
    auto c = client(model);
    if (!c.ok()) {
      done(c.error());
      return;
    }
    std::string sha = (*c)->request_sha256(req);
    if (results_ == nullptr) {
      std::lock_guard lk(mu_);
      write_line(llm::input_line(sha, llm::kBatchChatEndpoint, (*c)->request_json(req)));
      ++exported_;
      held_.push_back(std::move(done));
      return;
    }
    std::optional<std::string> answer = results_->answer(sha);
    if (!answer) {
      if (auto f = results_->failure(sha)) {
        // A failed line: its error is recorded, the request stays queued.
        (*c)->record_failure(req, f->http_status, f->error);
        std::lock_guard lk(mu_);
        failed_ids_.insert(sha);
      }
      std::lock_guard lk(mu_);
      held_.push_back(std::move(done));
      return;
    }
    matched_.fetch_add(1);
    answering_.fetch_add(1);
    {
      std::lock_guard lk(mu_);
      matched_ids_.insert(sha);
    }
    (*c)->answer(std::move(req), std::move(*answer), [this, done](Result<llm::ChatResponse> r) {
      if (r.ok() && r->from_store) replayed_.fetch_add(1);
      if (!r.ok()) failed_.fetch_add(1);
      done(std::move(r));
      answering_.fetch_sub(1);
    });
  }
  // An import: at most llm.batch.lines_in_memory answers being recorded at a time.
  int room() const override {
    if (results_ == nullptr) return LlmGateway::room();
    return std::max(0, in_memory_ - answering_.load());
  }
  // An export holds every request of the run until it ends: each body in the text store.
  bool stores_request_bodies(const std::string&) const override { return true; }
  void reload_limits(const llm::LlmConfig&) override {}
  llm::Stats stats() const override { return {}; }
  void shutdown(std::chrono::milliseconds grace) override { clients_.shutdown(grace); }

  int held() {
    std::lock_guard lk(mu_);
    return static_cast<int>(held_.size());
  }
  // The held requests' callbacks, once nothing will take their answers any more.
  void drop_held() {
    std::vector<llm::Callback> h;
    {
      std::lock_guard lk(mu_);
      h.swap(held_);
    }
    for (auto& cb : h)
      cb(fail(llm::to_string(llm::ErrorKind::cancelled), "not in this batch file", Transient::yes));
  }
  // export: where the lines go (batch_export_file.hpp).
  void write_to(ExportFile* out) { out_ = out; }
  int exported() const { return exported_; }
  bool was_matched(const std::string& sha) {
    std::lock_guard lk(mu_);
    return matched_ids_.count(sha) != 0;
  }
  // Failed lines for a ready request (their errors recorded).
  bool failure_recorded(const std::string& sha) {
    std::lock_guard lk(mu_);
    return failed_ids_.count(sha) != 0;
  }
  int matched() const { return matched_.load(); }
  int replayed() const { return replayed_.load(); }
  int failed() const { return failed_.load(); }

 private:
  static llm::LlmConfig offline(llm::LlmConfig cfg) {
    cfg.mode = llm::Mode::interactive;  // nothing here goes to a provider
    cfg.modes.clear();
    return cfg;
  }
  Result<llm::Client*> client(const std::string& model) { return clients_.get(model); }

  pipeline::ModelClients clients_;
  ResultFile* results_;  // import: the answers; export: none
  const int in_memory_;
  std::atomic<int> answering_{0};  // answers given to the client and not yet delivered
  std::mutex mu_;
  std::set<std::string> failed_ids_;
  std::vector<llm::Callback> held_;
  void write_line(const std::string& line) {
    if (out_ != nullptr) out_->add(line);
  }
  ExportFile* out_ = nullptr;
  std::set<std::string> matched_ids_;
  int exported_ = 0;
  std::atomic<int> matched_{0}, replayed_{0}, failed_{0};
};

// What the scheduler made of the answers: stage outputs by status, over every stage.
using OutputCounts = std::map<store::OutputStatus, int>;

// Runs the scheduler over the run's jobs until every request it could lease is either held or
// answered and checkpointed; then gives the held ones back to the queue.
Result<OutputCounts> drive(const app::Config& cfg, store::Db& db, const std::string& tag,
                           OfflineGateway& gw) {
  Env& env = default_env();
  Clock& clock = env.clock();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  KF_TRY(auto daemon, pipeline::daemon_state(db, clock.wall_ms(), host, [&env](std::int64_t pid) {
           return env.alive(static_cast<pid_t>(pid));
         }));
  if (daemon.liveness == pipeline::Liveness::running)
    return fail("busy", "a kforged is running on " + db.path() +
                            ": stop it first (batch export and import lease the run's jobs)");
  pipeline::JobStore jobs(db, clock, "kforge-batch:" + std::to_string(::getpid()));
  KF_TRY(auto run, jobs.run_by_tag(tag));
  if (!run) return fail("usage", "no run '" + tag + "' (kforge status lists the runs)");
  if (run->state != store::RunState::active)
    return fail("usage", "run '" + tag + "' is " + std::string(store::to_string(run->state)) +
                             ", not active");
  KF_TRY(auto dir, pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir));
  KF_TRY(auto lib, pipeline::PromptLibrary::load(dir));
  pipeline::PipelineConfig pc = cfg.pipeline;
  pc.only_run = tag;
  pc.max_in_flight = 1'000'000;
  pc.verify_backlog = 0;
  pc.idle_poll_ms = 0;
  pipeline::Scheduler sched(jobs, gw, lib, clock, pc);
  for (int round = 0; round < 100'000; ++round) {
    KF_TRY(auto rep, sched.step());
    if (auto why = sched.refused().find(run->id); why != sched.refused().end())
      return fail("prompt_changed", why->second);
    if (rep.leased == 0 && rep.completed == 0 && sched.in_flight() == gw.held()) break;
    if (sched.in_flight() > gw.held()) sched.wait(std::chrono::milliseconds(200));
  }
  KF_TRY(int released, sched.release_all());
  (void)released;
  gw.shutdown(std::chrono::milliseconds(5'000));
  gw.drop_held();
  OutputCounts out;
  for (const auto& [stage_status, n] : sched.stats().outputs) {
    // "stage:status"
    KF_TRY(auto status, store::parse_output_status(
                            std::string_view(stage_status).substr(stage_status.rfind(':') + 1)));
    out[status] += static_cast<int>(n);
  }
  return out;
}

}  // namespace

Command add_batch(CLI::App& root, Globals& g) {
  auto args = std::make_shared<BatchArgs>();
  CLI::App* cmd = root.add_subcommand(
      "batch", "Offline batches: a run's ready requests to a file, and answers from one");
  cmd->require_subcommand(1);
  CLI::App* exp = cmd->add_subcommand(
      "export",
      "Write the run's ready stage requests as a batch input file (JSON Lines, the "
      "OpenAI Batch API and vllm run-batch format)");
  exp->add_option("tag", args->tag, "The run's tag")->required();
  exp->add_option("--out", args->out, "The file to write ('-': standard output)")->required();
  CLI::App* imp = cmd->add_subcommand(
      "import",
      "Checkpoint the answers of a batch result file (such as vllm run-batch output) "
      "for the run's ready requests");
  imp->add_option("tag", args->tag, "The run's tag")->required();
  imp->add_option("results", args->file, "The result file (JSON Lines)")->required();
  for (CLI::App* c : {exp, imp}) c->add_flag("--json", args->json, "Print one JSON object");

  return {cmd, [args, &g, exp]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
            llm::ClientOptions copts;
            copts.db_path = cfg.store.path;
            copts.db_busy_timeout_ms = cfg.store.busy_timeout_ms;
            if (exp->parsed()) {
              KF_TRY_OR_REPORT(ExportFile out, ExportFile::create(args->out));
              OfflineGateway gw(cfg.llm, copts, nullptr);
              gw.write_to(&out);
              KF_TRY_OR_REPORT(auto ignored, drive(cfg, *db, args->tag, gw));
              (void)ignored;
              KF_CHECK_OR_REPORT(out.commit());
              if (args->json) {
                std::printf("%s\n",
                            json{{"requests", gw.exported()}, {"out", args->out}}.dump().c_str());
              } else if (args->out != "-") {
                std::fprintf(stderr, "wrote %d requests of run %s to %s\n", gw.exported(),
                             args->tag.c_str(), args->out.c_str());
              }
              return kOk;
            }
            std::vector<std::string> errors;
            KF_TRY_OR_REPORT(auto results, ResultFile::open(args->file, &errors));
            if (!errors.empty()) {
              for (std::size_t i = 0; i < errors.size() && i < 20; ++i)
                std::fprintf(stderr, "kforge: %s\n", printable(errors[i]).c_str());
              if (errors.size() > 20)
                std::fprintf(stderr, "kforge: ... and %zu more\n", errors.size() - 20);
              std::fprintf(stderr, "kforge: nothing imported: fix the lines above\n");
              return kFailure;
            }
            OfflineGateway gw(cfg.llm, copts, results.get());
            KF_TRY_OR_REPORT(OutputCounts outputs, drive(cfg, *db, args->tag, gw));
            // Of the answers for a ready request: those the checks took (the job moved on),
            // those the kernel-fact checks rejected and those that could not be read (their
            // requests are asked again, or the sample fails after too many).
            using store::OutputStatus;
            int checkpointed = outputs[OutputStatus::ok];
            int rejected = outputs[OutputStatus::rejected];
            int unusable = outputs[OutputStatus::parse_error] + outputs[OutputStatus::llm_error];
            // The other answers: imported before (the store holds them and their requests are
            // no longer waiting), or for no request of this run that is ready (unknown here).
            int imported_before = 0, not_ready = 0;
            for (const auto& id : results->answer_ids()) {
              if (gw.was_matched(id)) continue;
              KF_TRY_OR_REPORT(bool known, llm::has_good_answer(*db, id));
              ++(known ? imported_before : not_ready);
            }
            // Failed lines: for a ready request (its error recorded, the request queued), for
            // one answered before, or unknown.
            int failed_recorded = 0, failed_answered = 0, failed_unknown = 0;
            for (const auto& id : results->failure_ids()) {
              if (gw.failure_recorded(id)) {
                ++failed_recorded;
                continue;
              }
              KF_TRY_OR_REPORT(bool known, llm::has_good_answer(*db, id));
              ++(known ? failed_answered : failed_unknown);
            }
            int fresh = checkpointed + rejected + unusable;
            int already = imported_before + gw.replayed() + failed_answered;
            int unknown = not_ready + failed_unknown;
            int failed_lines = static_cast<int>(results->failures());
            if (args->json) {
              std::printf("%s\n", json{{"lines", results->answers() + results->failures()},
                                       {"answers", results->answers()},
                                       {"new", fresh},
                                       {"already_recorded", already},
                                       {"unknown", unknown},
                                       {"failed", failed_recorded},
                                       {"checkpointed", checkpointed},
                                       {"rejected", rejected},
                                       {"unusable", unusable},
                                       {"replayed", gw.replayed()},
                                       {"imported_before", imported_before},
                                       {"failed_lines", failed_lines},
                                       {"not_ready", not_ready}}
                                      .dump()
                                      .c_str());
            } else {
              std::printf(
                  "%zu lines in %s: %d new, %d already recorded, %d unknown (for no ready "
                  "request of run %s: another run or export), %d failed (their errors "
                  "recorded, their requests stay queued)\n",
                  results->answers() + results->failures(), args->file.c_str(), fresh, already,
                  unknown, args->tag.c_str(), failed_recorded);
              std::printf(
                  "  of the %zu answers: %d checkpointed, %d rejected by the checks and %d "
                  "unusable (their requests are asked again), %d imported before, %d not for a "
                  "ready request of run %s (from another run or export); %d failed lines\n",
                  results->answers(), checkpointed, rejected, unusable, imported_before, not_ready,
                  args->tag.c_str(), failed_lines);
              if (gw.replayed() > 0)
                std::printf("  %d of them were in the store already and were not recorded again\n",
                            gw.replayed());
            }
            return kOk;
          }};
}

}  // namespace kforge::cli
