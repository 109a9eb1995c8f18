#include "kforge/pipeline/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "kforge/llm/errors.hpp"
#include "kforge/llm/json.hpp"
#include "kforge/pipeline/facts.hpp"
#include "kforge/pipeline/repair.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/store/texts.hpp"
#include "scheduler_internal.hpp"

namespace kforge::pipeline {

using namespace scheduler_detail;

namespace {

// Adds the time from its construction to its destruction to a counter (the daemon's own work).
class Busy {
 public:
  Busy(std::uint64_t& acc, const Clock& clock)
      : acc_(acc), clock_(clock), start_(clock.steady_now()) {}
  ~Busy() {
    acc_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.steady_now() - start_).count());
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::uint64_t& acc_;
  const Clock& clock_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

Scheduler::Scheduler(JobStore& store, LlmGateway& llm, const PromptLibrary& prompts, Clock& clock,
                     PipelineConfig cfg)
    : store_(store),
      llm_(llm),
      prompts_(&prompts),
      clock_(clock),
      cfg_(std::move(cfg)),
      inbox_(std::make_shared<Inbox>()) {}

Scheduler::~Scheduler() = default;

void Scheduler::reconfigure(const PipelineConfig& cfg, const PromptLibrary* prompts) {
  cfg_ = cfg;
  if (prompts != nullptr) dictionary_pending_ = true;
  if (prompts != nullptr && in_flight_.empty()) {
    prompts_ = prompts;
    runs_.clear();
    refused_.clear();
  } else if (prompts != nullptr) {
    // Calls in flight point into the old library; the caller keeps it alive until they end.
    prompts_ = prompts;
    for (auto& [id, run] : runs_) run.spec = nullptr;
    refused_.clear();
  }
  next_runs_refresh_ms_ = 0;
}

bool Scheduler::wait(std::chrono::milliseconds max) {
  std::unique_lock lock(inbox_->mu);
  inbox_->cv.wait_for(lock, max, [&] { return !inbox_->queue.empty() || inbox_->woken; });
  inbox_->woken = false;
  return !inbox_->queue.empty();
}

void Scheduler::wake() {
  {
    std::lock_guard lock(inbox_->mu);
    inbox_->woken = true;
  }
  inbox_->cv.notify_one();
}

std::int64_t Scheduler::backoff_ms(int failures) const {
  std::int64_t b = cfg_.retry_backoff_ms;
  for (int i = 1; i < failures && b < cfg_.retry_backoff_max_ms; ++i) b *= 2;
  return std::min(b, cfg_.retry_backoff_max_ms);
}

Result<StepReport> Scheduler::step() {
  StepReport rep;
  std::deque<Completion> done;
  {
    std::lock_guard lock(inbox_->mu);
    done.swap(inbox_->queue);
  }
  Busy busy(stats_.busy_ns, clock_);
  if (dictionary_pending_) {
    // Requests are mostly template text: the store compresses them against the templates.
    auto st = store::use_dictionary(store_.db(), prompts_->dictionary(), clock_.wall_ms());
    if (st.ok())
      dictionary_pending_ = false;
    else
      spdlog::debug("text dictionary not registered yet: {}", st.error().message);
  }
  for (std::size_t i = 0; i < done.size(); ++i) {
    auto st = complete(done[i], rep);
    if (!st.ok()) {
      // Nothing of this completion was written: keep it and the rest for the next step.
      std::lock_guard lock(inbox_->mu);
      for (std::size_t k = done.size(); k-- > i;) inbox_->queue.push_front(std::move(done[k]));
      return std::move(st).error();
    }
  }

  std::int64_t now = clock_.wall_ms();
  if (!in_flight_.empty() && now >= next_renew_ms_) {
    KF_CHECK(store_.renew_leases(cfg_.lease_ms));
    next_renew_ms_ = now + cfg_.lease_ms / 3;
  }
  if (now >= next_expiry_check_ms_) {
    KF_TRY(int expired, store_.expire_leases());
    if (expired > 0) spdlog::warn("requeued {} jobs whose leases expired", expired);
    next_expiry_check_ms_ = now + std::min<std::int64_t>(cfg_.lease_ms / 4, 5'000);
  }
  if (now >= next_finish_check_ms_) {
    KF_TRY(int finished, store_.finish_runs());
    if (finished > 0) {
      spdlog::info("{} run(s) finished", finished);
      next_runs_refresh_ms_ = 0;
    }
    next_finish_check_ms_ = now + 1'000;
  }
  if (now >= next_wait_check_ms_) {
    KF_CHECK(note_provider_wait());
    next_wait_check_ms_ = now + 1'000;
  }
  if (!draining_) KF_CHECK(lease_and_submit(rep));
  next_due_ms_ = 0;
  for (const auto& [id, run] : runs_)
    if (run.row.state == store::RunState::active && run.retry_at_ms > now)
      next_due_ms_ = next_due_ms_ == 0 ? run.retry_at_ms : std::min(next_due_ms_, run.retry_at_ms);
  return rep;
}

void Scheduler::notice_change() {
  next_runs_refresh_ms_ = 0;
  next_finish_check_ms_ = 0;
  next_expiry_check_ms_ = 0;
  for (auto& [id, run] : runs_) run.idle_until_ms = 0;
}

// A long Retry-After pauses every request in the client: the active runs say so (status).
Status Scheduler::note_provider_wait() {
  llm::Stats st = llm_.stats();
  if (st.paused_until_wall_ms <= wait_noted_until_ms_) return {};
  wait_noted_until_ms_ = st.paused_until_wall_ms;
  std::string why = "provider asked to wait until " +
                    format_utc_ms(st.paused_until_wall_ms).substr(11, 8) + " UTC (HTTP " +
                    std::to_string(st.paused_status) + ")";
  spdlog::warn("{}", why);
  for (auto& [id, run] : runs_)
    if (run.row.state == store::RunState::active)
      KF_CHECK(store_.set_run_wait(id, st.paused_until_wall_ms, why));
  return {};
}

Status Scheduler::pause_run(ServedRun& run, const std::string& why) {
  if (run.row.state != store::RunState::active) return {};
  auto paused = store_.set_run_state(run.row.tag, store::RunState::paused);
  if (!paused.ok()) return {};  // cancelled or finished meanwhile
  run.row.state = store::RunState::paused;
  spdlog::error("run {} paused: {}", run.row.tag, why);
  return store_.add_event(Event{run.row.id, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                "error", std::string(store::to_string(store::RunState::paused)),
                                why});
}

Status Scheduler::refresh_runs() {
  std::int64_t now = clock_.wall_ms();
  if (now < next_runs_refresh_ms_) return {};
  next_runs_refresh_ms_ = now + cfg_.idle_poll_ms;
  KF_TRY(auto rows, store_.active_runs());
  std::set<std::int64_t> active;
  for (auto& row : rows) {
    if (!cfg_.only_run.empty() && row.tag != cfg_.only_run) continue;
    active.insert(row.id);
    auto& info = runs_[row.id];
    bool known = info.spec != nullptr || refused_.count(row.id) > 0;
    info.row = std::move(row);
    if (known) continue;
    auto spec = prompts_->pipeline(info.row.pipeline);
    std::string why = spec.ok() ? (*spec)->mismatch(info.row.prompts) : spec.error().message;
    if (why.empty()) {
      info.spec = *spec;
      continue;
    }
    why = "run '" + info.row.tag + "' refused: " + why +
          "; its outputs must not mix prompt texts: restore the templates it was created with, "
          "or create a new run (a new tag)";
    refused_[info.row.id] = why;
    spdlog::error("{}", why);
    Event e;
    e.run_id = info.row.id;
    e.kind = "prompt_changed";
    e.message = why;
    KF_CHECK(store_.add_event(e));
  }
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (active.count(it->first) == 0 && it->second.in_flight == 0)
      it = runs_.erase(it);
    else
      ++it;
  }
  return {};
}

Status Scheduler::lease_and_submit(StepReport& rep) {
  int free = cfg_.max_in_flight - in_flight();
  if (free <= 0) return {};
  int threshold = std::max(1, cfg_.max_in_flight / 8);
  if (free < threshold && in_flight() > 0) return {};
  // What the gateway takes now (kforge batch import: answers read from its file at a time).
  free = std::min(free, llm_.room());
  if (free <= 0) return {};
  KF_CHECK(refresh_runs());
  if (cfg_.verify_backlog > 0) {
    KF_TRY(std::int64_t backlog, store_.verify_backlog());
    if (backlog >= cfg_.verify_backlog) return {};
  }
  std::int64_t now = clock_.wall_ms();
  std::vector<ServedRun*> candidates;
  for (auto& [id, run] : runs_)
    if (run.spec != nullptr && refused_.count(id) == 0 &&
        run.row.state == store::RunState::active && run.idle_until_ms <= now)
      candidates.push_back(&run);
  if (candidates.empty()) return {};
  // Equal shares of the capacity; a share a run cannot use goes to the others.
  int total = in_flight() + free;
  int share =
      (total + static_cast<int>(candidates.size()) - 1) / static_cast<int>(candidates.size());
  auto lease_from = [&](ServedRun& run, int want) -> Status {
    if (want <= 0 || free <= 0) return {};
    want = std::min(want, free);
    KF_TRY(auto jobs, store_.lease(run.row.id, want, cfg_.lease_ms));
    if (static_cast<int>(jobs.size()) < want) {
      run.idle_until_ms = now + cfg_.idle_poll_ms;
      if (run.retry_at_ms > now)
        run.idle_until_ms = std::min(run.idle_until_ms, run.retry_at_ms);
      else
        run.retry_at_ms = 0;
    }
    rep.leased += static_cast<int>(jobs.size());
    stats_.leased += jobs.size();
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      --free;
      auto st = submit(run, jobs[k]);
      if (!st.ok()) {
        // Give back what was leased and not submitted, so no lease is renewed for nothing.
        for (std::size_t r = k; r < jobs.size(); ++r)
          if (in_flight_.count(jobs[r].id) == 0) (void)store_.release(jobs[r].id);
        return st;
      }
      ++rep.submitted;
    }
    return {};
  };
  for (ServedRun* run : candidates) KF_CHECK(lease_from(*run, share - run->in_flight));
  for (ServedRun* run : candidates)
    if (run->idle_until_ms <= now) KF_CHECK(lease_from(*run, free));
  return {};
}

Status Scheduler::fail_before_call(ServedRun& run, const LeasedJob& job, const Error& why) {
  NextState next;
  next.state = store::JobState::failed;
  next.stage = job.stage;
  next.attempts = job.attempts;
  next.error_kind = why.kind;
  next.error = why.message;
  Event e{run.row.id,
          job.id,
          job.sample_id,
          job.stage,
          job.attempts + 1,
          "error",
          std::string(store::to_string(store::JobState::failed)),
          "before any LLM call: " + why.message};
  KF_TRY(bool held, store_.checkpoint(job, std::nullopt, next, {e}));
  if (held) {
    ++stats_.jobs_failed;
    spdlog::warn("run {} job {}: failed before any LLM call: {}", run.row.tag, job.id, why.message);
  }
  return {};
}

// The values of a stage's prompt that come from earlier stages: the analysis stages' answers
// ({{analysis}}), and for a repair stage the previous round's code and verdict. An error to fail
// the job with before any call (a missing answer, code or verdict), or nullopt.
Result<std::optional<Error>> Scheduler::earlier_stage_values(
    const ServedRun& run, const LeasedJob& job, const Template& tmpl,
    std::map<std::string, std::string>& values) {
  if (std::find(tmpl.placeholders.begin(), tmpl.placeholders.end(), "analysis") !=
      tmpl.placeholders.end()) {
    // The answers of the analysis stages before this one; several: their fields in one object.
    auto stages = run.spec->before(job.stage, store::StageKind::analysis);
    nlohmann::json merged = nlohmann::json::object();
    std::string single;
    for (const Template* a : stages) {
      KF_TRY(auto analysis, store_.ok_output(job.id, a->name));
      if (!analysis)
        return std::optional<Error>(Error("state", "stage '" + job.stage +
                                                       "' needs the answer of '" + a->name +
                                                       "', and the job has none"));
      auto parsed = nlohmann::json::parse(*analysis, nullptr, false);
      single = parsed.is_discarded() ? *analysis : parsed.dump(2);
      if (parsed.is_object()) merged.update(parsed);
    }
    values["analysis"] = stages.size() == 1 ? single : merged.dump(2);
  }
  if (tmpl.kind == store::StageKind::repair) {
    // The previous round's wrapper and test, and what the verifier said about them.
    int prev = job.repair_round - 1;
    KF_TRY(auto code, store_.round_code(job.id, prev));
    KF_TRY(auto verdict, store_.round_verdict(job.id, prev));
    if (prev < 0 || !code || !verdict)
      return std::optional<Error>(
          Error("state", "repair round " + std::to_string(job.repair_round) +
                             " needs the code and the verdict of round " + std::to_string(prev) +
                             ", and the job has " + (code ? "no verdict" : "no code")));
    auto parsed = nlohmann::json::parse(*code, nullptr, false);
    for (const char* f : {"kernel_wrapper", "unitest_code"})
      values[f] = parsed.is_object() && parsed.contains(f) && parsed[f].is_string()
                      ? parsed[f].get<std::string>()
                      : std::string("(none)");
    auto evidence = render_evidence(run.spec->evidence, *verdict);
    if (!evidence.ok()) return std::optional<Error>(evidence.error());
    values["evidence"] = std::move(*evidence);
    values["round"] = std::to_string(job.repair_round);
    values["repair_rounds"] =
        std::to_string(std::max(run.row.params.repair_rounds, job.repair_round));
  }
  return std::optional<Error>();
}

Status Scheduler::submit(ServedRun& run, const LeasedJob& job) {
  const Template* tmpl = run.spec->stage(job.stage);
  if (tmpl == nullptr)
    return fail_before_call(
        run, job,
        Error("state", "pipeline " + run.spec->version + " has no stage '" + job.stage + "'"));
  KF_TRY(SampleInput in, store_.sample_input(job.sample_id));
  if (std::int64_t cap = llm_.max_prompt_tokens();
      cap > 0 && static_cast<std::int64_t>(in.code.size() / 4) > cap)
    return fail_before_call(
        run, job,
        Error("too_large", "the code alone is about " + std::to_string(in.code.size() / 4) +
                               " tokens (" + std::to_string(in.code.size()) +
                               " bytes), above llm.max_prompt_tokens (" + std::to_string(cap) +
                               "); not sent"));
  auto facts = extract_facts(in.code, FactsOptions{cfg_.jit_decorators});
  if (!facts.ok())
    return fail_before_call(
        run, job, Error("python_syntax", "the code cannot be read: " + facts.error().message));
  if (facts->kernels.empty())
    return fail_before_call(run, job,
                            Error("no_kernels", "the code defines no @triton.jit kernel"));
  std::map<std::string, std::string> values = {
      {"code", in.code},
      {"key", in.key},
      {"description_1", in.description_1.value_or("(none given)")},
      {"description_2", in.description_2.value_or("(none given)")},
      {"kernel_signatures", facts->signatures_text()},
  };
  KF_TRY(std::optional<Error> missing, earlier_stage_values(run, job, *tmpl, values));
  if (missing) return fail_before_call(run, job, *missing);
  auto text = render(tmpl->text, values, tmpl->path.string());
  if (!text.ok()) return fail_before_call(run, job, text.error());

  auto call = std::make_unique<Call>();
  KF_TRY(auto earlier, store_.attempts(job.id, job.stage, job.repair_round));
  const Attempt* last_content = nullptr;
  for (const auto& a : earlier) {
    if (content_failure(a.status, a.error_kind)) {
      ++call->content_failures;
      last_content = &a;
    } else if (a.status == store::OutputStatus::llm_error) {
      ++call->transient_failures;
    }
  }
  llm::ChatRequest req;
  req.messages.push_back({"user", std::move(*text)});
  if (last_content != nullptr) {
    // Ask again with the unusable answer and why it failed: a different request (the client
    // would replay the same one from its store) that gives the model what it needs to fix it.
    auto reason = render(run.spec->retry.text,
                         {{"reason", last_content->error.value_or("(no reason recorded)")}},
                         run.spec->retry.path.string());
    if (!reason.ok()) return fail_before_call(run, job, reason.error());
    // (An answer the client could not parse in structured-output mode is not known here.)
    if (last_content->response_raw)
      req.messages.push_back({"assistant", *last_content->response_raw});
    req.messages.push_back({"user", std::move(*reason)});
  }
  if (cfg_.structured_output) {
    // The provider is asked for JSON (llm.response_format); the client parses and validates.
    req.expect_json = true;
    req.response_schema = tmpl->schema;
    req.schema_name = "kforge_" + run.spec->version + "_" + job.stage;
  } else {
    req.expect_json = false;  // parsed and checked here: every answer is kept and replayable
  }
  req.label = "run=" + run.row.tag + " sample=" + in.key + " stage=" + job.stage +
              (job.repair_round > 0 ? " round=" + std::to_string(job.repair_round) : "") +
              " attempt=" + std::to_string(job.attempts + 1);
  req.run = run.row.tag;  // the call's run, stored with it: the run's cost
  // Every recorded answer (kept across kforge retry) moves the identity on: only a call whose
  // answer was never checkpointed (a crash) is asked with the same identity, and replayed.
  req.asker = "job=" + std::to_string(job.id) + " stage=" + job.stage +
              " attempt=" + std::to_string(earlier.size() + 1);
  // A round never shares an answer with another round, even if their prompts were equal.
  req.round = job.repair_round;

  call->job = job;
  call->generation = ++generation_;
  call->tag = run.row.tag;
  call->model = run.row.model;
  call->tmpl = tmpl;
  call->spec = run.spec;
  call->sample_key = in.key;
  hold_request(*call, run.row.model, req);
  // The body is in the store: in batch mode the client holds its id, not the body.
  req.stored_body = call->request_text;
  call->facts = facts->names_only();  // the prompt has its signatures; the checks read names

  std::int64_t job_id = job.id;
  std::uint64_t gen = call->generation;
  in_flight_[job_id] = std::move(call);
  ++run.in_flight;
  ++stats_.submitted;
  if (stats_.first_submit_ms < 0) stats_.first_submit_ms = clock_.wall_ms();
  std::weak_ptr<Inbox> inbox = inbox_;
  llm_.submit(run.row.model, std::move(req), [inbox, job_id, gen](Result<llm::ChatResponse> r) {
    auto box = inbox.lock();
    if (!box) return;
    {
      std::lock_guard lock(box->mu);
      box->queue.push_back(Completion{job_id, gen, std::move(r)});
    }
    box->cv.notify_one();
  });
  return {};
}

Result<int> Scheduler::release_all() {
  in_flight_.clear();
  for (auto& [id, run] : runs_) run.in_flight = 0;
  return store_.release_all();
}

}  // namespace kforge::pipeline
