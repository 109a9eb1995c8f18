#pragma once
// Internal: the audit store. Its own thread and SQLite connection: replay lookups for new
// requests (a good stored answer under the same identity answers the request; a request cut at
// max_tokens before starts at the next budget), then the llm_calls rows of finished calls, each
// batch in one transaction, then their callbacks. It keeps SQLite (a database locked by another
// writer) and slow callbacks off the network loop.
//
// Threads: look_up(), record(), finish() from any thread; the rest on the owner's thread.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"
#include "kforge/llm/config.hpp"
#include "kforge/store/db.hpp"

namespace kforge::llm {

struct Call;
class Meter;
class ApiAccess;

class AuditStore {
 public:
  // Lookups the store could not answer, handed back to the network loop: the calls and how
  // many were looked up.
  using GiveBack = std::function<void(std::vector<std::unique_ptr<Call>> misses, int looked_up)>;

  AuditStore(const LlmConfig& ep, const ApiAccess& access, Meter& meter, Clock* clock);
  AuditStore(const AuditStore&) = delete;
  AuditStore& operator=(const AuditStore&) = delete;

  // The database (the store's own connection). Without it nothing is recorded or replayed,
  // and the thread only runs the callbacks.
  Status open(const std::string& path, int busy_timeout_ms);
  bool recording() const { return db_ != nullptr; }
  // llm.truncated_max_tokens, for resuming a request that was cut before (0: never).
  void set_truncated_limit(int limit) { truncated_limit_ = limit; }

  void start(GiveBack give_back);
  // A new request that may be answered from the store.
  void look_up(std::unique_ptr<Call> c);
  // A finished call (its result set): its row is written, then its callbacks run. A call with
  // no callback is a row only.
  void record(std::unique_ptr<Call> c);
  // The same for each of calls, which is left empty.
  void record(std::vector<std::unique_ptr<Call>>& calls);
  // The thread ends once both queues are empty.
  void finish();
  void join();
  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  void run();
  bool try_replay(Call* c);
  void resume_cut(Call* c);
  Status write_rows(const std::vector<Call*>& calls);
  void deliver(std::vector<std::unique_ptr<Call>>& batch);

  const LlmConfig& ep_;
  const ApiAccess& access_;
  Meter& meter_;
  Clock* clock_;
  GiveBack give_back_;
  std::atomic<int> truncated_limit_{0};
  std::unique_ptr<store::Db> db_;  // its thread only, after start()
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Call>> lookups_;
  std::vector<std::unique_ptr<Call>> records_;
  bool stop_ = false;
};

}  // namespace kforge::llm
