#pragma once
// Internal: usage and cost. A call's price from the price table, and Meter, the client's
// counters behind Client::stats() (Stats: counts, tokens, cost, the latency histogram, gauges).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/llm/client.hpp"
#include "kforge/llm/config.hpp"

namespace kforge::llm {

struct Call;

// How an answer came: a live call, or a line of a batch (billed at the batch multiplier, and
// no tokens to give back to the admission's bucket).
enum class Channel { live, batch };

// Sets r.cost_usd from the price of `model` (else of the model the server reported), times the
// batch multiplier for a batch answer; leaves it alone when neither has a price.
void price_call(ChatResponse& r, const std::map<std::string, Price>& prices,
                const std::string& model, Channel channel);

// The network loop's gauges, published once per turn of the loop.
struct Gauges {
  int in_flight = 0;
  int waiting = 0;
  int concurrency_limit = 0;
  std::int64_t next_wakeup_ms = -1;
  double pace_per_s = 0;
  std::uint64_t pace_cuts = 0;
  std::int64_t paused_until_wall_ms = 0;
  int paused_status = 0;
};

// Thread-safe: every method takes the one lock once.
class Meter {
 public:
  Meter();
  void submitted();
  // Failed at once, nothing sent: counted as submitted too when it was a new request
  // (too_large), not when it had been counted already (cancelled at shutdown).
  enum class Counted { already, now };
  void failed_at_once(const char* kind, Counted submitted);
  void coalesced();
  void attempt_started(bool retry);
  void response(int status);  // 0: no response
  void concurrency_cut();
  void enlarged();
  void halted();
  void usage(const ChatResponse& r);
  // A call's outcome delivered to its callbacks (the store thread); logs a failure.
  void delivered(const Call& c, const Result<ChatResponse>& res, const Clock& clock);
  void gauges(const Gauges& g);
  Stats snapshot() const;

 private:
  mutable std::mutex mu_;
  Stats stats_;
};

}  // namespace kforge::llm
