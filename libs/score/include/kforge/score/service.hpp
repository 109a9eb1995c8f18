#pragma once
// The scoring endpoint's work over the database (kforged's score_server.cpp serves it over
// HTTP): a request becomes a batch of items, each answered from the verdict cache at once or by
// a job the verify backend runs (pipeline/score_jobs.hpp); tick() settles items whose verdict
// arrived, ends those past their deadline with what is known (cancelling their jobs when no other
// batch waits on them), forgets old batches; results() reads a batch's answers in item order.
//
// Threads: any; calls are serialized on the service's one connection.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/score/config.hpp"
#include "kforge/score/request.hpp"
#include "kforge/store/db.hpp"

namespace kforge::score {

struct ServiceOptions {
  ScoreConfig config;
  Fingerprint fingerprint;
  // The repair prompts' evidence blocks (prompts/evidence.md) that `feedback` is rendered from;
  // nullopt: feedback is the verdict's one-line detail.
  std::optional<pipeline::EvidenceTemplate> evidence;
};

struct Submitted {
  std::int64_t batch = 0;  // 0 when refused as full
  bool full = false;
  int retry_after_s = 0;    // when full
  std::int64_t queued = 0;  // new jobs it added
  // How long submit() waited for the service's connection (behind the ticker, other requests),
  // and how long it then took to write (a busy database: another connection's write lock).
  std::int64_t waited_ms = 0, write_ms = 0;
};

class ScoreService {
 public:
  ScoreService(std::unique_ptr<store::Db> db, ServiceOptions options, Clock& clock);

  // Writes the batch (one transaction): cached items end at once; the others wait for a job.
  // Full: more new jobs than score.max_queue allows would wait; nothing is written. Errors:
  // "usage" / "conflict" naming the field (a key naming no sample, a tag of a dataset run);
  // "usage" when the request alone has more new items than score.max_queue (it never fits).
  Result<Submitted> submit(const Request& r);
  // {"batch", "done", "results": [...]} in item order; nullopt when there is no such batch.
  Result<std::optional<nlohmann::json>> results(std::int64_t batch);
  // Whether the batch has ended (every item has), without building its results; nullopt when
  // there is no such batch.
  Result<std::optional<bool>> ended(std::int64_t batch);
  // Ends the batch's open items as `cancelled` (the client went away).
  Status cancel(std::int64_t batch);
  // Settles, ends items past their deadline, forgets old batches. Returns whether any item
  // ended; and whether batches are still open (the caller's next tick can wait longer if not).
  struct Tick {
    bool changed = false;
    bool open = false;
  };
  Result<Tick> tick();
  // GET /v1/queue.
  Result<nlohmann::json> queue();
  const ScoreConfig& config() const { return opts_.config; }

 private:
  Result<Submitted> write_batch(const Request& r);  // submit()'s work, under mu_
  Status end_items(std::optional<std::int64_t> batch, std::int64_t now);
  Result<std::int64_t> settle(std::int64_t now);
  Status forget(std::int64_t now);  // retention

  std::mutex mu_;
  std::unique_ptr<store::Db> db_;
  ServiceOptions opts_;
  Clock& clock_;
  std::int64_t last_forget_ms_ = 0;
};

// One item's answer from its stored row (results.cpp).
struct ItemRow {
  std::int64_t idx = 0;
  std::string item_id;
  bool cached = false;
  std::optional<std::string> outcome, detail;
  std::int64_t created_ms = 0;
  std::optional<std::int64_t> ended_ms;
  std::optional<std::string> verdict, flags_json, vdetail, result_json, script, stderr_tail;
  std::int64_t duration_ms = 0, verified_ms = 0;
};
nlohmann::json item_result(const ItemRow& row, const std::string& preset,
                           const nlohmann::json& params,
                           const std::optional<pipeline::EvidenceTemplate>& evidence);

}  // namespace kforge::score
