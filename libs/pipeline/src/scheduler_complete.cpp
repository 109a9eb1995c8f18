#include "scheduler_internal.hpp"

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

namespace kforge::pipeline {

using namespace scheduler_detail;
using store::JobState;
using store::OutputStatus;
using store::StageKind;

namespace {

// A code stage's answer: its wrapper and test, as strings. The schema asks for them; an answer
// without them (a schema that does not) is an error, never a crash.
Result<std::pair<std::string, std::string>> read_code_answer(const nlohmann::json& answer,
                                                             const std::string& stage) {
  auto field = [&](const char* f) -> const nlohmann::json* {
    return answer.is_object() && answer.contains(f) && answer[f].is_string() ? &answer[f] : nullptr;
  };
  const nlohmann::json* wrapper = field("kernel_wrapper");
  const nlohmann::json* test = field("unitest_code");
  if (wrapper == nullptr || test == nullptr)
    return fail("parse", "the answer of code stage '" + stage +
                             "' has no kernel_wrapper and unitest_code strings");
  return std::pair{wrapper->get<std::string>(), test->get<std::string>()};
}

}  // namespace

Status Scheduler::complete(Completion& c, StepReport& rep) {
  auto it = in_flight_.find(c.job_id);
  if (it == in_flight_.end() || it->second->generation != c.generation) return {};  // released
  // The call stays in flight until its outcome is written: an error leaves it for a later step.
  std::unique_ptr<Call> call = std::move(it->second);
  in_flight_.erase(it);
  bool written = false;
  struct Restore {
    Scheduler* s;
    std::unique_ptr<Call>& call;
    bool& written;
    ~Restore() {
      if (written) {
        auto r = s->runs_.find(call->job.run_id);
        if (r != s->runs_.end()) --r->second.in_flight;
      } else {
        std::int64_t id = call->job.id;
        s->in_flight_[id] = std::move(call);
      }
    }
  } restore{this, call, written};

  if (!c.result.ok()) {
    bool settled = false;  // the job released: nothing is left to write
    Status s = settle_run_level(c, *call, settled);
    written = settled;
    if (settled || !s.ok()) return s;
  }
  Outcome o = read_outcome(*call, c.result);
  KF_TRY(o.out.request_json, held_request_json(*call));
  if (!c.result.ok()) o.out.request_sha256 = failed_request_sha256(*call, o.out.request_json);
  NextStep n = next_step(*call, o);
  KF_TRY(bool held, store_.checkpoint(call->job, o.out, n.next, n.events));
  written = true;
  ++stats_.outputs[call->job.stage + ":" + std::string(store::to_string(o.out.status))];
  if (!held) {
    ++stats_.lost_leases;
    spdlog::warn(
        "run {} sample {}: the lease of job {} was lost (expired or cancelled); its {} "
        "answer is dropped",
        call->tag, call->sample_key, call->job.id, call->job.stage);
    return {};
  }
  return after_checkpoint(*call, o, n, c.result.ok(), rep);
}

// A call the client cancelled, or one that failed for the whole run (no job is at fault): the
// job goes back to the queue without an output (`released`), and a run-level error pauses the
// run. Any other outcome leaves `released` false and is checkpointed.
Status Scheduler::settle_run_level(const Completion& c, const Call& call, bool& released) {
  llm::ErrorKind error_kind = llm::kind_of(c.result.error());
  if (error_kind == llm::ErrorKind::cancelled) {
    KF_CHECK(store_.release(call.job.id));  // the client shut down: someone asks again later
    released = true;
    return {};
  }
  if (!llm::is_run_level(error_kind)) return {};
  // A run-level error: no job is at fault. This one goes back to the queue, the run pauses.
  const Error& e = c.result.error();
  KF_CHECK(store_.release(call.job.id));
  released = true;
  auto run_it = runs_.find(call.job.run_id);
  if (error_kind != llm::ErrorKind::halted && run_it != runs_.end()) {
    ServedRun& run = run_it->second;
    std::string fix = error_kind == llm::ErrorKind::auth
                          ? "check the key (the variable llm.api_key_env names) "
                            "and its rights"
                      : error_kind == llm::ErrorKind::config
                          ? "the setting the provider's message points at, e.g. "
                            "llm.batch.completion_window"
                          : "check llm.model (or the run's model) and llm.base_url";
    KF_CHECK(pause_run(run, "the provider refused the run: " + first_line(e.message, 2000) +
                                ". No job failed; they stay queued. Fix the cause (" + fix +
                                "), then: kforge run resume " + run.row.tag));
  }
  return {};
}

// The stage output of an answer, parsed and checked by the stage's kind, or of a provider error.
Scheduler::Outcome Scheduler::read_outcome(const Call& call,
                                           const Result<llm::ChatResponse>& result) const {
  const LeasedJob& job = call.job;
  Outcome o;
  StageOutput& out = o.out;
  out.stage = job.stage;
  out.attempt = job.attempts + 1;
  out.prompt_version = call.tmpl->version;
  out.prompt_sha256 = call.tmpl->sha256;
  out.repair_round = job.repair_round;
  if (!result.ok()) {
    const Error& e = result.error();
    out.status = OutputStatus::llm_error;
    out.error_kind = e.kind;
    out.error = e.message;
    o.event_kind = "llm:" + e.kind;
    o.failure = e;
    // The client could not record the call: nothing was delivered, asking again is right.
    o.transient = llm::kind_of(e) == llm::ErrorKind::sqlite ? Transient::yes : e.transient;
    return o;
  }
  const llm::ChatResponse& r = *result;
  out.request_sha256 = r.request_sha256;
  out.response_raw = r.content;
  out.prompt_tokens = r.prompt_tokens;
  out.completion_tokens = r.completion_tokens;
  out.cost_usd = r.cost_usd;
  out.latency_ms = r.latency_ms;
  out.reasoning_tokens = r.reasoning_tokens;
  out.cached_prompt_tokens = r.cached_prompt_tokens;
  if (!r.reasoning.empty()) out.reasoning = r.reasoning;
  auto extracted = llm::extract_answer(r.content, call.tmpl->schema);
  Result<nlohmann::json> parsed = extracted.ok() ? Result<nlohmann::json>(extracted->value)
                                                 : Result<nlohmann::json>(extracted.error());
  if (extracted.ok() && !extracted->mended.empty()) out.mended = joined(extracted->mended);
  if (!parsed.ok()) {
    out.status = OutputStatus::parse_error;
    out.error_kind = "parse";
    out.error = parsed.error().message;
    o.event_kind = "parse";
    o.failure = parsed.error();
    return o;
  }
  std::optional<Rejection> rejected;
  out.parsed_json = parsed->dump();
  switch (call.tmpl->kind) {
    case StageKind::analysis:
      rejected = check_analysis(call.facts, *parsed);
      break;
    case StageKind::repair:
      if (auto answer = read_repair_answer(*parsed); !answer.ok()) {
        o.failure = answer.error();
      } else {
        o.repair = std::move(*answer);
        if (!o.repair->unfixable)
          rejected = check_generation(call.facts, o.repair->kernel_wrapper, o.repair->unitest_code);
      }
      break;
    case StageKind::code:
      if (auto code = read_code_answer(*parsed, job.stage); !code.ok())
        o.failure = code.error();
      else
        rejected = check_generation(call.facts, code->first, code->second);
      break;
  }
  if (o.failure) {
    out.status = OutputStatus::parse_error;
    out.error_kind = "parse";
    out.error = o.failure->message;
    o.event_kind = "parse";
  } else if (rejected) {
    out.status = OutputStatus::rejected;
    out.error_kind = rejected->kind;
    out.error = rejected->message;
    o.event_kind = "rejected:" + rejected->kind;
    o.failure = Error(std::string(store::to_string(OutputStatus::rejected)), rejected->message);
  } else {
    out.status = OutputStatus::ok;
  }
  return o;
}

// The job's next state after an outcome (the table in scheduler.hpp's opening comment).
Scheduler::NextStep Scheduler::next_step(const Call& call, const Outcome& o) const {
  const LeasedJob& job = call.job;
  const StageOutput& out = o.out;
  NextStep n;
  NextState& next = n.next;
  std::vector<Event>& events = n.events;
  std::int64_t now = clock_.wall_ms();
  if (!o.failure && o.repair && o.repair->unfixable) {
    // The model says the code itself cannot work: the sample ends here, with its reason, and is
    // not asked again.
    next.state = JobState::done;
    next.stage = store::to_string(store::JobStep::none);
    next.attempts = 0;
    next.error_kind = store::to_string(store::JobErrorKind::unfixable);
    next.error = o.repair->reason;
    events.push_back(Event{job.run_id, job.id, job.sample_id, job.stage, out.attempt, "info",
                           std::string(store::to_string(store::JobErrorKind::unfixable)),
                           "repair round " + std::to_string(job.repair_round) +
                               ": the model answered that the code cannot work: " +
                               first_line(o.repair->reason, 2000)});
    return n;
  }
  if (!o.failure) {
    if (const Template* nt = call.spec->next(job.stage)) {
      next.state = JobState::queued;
      next.stage = nt->name;
    } else {
      next.state = JobState::verify_queued;
      next.stage = store::to_string(store::JobStep::verify);
    }
    next.attempts = 0;
    return n;
  }
  const Error& failure = *o.failure;
  Event e{job.run_id,  job.id, job.sample_id, job.stage,
          out.attempt, "warn", o.event_kind,  first_line(failure.message, 2000)};
  next.stage = job.stage;
  next.attempts = job.attempts + 1;
  next.error_kind = o.event_kind;
  next.error = failure.message;
  std::string reason;
  if (content_failure(out.status, out.error_kind)) {
    int k = call.content_failures + 1;
    if (k >= cfg_.max_attempts)
      reason = std::to_string(k) + " unusable answers at stage " + job.stage +
               "; the last: " + failure.message;
    next.state = JobState::queued;
  } else if (o.transient == Transient::yes) {
    int k = call.transient_failures + 1;
    if (k >= cfg_.max_transient_failures)
      reason = std::to_string(k) + " provider failures at stage " + job.stage +
               "; the last: " + failure.message;
    next.state = JobState::queued;
    next.not_before_ms = now + backoff_ms(k);
  } else if (llm::kind_of(failure) == llm::ErrorKind::too_large) {
    next.error_kind = llm::to_string(llm::ErrorKind::too_large);
    reason = *next.error_kind + ": " + failure.message;
  } else if (llm::kind_of(failure) == llm::ErrorKind::truncated) {
    // The sample's answer does not fit llm.truncated_max_tokens: the sample's, not the
    // provider's, and asking again would repeat the same request.
    next.error_kind = llm::to_string(llm::ErrorKind::truncated);
    reason = *next.error_kind + ": " + failure.message;
  } else {
    reason = "permanent provider error at stage " + job.stage + ": " + failure.message;
    n.permanent_provider_error = true;
  }
  if (!reason.empty()) {
    next.state = JobState::failed;
    next.not_before_ms = 0;
    e.level = "error";
    events.push_back(e);
    events.push_back(Event{job.run_id, job.id, job.sample_id, job.stage, out.attempt, "error",
                           std::string(store::to_string(JobState::failed)),
                           first_line(reason, 2000)});
  } else {
    events.push_back(e);
  }
  return n;
}

// After a checkpoint that held its lease: the step's and the scheduler's counts, and the run's
// timers and streak of permanent provider errors (which may pause it). `answered`: the provider
// answered (whether or not the answer was usable).
Status Scheduler::after_checkpoint(const Call& call, const Outcome& o, const NextStep& n,
                                   bool answered, StepReport& rep) {
  const LeasedJob& job = call.job;
  const NextState& next = n.next;
  ++rep.completed;
  ++stats_.checkpoints;
  if (next.state == JobState::failed) {
    ++rep.failed;
    ++stats_.jobs_failed;
    spdlog::warn("run {} sample {}: failed: {}", call.tag, call.sample_key,
                 first_line(*next.error));
  } else if (next.state == JobState::verify_queued) {
    ++stats_.jobs_to_verify;
  }
  if (o.failure && next.state != JobState::failed)
    spdlog::debug("run {} sample {} stage {}: {} (retrying)", call.tag, call.sample_key, job.stage,
                  first_line(o.failure->message));
  auto run_it = runs_.find(job.run_id);
  if (run_it == runs_.end()) return {};
  ServedRun& run = run_it->second;
  if (next.state == JobState::queued) {
    run.idle_until_ms = 0;
    if (next.not_before_ms > 0)
      run.retry_at_ms =
          run.retry_at_ms == 0 ? next.not_before_ms : std::min(run.retry_at_ms, next.not_before_ms);
  }
  if (n.permanent_provider_error) {
    ++run.permanent_streak;
    if (cfg_.failure_streak_pause > 0 && run.permanent_streak >= cfg_.failure_streak_pause &&
        run.row.state == store::RunState::active) {
      std::string why = std::to_string(run.permanent_streak) +
                        " permanent provider errors in a row; the last: " + o.failure->message +
                        ". Fix the cause, then: kforge run resume " + run.row.tag;
      KF_CHECK(pause_run(run, why));
    }
  } else if (answered) {
    run.permanent_streak = 0;
  }
  return {};
}

}  // namespace kforge::pipeline
