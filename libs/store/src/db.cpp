#include "kforge/store/db.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "kforge/core/clock.hpp"
#include "kforge/store/query_vocabulary.hpp"
#include "kforge/store/samples.hpp"
#include "kforge/store/search_match.hpp"
#include "kforge/store/texts.hpp"

namespace kforge::store {

namespace {
Error sqlite_error(sqlite3* db, std::string_view what) {
  int code = sqlite3_extended_errcode(db);
  bool busy = (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED;
  std::string msg = std::string(what) + ": " + sqlite3_errmsg(db);
  if (const char* f = sqlite3_db_filename(db, "main"); f != nullptr && *f != '\0')
    msg = std::string(f) + ": " + msg;
  return Error("sqlite", msg, busy ? Transient::yes : Transient::no);
}

std::string_view first_line(std::string_view sql) {
  while (!sql.empty() && (sql.front() == '\n' || sql.front() == ' ')) sql.remove_prefix(1);
  auto nl = sql.find('\n');
  return nl == std::string_view::npos ? sql : sql.substr(0, nl);
}
}  // namespace

// --- Stmt --------------------------------------------------------------------

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (owned_ && s_ != nullptr) sqlite3_finalize(s_);
    db_ = o.db_;
    s_ = o.s_;
    owned_ = o.owned_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_ != nullptr) sqlite3_finalize(s_);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}
Stmt& Stmt::bind_blob(int i, std::string_view bytes) {
  sqlite3_bind_blob64(s_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind(int i, std::nullptr_t) {
  sqlite3_bind_null(s_, i);
  return *this;
}
Stmt& Stmt::bind(int i, const std::optional<std::string>& v) {
  return v ? bind(i, std::string_view(*v)) : bind(i, nullptr);
}
Stmt& Stmt::bind(int i, const std::optional<std::int64_t>& v) {
  return v ? bind(i, *v) : bind(i, nullptr);
}

Result<bool> Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error e = sqlite_error(db_, first_line(sqlite3_sql(s_)));
  sqlite3_reset(s_);
  return e;
}

Status Stmt::run() {
  while (true) {
    KF_TRY(bool row, step());
    if (!row) break;
  }
  sqlite3_reset(s_);
  return {};
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

std::int64_t Stmt::int64(int col) const {
  return sqlite3_column_int64(s_, col);
}
double Stmt::real(int col) const {
  return sqlite3_column_double(s_, col);
}
std::string Stmt::text(int col) const {
  const auto* p = sqlite3_column_text(s_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(s_, col)));
}
std::optional<std::string> Stmt::opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return text(col);
}
std::optional<std::int64_t> Stmt::opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}
bool Stmt::is_null(int col) const {
  return sqlite3_column_type(s_, col) == SQLITE_NULL;
}

// --- Db ----------------------------------------------------------------------

Result<std::unique_ptr<Db>> Db::open(const OpenOptions& opts) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(opts.path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = opts.path + ": cannot open database: " +
                      (raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
    sqlite3_close(raw);
    return fail("sqlite", msg);
  }
  std::unique_ptr<Db> db(new Db(raw, opts.path));
  sqlite3_busy_timeout(raw, opts.busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  KF_CHECK(db->exec("PRAGMA journal_mode=WAL"));
  KF_CHECK(db->exec("PRAGMA synchronous=NORMAL"));
  KF_CHECK(db->exec("PRAGMA foreign_keys=ON"));
  KF_CHECK(register_text_functions(*db));  // kf_text(), kf_put(): migration 0015 uses them
  KF_CHECK(register_search_match(*db));    // kf_search_holds(): the viewer's search (0052)
  if (opts.migrate) KF_CHECK(migrate(*db, migrations()));
  return db;
}

Db::~Db() {
  cache_.clear();
  sqlite3_close_v2(db_);
}

Status Db::exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    Error e = sqlite_error(db_, first_line(sql));
    sqlite3_free(err);
    return e;
  }
  return {};
}

Result<Stmt> Db::prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK)
    return sqlite_error(db_, std::string("prepare ") + std::string(first_line(sql)));
  return Stmt(db_, s, true);
}

Result<Stmt*> Db::cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK)
      return sqlite_error(db_, std::string("prepare ") + std::string(first_line(sql)));
    it = cache_.emplace(std::string(sql), std::unique_ptr<Stmt>(new Stmt(db_, s, true))).first;
  }
  it->second->reset();
  return it->second.get();
}

std::int64_t Db::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}
int Db::changes() const {
  return sqlite3_changes(db_);
}

Result<int> Db::schema_version() {
  KF_TRY(Stmt s,
         prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='kforge_schema'"));
  KF_TRY(bool row, s.step());
  if (!row || s.int64(0) == 0) return 0;
  KF_TRY(Stmt v, prepare("SELECT coalesce(max(version), 0) FROM kforge_schema"));
  KF_TRY(bool row2, v.step());
  return row2 ? static_cast<int>(v.int64(0)) : 0;
}

Result<std::int64_t> Db::data_version() {
  KF_TRY(Stmt * s, cached(store_queries()["data_version"]));
  KF_TRY(auto v, s->one([](Stmt& r) { return r.int64(0); }));
  return v.value_or(0);
}

// --- Transaction -------------------------------------------------------------

Result<Transaction> Transaction::begin(Db& db, TxMode mode) {
  KF_CHECK(db.exec(mode == TxMode::immediate ? "BEGIN IMMEDIATE" : "BEGIN"));
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) {
    auto r = db_->exec("ROLLBACK");
    if (!r.ok()) spdlog::warn("rollback failed: {}", r.error().message);
  }
}

Status Transaction::commit() {
  Db* db = db_;
  db_ = nullptr;
  auto r = db->exec("COMMIT");
  if (!r.ok()) {
    (void)db->exec("ROLLBACK");
    return r;
  }
  return {};
}

// --- Migrations --------------------------------------------------------------

namespace {
int migration_number(std::string_view name) {
  int n = 0;
  std::size_t i = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) n = n * 10 + (name[i] - '0');
  return i == 0 ? -1 : n;
}
}  // namespace

int latest_schema_version() {
  int v = 0;
  for (const auto& f : migrations()) v = std::max(v, migration_number(f.name));
  return v;
}

Status migrate(Db& db, std::span<const EmbeddedFile> files) {
  KF_CHECK(db.exec(
      "CREATE TABLE IF NOT EXISTS kforge_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
      "applied_ms INTEGER NOT NULL)"));
  KF_TRY(int current, db.schema_version());
  int known = 0;
  for (const auto& f : files) known = std::max(known, migration_number(f.name));
  if (current > known) {
    return fail("schema", db.path() + ": database schema version " + std::to_string(current) +
                              " was written by a newer kforge; this build knows up to version " +
                              std::to_string(known) + ". Upgrade kforge to use this database.");
  }
  // A migration that rewrites tables in place leaves their pages sparse; one marked so is
  // followed by a VACUUM when it converted an existing database (not when creating one).
  constexpr std::string_view kVacuumMark = "\n-- kforge: vacuum after\n";
  bool vacuum = false;
  const int from = current;
  for (const auto& f : files) {
    int n = migration_number(f.name);
    if (n < 0) return fail("schema", "migration file without a number: " + std::string(f.name));
    if (n <= current) continue;
    if (from > 0 && f.data.find(kVacuumMark) != std::string_view::npos) vacuum = true;
    KF_TRY(Transaction tx, Transaction::begin(db));
    auto r = db.exec(f.data);
    if (!r.ok()) return std::move(r).error().context("migration " + std::string(f.name));
    KF_TRY(Stmt ins,
           db.prepare("INSERT INTO kforge_schema(version, name, applied_ms) VALUES (?, ?, ?)"));
    ins.bind(1, n).bind(2, f.name).bind(3, system_clock().wall_ms());
    KF_CHECK(ins.run());
    KF_CHECK(tx.commit());
    spdlog::debug("applied migration {}", f.name);
    if (from > 0) spdlog::info("{}: applied migration {}", db.path(), f.name);
  }
  if (vacuum) {
    // Best effort, after the migrations committed: a crash or a failure here (another
    // connection busy, no disk space for the copy) leaves the migrated database as it was.
    spdlog::info("{}: compacting the converted database (VACUUM)", db.path());
    if (auto r = db.exec("VACUUM"); !r.ok())
      spdlog::warn(
          "{}: VACUUM after migrating failed, the file keeps its size until one "
          "succeeds (sqlite3 DB VACUUM with the daemon stopped): {}",
          db.path(), r.error().message);
  }
  if (from > 0 && current < known) {
    // The migrations' transactions may have grown the write-ahead log far beyond its usual
    // size; give that space back.
    if (auto r = db.exec("PRAGMA wal_checkpoint(TRUNCATE)"); !r.ok())
      spdlog::warn("{}: checkpoint after migrating failed: {}", db.path(), r.error().message);
  }
  return {};
}

// --- QuerySet ----------------------------------------------------------------

QuerySet::QuerySet(std::span<const EmbeddedFile> files) {
  for (const auto& f : files) {
    std::string_view text = f.data;
    std::string name;
    std::string body;
    auto flush = [&] {
      if (name.empty()) {
        body.clear();
        return;
      }
      // The vocabularies' names, put in for their tokens (query_vocabulary.hpp): a token naming
      // no name is a programming error, caught by any test that uses the set.
      auto sql = vocabulary_sql(body);
      if (!sql.ok()) {
        spdlog::critical("SQL query '{}' ({}): {}", name, f.name, sql.error().message);
        std::abort();
      }
      if (!q_.emplace(name, std::move(*sql)).second) {
        // Two blocks of one name: one would silently replace the other.
        spdlog::critical("SQL query '{}' is named twice (again in {})", name, f.name);
        std::abort();
      }
      body.clear();
    };
    while (!text.empty()) {
      auto nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      constexpr std::string_view kTag = "-- name:";
      if (line.substr(0, kTag.size()) == kTag) {
        flush();
        std::string_view n = line.substr(kTag.size());
        while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
        while (!n.empty() && (n.back() == ' ' || n.back() == '\r')) n.remove_suffix(1);
        name = std::string(n);
        continue;
      }
      if (line.substr(0, 2) == "--" && body.empty()) continue;
      body.append(line);
      body.push_back('\n');
    }
    flush();
  }
}

std::string_view QuerySet::operator[](std::string_view name) const {
  auto it = q_.find(name);
  if (it == q_.end()) {
    spdlog::critical("unknown SQL query '{}'", name);
    std::abort();
  }
  return it->second;
}

}  // namespace kforge::store
