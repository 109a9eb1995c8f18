// The audit store's thread: replay lookups for new requests (answered from a good stored
// response, or started at the next budget when an earlier process was cut at max_tokens), then
// the llm_calls rows of finished calls in one transaction per batch, committed before their
// callbacks run, so that a crash after a callback never pays for the same answer again.

#include "audit.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <span>

#include "call.hpp"
#include "completion.hpp"
#include "identity.hpp"
#include "queries.hpp"
#include "retry.hpp"
#include "usage.hpp"

namespace kforge::llm {

AuditStore::AuditStore(const LlmConfig& ep, const ApiAccess& access, Meter& meter, Clock* clock)
    : ep_(ep), access_(access), meter_(meter), clock_(clock) {}

Status AuditStore::open(const std::string& path, int busy_timeout_ms) {
  KF_TRY(db_, store::Db::open({.path = path, .busy_timeout_ms = busy_timeout_ms}));
  return {};
}

void AuditStore::start(GiveBack give_back) {
  give_back_ = std::move(give_back);
  thread_ = std::thread([this] { run(); });
}

void AuditStore::look_up(std::unique_ptr<Call> c) {
  {
    std::lock_guard lk(mu_);
    lookups_.push_back(std::move(c));
  }
  cv_.notify_one();
}

void AuditStore::record(std::unique_ptr<Call> c) {
  {
    std::lock_guard lk(mu_);
    records_.push_back(std::move(c));
  }
  cv_.notify_one();
}

void AuditStore::record(std::vector<std::unique_ptr<Call>>& calls) {
  {
    std::lock_guard lk(mu_);
    for (auto& c : calls) records_.push_back(std::move(c));
  }
  calls.clear();
  cv_.notify_one();
}

void AuditStore::finish() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
}

void AuditStore::join() {
  if (thread_.joinable()) thread_.join();
}

// Replay lookups for new requests, then audit rows and callbacks for finished ones.
void AuditStore::run() {
  pthread_setname_np(pthread_self(), "kforge-llm-db");
  while (true) {
    std::vector<std::unique_ptr<Call>> lookups;
    std::vector<std::unique_ptr<Call>> records;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return !lookups_.empty() || !records_.empty() || stop_; });
      if (stop_ && lookups_.empty() && records_.empty()) break;
      lookups.swap(lookups_);
      records.swap(records_);
    }
    if (!lookups.empty()) {
      std::vector<std::unique_ptr<Call>> misses;
      for (auto& c : lookups) {
        if (try_replay(c.get())) {
          records.push_back(std::move(c));
        } else {
          misses.push_back(std::move(c));
        }
      }
      give_back_(std::move(misses), static_cast<int>(lookups.size()));
    }
    deliver(records);
  }
}

// Answers c from a good stored response, if there is one.
bool AuditStore::try_replay(Call* c) {
  auto stmt = db_->cached(llm_queries()["good_response"]);
  if (!stmt.ok()) {
    spdlog::warn("llm: replay lookup failed: {}", stmt.error().message);
    return false;
  }
  store::Stmt& s = **stmt;
  s.bind(1, c->sha);
  auto row = s.step();
  if (!row.ok() || !*row) {
    s.reset();
    if (!row.ok()) spdlog::warn("llm: replay lookup failed: {}", row.error().message);
    resume_cut(c);
    return false;
  }
  std::int64_t id = s.int64(0);
  std::string raw = s.text(1);
  double cost = s.real(2);
  s.reset();
  ChatResponse r;
  if (auto err = read_completion(*c, raw, access_, ep_.max_tokens, r)) {
    // The stored answer no longer satisfies the request (e.g. the stage schema changed).
    spdlog::info("llm: stored response {} for {} not reusable ({}); asking the server", id,
                 c->sha.substr(0, 12), err->message);
    return false;
  }
  r.cost_usd = cost;
  r.from_store = true;
  r.attempts = 0;
  r.latency_ms = ms_between(c->submitted, clock_->steady_now());
  c->replay_of = id;
  c->resp_fields = r;
  c->result = std::move(r);
  spdlog::debug("llm: {} answered from the store (call {})", c->sha.substr(0, 12), id);
  return true;
}

// For a request with no good stored answer: when an earlier process was cut at max_tokens on
// it (and was stopped before it asked again with more), the cut answer is not paid for a second
// time: the request starts at the budget that would have come next.
void AuditStore::resume_cut(Call* c) {
  int limit = truncated_limit_;
  if (limit <= 0) return;
  auto stmt = db_->cached(llm_queries()["last_cut"]);
  if (!stmt.ok()) {
    spdlog::warn("llm: cut-answer lookup failed: {}", stmt.error().message);
    return;
  }
  store::Stmt& s = **stmt;
  s.bind(1, c->sha);
  auto row = s.step();
  std::int64_t cut = row.ok() && *row && !s.is_null(0) ? s.int64(0) : 0;
  s.reset();
  int now_max = c->req.max_tokens.value_or(ep_.max_tokens.value_or(0));
  if (cut <= 0 || cut < now_max) return;
  int next = next_budget(static_cast<int>(cut), limit);
  if (next <= cut) return;  // at the limit: asked as it is
  spdlog::info("llm: {} was cut at max_tokens {} before; asking with max_tokens {}",
               access_.where(*c), cut, next);
  set_budget(*c, next, ep_, meter_);
}

Status AuditStore::write_rows(const std::vector<Call*>& calls) {
  if (!db_) return {};
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  std::int64_t now_ms = clock_->wall_ms();
  for (Call* c : calls) {
    const auto& res = *c->result;
    if (!res.ok() && c->attempts == 0) continue;  // never sent, nothing to record
    if (c->once && !res.ok()) {
      KF_TRY(store::Stmt * same, db_->cached(llm_queries()["same_error"]));
      same->bind(1, c->sha).bind(2, res.error().message);
      KF_TRY(auto seen, same->one([](store::Stmt& r) { return r.int64(0); }));
      if (seen) continue;  // recorded by an earlier import of the same line
    }
    KF_TRY(store::Stmt * s, db_->cached(llm_queries()["insert_call"]));
    const ChatResponse& f = res.ok() ? res.value() : c->resp_fields;
    std::string status = c->replay_of ? "replayed" : (res.ok() ? "ok" : "error");
    s->bind(1, c->sha).bind(2, c->req.label).bind(3, access_.url()).bind(4, ep_.model);
    s->bind(5, status);
    if (res.ok()) {
      s->bind(6, nullptr).bind(7, nullptr);
    } else {
      s->bind(6, res.error().kind).bind(7, res.error().message);
    }
    if (c->replay_of || c->last_status == 0) {
      s->bind(8, nullptr);
    } else {
      s->bind(8, static_cast<std::int64_t>(c->last_status));
    }
    s->bind(9, c->attempts).bind(10, ms_between(c->submitted, clock_->steady_now()));
    // A replay costs nothing: the row it replays carries the price (a sum over the table is
    // what was paid).
    s->bind(11, f.prompt_tokens).bind(12, f.completion_tokens);
    s->bind(13, c->replay_of ? 0.0 : f.cost_usd);
    s->bind(14, f.finish_reason.empty() ? std::optional<std::string>()
                                        : std::optional<std::string>(f.finish_reason));
    if (c->replay_of) {
      s->bind(15, nullptr).bind(16, nullptr).bind(17, *c->replay_of);
    } else {
      // No body: a call cancelled while its batch line held the request (loop.cpp finish).
      if (c->body.empty()) {
        s->bind(15, nullptr);
      } else {
        s->bind(15, c->body);
      }
      s->bind(16, access_.redact(c->resp)).bind(17, nullptr);
    }
    s->bind(18, now_ms).bind(19, f.reasoning_tokens).bind(20, f.cached_prompt_tokens);
    s->bind(21, c->req.run);
    KF_CHECK(s->run());
    // Its batch lines are applied in this transaction, with the row that prices them.
    for (const auto& [batch, line] : c->batch_lines) {
      KF_TRY(store::Stmt * a, db_->cached(llm_queries()["batch_line_applied"]));
      a->bind(1, batch).bind(2, line);
      KF_CHECK(a->run());
    }
  }
  return tx.commit();
}

// Writes the audit rows of a batch, then runs its callbacks.
void AuditStore::deliver(std::vector<std::unique_ptr<Call>>& batch) {
  if (batch.empty()) return;
  std::vector<Call*> calls;
  for (auto& c : batch) calls.push_back(c.get());
  Status w = write_rows(calls);
  if (!w.ok()) spdlog::error("llm: cannot write the audit rows: {}", w.error().message);
  for (auto& owned : batch) {
    Call* c = owned.get();
    Result<ChatResponse> res = std::move(*c->result);
    if (!w.ok() && (res.ok() || c->attempts > 0)) {
      res = Error(w.error().kind,
                  access_.where(*c) + ": the response could not be recorded: " + w.error().message,
                  w.error().transient);
    }
    if (c->callbacks.empty()) continue;  // an audit row only (a cut attempt)
    meter_.delivered(*c, res, *clock_);
    for (std::size_t i = 0; i < c->callbacks.size(); ++i) {
      try {
        if (i + 1 == c->callbacks.size()) {
          c->callbacks[i](std::move(res));
        } else {
          c->callbacks[i](res);
        }
      } catch (const std::exception& e) {
        spdlog::error("llm: a completion callback threw: {}", e.what());
      }
    }
  }
}

Result<bool> has_good_answer(store::Db& db, const std::string& request_sha256) {
  KF_TRY(store::Stmt * s, db.cached(llm_queries()["has_good_response"]));
  s->bind(1, request_sha256);
  KF_TRY(bool row, s->step());
  s->reset();
  return row;
}

}  // namespace kforge::llm
