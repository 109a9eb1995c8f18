#pragma once
// Internal: admission and pacing. Whether the request at the head of the queue may start now:
// the adaptive in-flight limit, the pacer, the requests- and tokens-per-minute buckets, and the
// holds the server asked for (x-ratelimit-* headers, a long Retry-After). The pieces themselves
// are in limits.hpp; this is how the client combines them and what it feeds them.
//
// Threads: the network loop only.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "kforge/llm/config.hpp"
#include "kforge/llm/limits.hpp"

namespace kforge::llm {

class Admission {
 public:
  // Applies the limits of cfg; the first call starts the in-flight limit in slow start.
  void configure(const LlmConfig& cfg, TimePoint now);

  // The in-flight limit.
  int limit() const { return adaptive_.limit(); }
  double baseline_ms() const { return adaptive_.baseline_ms(); }

  // The head of the queue, estimated at `tokens`, may start now: true, its share taken from
  // the buckets and the pacer. Else false, nothing taken, and *at says when it could.
  bool try_admit(double tokens, TimePoint now, TimePoint* at);
  // Each turn of the loop: the pacer grows after quiet periods.
  void tick(TimePoint now);

  // What a finished transfer says about the server: its x-ratelimit-* headers (next_tokens:
  // the estimate of the request that would go next), and when it was answered (`answered`:
  // no transport error) a 429 or a 503. Returns "429" or "503" when the in-flight limit was
  // cut, else nullptr.
  const char* on_transfer(const std::map<std::string, std::string>& headers, bool answered,
                          long status, TimePoint sent, TimePoint now, double next_tokens);
  // A usable answer and its latency: true when the latency cut the in-flight limit.
  bool on_success(Millis latency, TimePoint now);
  // Gives tokens back to the tokens-per-minute bucket (negative: takes more), e.g. an estimate
  // taken for an attempt that used nothing, or the estimate minus the reported usage.
  void refund(double tokens, TimePoint now);
  // A Retry-After beyond llm.retry_after_pause_ms: every request waits until now + wait
  // (reported in Stats as a pause asked for by `status`).
  void pause_all(TimePoint now, Millis wait, std::int64_t wall_ms, long status);
  // Nothing starts before t (a 429's Retry-After without the pacer).
  void hold_until(TimePoint t);
  // After a run-level error: back to slow start.
  void restart() { adaptive_.restart(); }

  // Gauges.
  std::optional<double> pace_rate() const;
  std::uint64_t pace_cuts() const { return pacer_.cuts(); }
  std::int64_t paused_until_wall_ms() const { return paused_until_wall_ms_; }
  int paused_status() const { return paused_status_; }

 private:
  void note_ratelimit_headers(const std::map<std::string, std::string>& headers, TimePoint now,
                              double next_tokens);

  bool pace_ = false;
  double tokens_per_minute_ = 0;
  TokenBucket rpm_;
  TokenBucket tpm_;
  AdaptiveConcurrency adaptive_;
  AdaptivePacer pacer_;
  bool adaptive_started_ = false;
  double server_tpm_ = 0;  // the token rate the headers imply (per minute); 0: none
  TimePoint blocked_until_{};
  std::int64_t paused_until_wall_ms_ = 0;
  int paused_status_ = 0;
};

}  // namespace kforge::llm
