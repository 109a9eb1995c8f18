#pragma once
// Scored items as jobs: what kforged's scoring endpoint (libs/score, POST /v1/score) puts in the
// jobs table, so the verify backends verify them as they verify generated samples.
//
// A client's tag names a run of pipeline 'score' (model 'client', one stage 'score' of kind
// code, repair rounds 0, the request's checks as its parameters). Each distinct item is a sample
// (key "score/<content key>", its code the item's or the named sample's) and a job waiting in
// 'verify_queued' whose code, the item's kernel_wrapper and unitest_code, is the answer of stage
// 'score': the verify queue leases it like any other job, and export and debug read it as any
// run's. JobsVerifyQueue::set_score_share lets these jobs go ahead of a dataset run's.
//
// Threads: as the connection: one thread. Every function works in the caller's transaction.

#include <cstdint>
#include <optional>
#include <string>

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/run_params.hpp"

namespace kforge::pipeline {

// The run a tag names, created (state active) if it does not exist, opened again if finished.
// Errors: "conflict" when the tag names a dataset run, or a score run paused or cancelled, or
// one created with other checks (params); "usage" for an empty tag.
Result<std::int64_t> score_run(store::Db& db, const std::string& tag,
                               const store::RunParams& params, std::int64_t now);

// One item to verify.
struct ScoredItem {
  std::string content_key;  // the sample's key is "score/" + this
  std::string code;         // the kernel source (when empty, the named sample's)
  std::string named_key;    // an imported sample whose code and descriptions it takes ("": none)
  std::string kernel_wrapper;
  std::string unitest_code;
  std::string tag;      // recorded in the sample's record_json
  std::string item_id;  // the client's id, likewise
  // The chat messages that asked for this code (a JSON array of {role, content}), stored as the
  // stage's request so that export writes chat rows; empty: one user message with the code.
  std::string messages_json;
};

struct ScoreJob {
  std::int64_t job_id = 0;
  std::int64_t sample_id = 0;
  bool waiting = false;  // already in 'verify_queued' or 'verifying' (another request's)
};

// The sample id of an item's content if it exists.
Result<std::optional<std::int64_t>> score_sample(store::Db& db, const std::string& content_key);

// The item's job in the run: the one waiting or running if there is one, an ended one queued
// again, or a new one. Error "usage" when named_key names no sample (or code and named_key are
// both empty).
Result<ScoreJob> enqueue_scored(store::Db& db, std::int64_t run_id, const ScoredItem& item,
                                std::int64_t now);

// Ends a scored job that is waiting or running as cancelled, with `why`; a verdict arriving
// later is dropped. False when it had already ended.
Result<bool> cancel_scored(store::Db& db, std::int64_t job_id, const std::string& why,
                           std::int64_t now);

// Retention: deletes the scored jobs that ended before `before_ms`, with their outputs, verdicts
// and events, and the samples left without a job. Returns how many jobs.
Result<std::int64_t> forget_scored(store::Db& db, std::int64_t before_ms);

// The verify queue as the endpoint's GET /v1/queue shows it.
struct ScoreQueueDepth {
  std::int64_t score_waiting = 0, score_running = 0;
  std::int64_t runs_waiting = 0, runs_running = 0;   // dataset runs' jobs
  std::optional<std::int64_t> oldest_score_wait_ms;  // updated_ms of the oldest waiting one
};
Result<ScoreQueueDepth> score_queue_depth(store::Db& db);

}  // namespace kforge::pipeline
