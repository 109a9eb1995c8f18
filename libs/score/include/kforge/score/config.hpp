#pragma once
// The `score:` section: kforged's scoring endpoint (POST /v1/score), its listener, its queue and
// its defaults. config/kforge.yaml documents every key; docs/OPERATIONS.md "Scoring for RL".

#include <cstdint>
#include <string>

#include "kforge/core/config.hpp"

namespace kforge::score {

struct ScoreConfig {
  // host:port of the endpoint's own listener. Empty: no endpoint. A loopback address
  // (127.0.0.0/8, ::1, localhost) answers loopback Host headers only; any other needs `token`.
  std::string listen;
  // Every request presents it (Authorization: Bearer TOKEN), compared in constant time and never
  // logged; at least 16 characters. Required on a non-loopback address.
  std::string token;
  // Items waiting or running at once (new work only: cached or already-queued items are free);
  // a request that would pass it is answered 429 with Retry-After.
  int max_queue = 4096;
  int max_items = 1024;  // items in one request
  // Requests waiting at once for their answer (POST with wait, GET /v1/score/{batch} with
  // wait_s > 0), each holding a listener thread; one more is answered 429 with Retry-After at
  // once. The listener has this many threads and 16 more for the rest.
  int max_requests = 256;
  // Of the verifier's leases while scored items and dataset runs' jobs both wait, the share
  // (0..1) that takes a scored item first.
  double share = 0.75;
  double default_deadline_s = 600;  // when a request names none
  double max_deadline_s = 3600;
  std::string default_tag = "score";  // the run a request without a tag adds to
  // Batches (and their items' answers) older than this are deleted; 0: kept. The samples, jobs
  // and verdicts stay, as the run's data (kforge run cancel / export decide about those).
  double keep_batches_h = 24;
  // Scored samples whose job ended longer ago than this many hours are deleted with their
  // verdicts (the cache forgets them, and batches as old go too); 0: kept (the run's data).
  double keep_rollouts_h = 0;
};

void read_config(ConfigNode n, ScoreConfig& out);

}  // namespace kforge::score
