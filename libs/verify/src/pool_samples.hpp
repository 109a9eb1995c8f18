#pragma once
// Internal: the pool's sample bookkeeping (part of Pool::Impl, pool_impl.hpp). The samples
// waiting for a slot: a sample run again (a lost worker) or a passing sample's mutant re-run
// goes next; of the new ones, verifier.order picks (take_next): cost, the one whose predicted
// seconds (verify/cost.hpp) plus the seconds it has waited are the most (the longest first,
// none left behind later ones for longer than the costliest prediction); input, the first
// submitted; early_long, the first long one (Pool::set_long_cost) while there is room for one,
// else the first other one. The ids the pool hands out (samples' and runs'). The finished samples'
// results, whose callbacks run at the end of a step (so a callback may submit()). Threads: as Pool,
// one thread.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/verify/config.hpp"
#include "kforge/verify/pool.hpp"

namespace kforge::verify {

using SteadyTime = std::chrono::steady_clock::time_point;

// A sample the pool was given (or its mutant re-run), waiting or running.
struct Sample {
  std::uint64_t id = 0;
  std::uint64_t origin = 0;  // the id submit() returned (a mutant re-run keeps its sample's)
  VerifyRequest request;
  Callback done;
  bool mutant = false;
  std::optional<VerifyResult> primary;  // for a mutant re-run: the passing result it checks
  int infra_attempts = 0;
  // For a mutant re-run: how the earlier attempts of the mutant runs' process ended when it wrote
  // no report of them (it is run once more in a process of its own; issue 52).
  std::vector<std::string> mutant_lost;
  SteadyTime submitted{};
  double cost_s = 0;     // the predicted seconds (verify/cost.hpp), for verifier.order: cost
  bool is_long = false;  // for verifier.order: early_long (Pool::set_long_cost)
  bool urgent = false;   // run again, or a mutant re-run: goes before the new samples
};

// early_long: the long samples running and how many may run at once; a long one starts at
// least `spacing` dispatches after the last.
struct LongRoom {
  int running = 0;
  int at_once = 1;
  int spacing = 1;
};

class SampleBook {
 public:
  std::uint64_t new_id() { return next_id_++; }

  bool empty() const { return queue_.empty(); }
  std::size_t size() const { return queue_.size(); }
  // A new sample: after those waiting.
  void push_back(Sample s) { queue_.push_back(std::move(s)); }
  // A sample run again or a mutant re-run: next.
  void push_front(Sample s) {
    s.urgent = true;
    queue_.push_front(std::move(s));
  }
  // The first waiting sample (there is one).
  Sample take() {
    Sample s = std::move(queue_.front());
    queue_.pop_front();
    return s;
  }
  // The sample a free slot takes (there is one): a sample run again or a mutant re-run first;
  // else, by `order`: cost, the new sample with the most predicted seconds plus seconds waited
  // (the earlier submitted on a tie); input, the first submitted; early_long, the first long
  // one while `room` has room for it, else the first other one, else the first.
  Sample take_next(VerifyOrder order, SteadyTime now, LongRoom room = {}) {
    ++dispatched_;
    if (queue_.front().urgent || order == VerifyOrder::input) return take();
    if (order == VerifyOrder::early_long) return take_early_long(room);
    auto best = queue_.begin();
    double best_score = -1;
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      double waited = std::chrono::duration<double>(now - it->submitted).count();
      double score = it->cost_s + std::max(0.0, waited);
      if (score > best_score) {
        best = it;
        best_score = score;
      }
    }
    Sample s = std::move(*best);
    queue_.erase(best);
    return s;
  }

  // early_long's pick (take_next).
  Sample take_early_long(const LongRoom& room) {
    bool room_for_long = room.running < room.at_once && dispatched_ - last_long_ >= room.spacing;
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [&](const Sample& s) { return s.is_long == room_for_long; });
    if (it == queue_.end()) it = queue_.begin();
    if (it->is_long) last_long_ = dispatched_;
    Sample s = std::move(*it);
    queue_.erase(it);
    return s;
  }

  // Takes the waiting sample (or mutant re-run) whose origin is `origin` out of the queue.
  std::optional<Sample> remove(std::uint64_t origin) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->origin != origin) continue;
      Sample s = std::move(*it);
      queue_.erase(it);
      return s;
    }
    return std::nullopt;
  }

  // A sample's result, handed over by run_callbacks().
  void deliver(Callback done, VerifyResult res) {
    results_.emplace_back(std::move(done), std::move(res));
  }
  bool has_results() const { return !results_.empty(); }
  // Runs the callbacks of the results delivered so far (one that submits adds to the queue).
  void run_callbacks() {
    auto done = std::move(results_);
    results_.clear();
    for (auto& [cb, res] : done)
      if (cb) cb(std::move(res));
  }

 private:
  std::deque<Sample> queue_;
  std::vector<std::pair<Callback, VerifyResult>> results_;
  std::uint64_t next_id_ = 1;
  std::int64_t dispatched_ = 0;  // take_next() calls, for early_long's spacing
  std::int64_t last_long_ = -1000000;
};

}  // namespace kforge::verify
