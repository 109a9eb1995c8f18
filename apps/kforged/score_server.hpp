#pragma once
// kforged's scoring endpoint (issue: kforge as the reward for RL; docs/OPERATIONS.md "Scoring
// for RL"): its own HTTP listener, score.listen, serving
//   POST /v1/score          a batch of items -> their results in item order (libs/score)
//   GET  /v1/score/{batch}  the batch's results, waiting up to ?wait_s=N (default 30) for the end
//   GET  /v1/queue          depth, waits and workers
// On a loopback address it answers requests naming a loopback Host only; any other address
// needs score.token, presented by every request as Authorization: Bearer TOKEN (compared in
// constant time, never logged). A thread ticks the service (settles verdicts, ends items past
// their deadline) while batches are open. A waiting POST streams spaces before its JSON so that
// a client that went away is noticed: its batch's open items are cancelled. At most
// score.max_requests requests wait at once (the listener has that many threads and 16 more): one
// more is answered 429 with Retry-After at once, not left unread with no deadline running. Once
// the daemon stops, a new POST is answered 503 with Retry-After (refuse_new()), and at stop() the
// requests still waiting get what is known ("done": false); the client asks again after the
// restart (python/kforge_reward.py does, until the items' deadline).

#include <memory>

#include "kforge/app/config.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/result.hpp"

namespace kforge::daemon {

class ScoreServer {
 public:
  // Listens on cfg.score.listen (":0" for any free port) with its own database connection.
  static Result<std::unique_ptr<ScoreServer>> start(const app::Config& cfg, Env& env);
  ~ScoreServer();
  int port() const;
  // The daemon is stopping (its verifier drains): a new POST is answered 503 "kforged is
  // stopping" with Retry-After, nothing of it written; waiting requests go on until stop().
  void refuse_new();
  void stop();

  struct Impl;

 private:
  explicit ScoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::daemon
