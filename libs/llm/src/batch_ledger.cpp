// Batch mode's step recorder: the llm_batches / llm_batch_lines statements (sql/batch.sql) for
// each step of a batch (recorded, uploaded, created, polled, ended with each line's outcome,
// applied, pruned) and the reads a restarted runner resumes from (open batches, a request's
// latest line).

#include "batch_ledger.hpp"

#include <span>

#include "kforge/store/texts.hpp"
#include "queries.hpp"

namespace kforge::llm {

Status BatchLedger::open(const std::string& path, int busy_timeout_ms) {
  KF_TRY(db_, store::Db::open({.path = path, .busy_timeout_ms = busy_timeout_ms}));
  return {};
}

std::optional<BatchLedger::LatestLine> BatchLedger::latest_line(const std::string& sha,
                                                                const std::string& chat_url) {
  auto s = db_->cached(llm_queries()["batch_line_latest"]);
  if (!s.ok()) return std::nullopt;
  (*s)->bind(1, sha).bind(2, chat_url);
  auto row = (*s)->step();
  if (!row.ok() || !*row) {
    (*s)->reset();
    return std::nullopt;
  }
  LatestLine l;
  l.key = (*s)->text(1);
  l.batch_state = (*s)->text(2);
  l.line_state = (*s)->text(3);
  l.raw = (*s)->opt_text(5);
  l.batch = (*s)->int64(0);
  l.call = (*s)->opt_text(7).value_or(sha);
  (*s)->reset();
  return l;
}

Result<std::int64_t> BatchLedger::add_batch(const std::string& key, const std::string& chat_url,
                                            const std::string& model,
                                            std::span<const Pending> lines, std::size_t bytes,
                                            std::int64_t now) {
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_insert"]));
  s->bind(1, key).bind(2, chat_url).bind(3, model);
  s->bind(4, static_cast<std::int64_t>(lines.size())).bind(5, static_cast<std::int64_t>(bytes));
  s->bind(6, now);
  KF_CHECK(s->run());
  std::int64_t id = db_->last_insert_rowid();
  for (const Pending& p : lines) {
    std::int64_t text = p.text;
    if (text == 0) {
      KF_TRY(text, store::put_text(*db_, p.body));
    }
    KF_TRY(store::Stmt * l, db_->cached(llm_queries()["batch_line_insert"]));
    l->bind(1, id).bind(2, p.sha).bind(3, p.label);
    l->bind(4, text);
    l->bind(5, p.call.empty() || p.call == p.sha ? std::optional<std::string>() : p.call);
    KF_CHECK(l->run());
  }
  KF_CHECK(tx.commit());
  return id;
}

Status BatchLedger::stash(std::vector<Pending>& in) {
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  for (Pending& p : in) {
    if (p.text == 0 && p.body.empty()) continue;
    std::int64_t text = p.text;
    if (text == 0) {
      KF_TRY(text, store::put_text(*db_, p.body));
      p.bytes = p.body.size();
    }
    KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_line_keep_request"]));
    s->bind(1, p.sha).bind(2, text);
    KF_CHECK(s->run());
    p.text = text;
  }
  return tx.commit();
}

Result<std::string> BatchLedger::body(const Pending& p) {
  if (!p.body.empty() || p.text == 0) return p.body;
  return store::get_text(*db_, p.text);
}

Status BatchLedger::requests(std::int64_t batch, std::vector<LineOutcome>& outcomes) {
  for (LineOutcome& o : outcomes) {
    if (!o.request.empty()) continue;
    KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_line_request"]));
    s->bind(1, batch).bind(2, o.sha);
    KF_TRY(auto text, s->one([](store::Stmt& r) { return r.opt_text(0); }));
    if (text && *text) o.request = std::move(**text);
  }
  return {};
}

Result<std::vector<BatchLedger::StoredBatch>> BatchLedger::open_batches(const std::string& chat_url,
                                                                        const std::string& model) {
  KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_open"]));
  s->bind(1, chat_url).bind(2, model);
  std::vector<StoredBatch> found;
  KF_CHECK(s->each([&](store::Stmt& r) {
    StoredBatch b;
    b.id = r.int64(0);
    b.key = r.text(1);
    b.state = r.text(2);
    b.file_id = r.opt_text(3).value_or("");
    b.batch_id = r.opt_text(4).value_or("");
    b.created_ms = r.int64(5);
    b.submitted_ms = r.opt_int64(6).value_or(0);
    found.push_back(std::move(b));
  }));
  for (auto& b : found) {
    KF_TRY(store::Stmt * l, db_->cached(llm_queries()["batch_lines_of"]));
    l->bind(1, b.id);
    KF_CHECK(l->each([&](store::Stmt& r) {
      StoredLine line;
      line.sha = r.text(0);
      if (b.state == "uploading") line.body = r.opt_text(1);
      line.text = r.opt_int64(4).value_or(0);
      line.state = r.text(2);
      line.call = r.opt_text(3).value_or(line.sha);
      b.lines.push_back(std::move(line));
    }));
  }
  return found;
}

Status BatchLedger::uploaded(std::int64_t id, const std::string& file_id, std::int64_t now) {
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_uploaded"]));
  s->bind(1, id).bind(2, file_id).bind(3, now);
  KF_CHECK(s->run());
  KF_TRY(store::Stmt * l, db_->cached(llm_queries()["batch_lines_uploaded"]));
  l->bind(1, id);
  KF_CHECK(l->run());
  return tx.commit();
}

Status BatchLedger::submitted(std::int64_t id, const std::string& batch_id,
                              const std::string& status, std::int64_t now) {
  auto s = db_->cached(llm_queries()["batch_submitted"]);
  return s.ok() ? (*s)->bind(1, id).bind(2, batch_id).bind(3, status).bind(4, now).run()
                : Status(s.error());
}

void BatchLedger::poll_error(std::int64_t id, const std::string& why, std::int64_t now) {
  auto s = db_->cached(llm_queries()["batch_poll_error"]);
  if (s.ok()) (void)(*s)->bind(1, id).bind(2, why).bind(3, now).run();
}

void BatchLedger::polled(std::int64_t id, const std::string& status, std::int64_t completed,
                         std::int64_t failed, std::int64_t now) {
  auto s = db_->cached(llm_queries()["batch_polled"]);
  if (s.ok())
    (void)(*s)->bind(1, id).bind(2, status).bind(3, completed).bind(4, failed).bind(5, now).run();
}

void BatchLedger::note(std::int64_t id, const std::string& why, std::int64_t now) {
  auto s = db_->cached(llm_queries()["batch_note"]);
  if (s.ok()) (void)(*s)->bind(1, id).bind(2, why).bind(3, now).run();
}

Status BatchLedger::line_results(std::int64_t id, const std::vector<LineOutcome>& outcomes,
                                 const std::function<std::string(std::string)>& redact) {
  KF_TRY(store::Transaction tx, store::Transaction::begin(*db_));
  for (const auto& o : outcomes) {
    if (o.answered) {
      KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_line_answered"]));
      s->bind(1, id).bind(2, o.sha).bind(3, o.body);
      KF_CHECK(s->run());
    } else {
      KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_line_failed"]));
      s->bind(1, id).bind(2, o.sha);
      if (o.http_status > 0) {
        s->bind(3, static_cast<std::int64_t>(o.http_status));
      } else {
        s->bind(3, nullptr);
      }
      if (o.body.empty()) {
        s->bind(4, nullptr);
      } else {
        s->bind(4, redact(o.body));
      }
      s->bind(5, o.error);
      KF_CHECK(s->run());
    }
  }
  return tx.commit();
}

Status BatchLedger::done(std::int64_t id, const std::string& status, const std::string& out_id,
                         const std::string& err_id, const std::string& batch_error, int answered,
                         int failed, std::int64_t now,
                         const std::function<std::string(std::string)>& redact) {
  KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_done"]));
  s->bind(1, id).bind(2, status);
  s->bind(3, out_id.empty() ? std::optional<std::string>() : out_id);
  s->bind(4, err_id.empty() ? std::optional<std::string>() : err_id);
  s->bind(5, batch_error.empty() ? std::optional<std::string>() : redact(batch_error));
  s->bind(6, static_cast<std::int64_t>(answered)).bind(7, static_cast<std::int64_t>(failed));
  s->bind(8, now);
  return s->run();
}

Result<std::vector<BatchLedger::Undeleted>> BatchLedger::undeleted(const std::string& chat_url,
                                                                   const std::string& model) {
  KF_TRY(store::Stmt * s, db_->cached(llm_queries()["batch_undeleted"]));
  s->bind(1, chat_url).bind(2, model);
  std::vector<Undeleted> found;
  KF_CHECK(s->each([&](store::Stmt& r) {
    Undeleted u;
    u.id = r.int64(0);
    u.key = r.text(1);
    for (int c = 2; c <= 4; ++c)
      if (auto f = r.opt_text(c); f && !f->empty()) u.files.push_back(*f);
    found.push_back(std::move(u));
  }));
  return found;
}

void BatchLedger::files_deleted(std::int64_t id, std::int64_t now) {
  auto s = db_->cached(llm_queries()["batch_files_deleted"]);
  if (s.ok()) (void)(*s)->bind(1, id).bind(2, now).run();
}

void BatchLedger::prune() {
  auto p = db_->cached(llm_queries()["batch_prune"]);
  if (p.ok()) (void)(*p)->run();
}

}  // namespace kforge::llm
