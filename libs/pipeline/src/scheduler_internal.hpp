#pragma once
// Internal: what the scheduler's parts share. scheduler.cpp: leasing, rendering and submitting
// calls, leases and runs; scheduler_complete.cpp: checkpointing a call's outcome.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/llm/errors.hpp"
#include "kforge/pipeline/facts.hpp"
#include "kforge/pipeline/repair.hpp"
#include "kforge/pipeline/scheduler.hpp"

namespace kforge::pipeline {

struct Scheduler::Completion {
  std::int64_t job_id;
  std::uint64_t generation;
  Result<llm::ChatResponse> result;
};

struct Scheduler::Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Completion> queue;
  bool woken = false;
};

struct Scheduler::Call {
  LeasedJob job;
  std::uint64_t generation = 0;
  std::string tag;  // the run's
  std::string model;
  const Template* tmpl = nullptr;
  const PipelineSpec* spec = nullptr;
  std::string sample_key;
  // In batch mode the request is not held while the call waits (hours, for every request of a
  // stage): its JSON body is in the text store, read back when the outcome is checkpointed
  // (scheduler_request.cpp). request_json holds the body in interactive mode
  // (LlmGateway::stores_request_bodies), or when it could not be stored. The request's asker
  // (and the job's repair round) make its identity from the body for a failed call's output,
  // hashed only then: an answer brings its identity from the client.
  std::string asker;
  std::int64_t request_text = 0;
  std::string request_json;
  int content_failures = 0;    // earlier unusable answers at this stage
  int transient_failures = 0;  // earlier provider errors at this stage
  KernelFacts facts;           // names only (KernelFacts::names_only): what the answer checks read
};

// What a completed call's answer (or provider error) amounts to: the stage output to record and,
// if the answer cannot be used, why.
struct Scheduler::Outcome {
  StageOutput out;
  std::optional<Error> failure;        // what went wrong, if anything
  std::optional<RepairAnswer> repair;  // a repair stage's answer
  Transient transient = Transient::no;
  std::string event_kind;
};

// The job's next state after an outcome, the events that say why, and whether the outcome was
// a permanent provider error (a streak of them pauses the run).
struct Scheduler::NextStep {
  NextState next;
  std::vector<Event> events;
  bool permanent_provider_error = false;
};

namespace scheduler_detail {

// Answers that a new request may improve on: the reply did not parse, was rejected by the
// kernel facts, or was cut at max_tokens.
inline bool content_failure(store::OutputStatus status, const std::optional<std::string>& kind) {
  using store::OutputStatus;
  if (status == OutputStatus::parse_error || status == OutputStatus::rejected) return true;
  return status == OutputStatus::llm_error && kind && llm::kind_of(*kind) == llm::ErrorKind::parse;
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

inline std::string first_line(const std::string& s, std::size_t max = 300) {
  std::string out = s.substr(0, s.find('\n'));
  if (out.size() > max) out = out.substr(0, max) + "...";
  return out;
}

}  // namespace scheduler_detail
}  // namespace kforge::pipeline
