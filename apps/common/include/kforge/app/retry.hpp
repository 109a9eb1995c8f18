#pragma once
// `kforge retry` put together: the report chooses which finished samples go back and where each
// starts again (report/retry.hpp, read-only), the pipeline re-queues them (pipeline/requeue.hpp),
// both in the pipeline's one IMMEDIATE transaction.

#include <cstdint>
#include <string>

#include "kforge/pipeline/requeue.hpp"
#include "kforge/report/retry.hpp"
#include "kforge/store/db.hpp"

namespace kforge::app {

struct Retried {
  report::RetrySelection selection;  // what was chosen (by key), by stage and by outcome
  pipeline::RequeueResult result;    // what was re-queued, and the run's state afterwards
};

// Commit::no: a dry run (counted, nothing changed). Errors: the selection's (report::select_retry)
// and the re-queueing's (pipeline::requeue).
Result<Retried> retry(store::Db& db, const std::string& tag, const report::RetryOptions& opts,
                      std::int64_t now_ms, pipeline::Commit commit);

}  // namespace kforge::app
