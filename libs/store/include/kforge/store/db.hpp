#pragma once
// Db: one SQLite connection, opened with WAL, foreign keys and a busy timeout, and migrated.
//
// Threads: a Db is not thread-safe. REQUIRES: external synchronization, or one Db per thread
// (SQLite serialises writers across connections; the busy timeout makes them wait).
//
// SQL lives in .sql files: migrations in migrations/, statements as named blocks
// ("-- name: insert_sample") in each library's sql/ folder, compiled in with kforge_embed.

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kforge/core/embedded.hpp"
#include "kforge/core/result.hpp"

namespace kforge::store {

// A prepared statement. Bind indexes are 1-based; column indexes 0-based.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_), owned_(o.owned_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt();

  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, std::nullptr_t);
  // Binds bytes as a BLOB (text() reads it back).
  Stmt& bind_blob(int i, std::string_view bytes);
  Stmt& bind(int i, const std::optional<std::string>& v);
  Stmt& bind(int i, const std::optional<std::int64_t>& v);

  // Steps once: true when a row is available, false when done. Errors name the SQL.
  Result<bool> step();
  // Steps to completion (for statements that return no rows).
  Status run();
  // Steps once and, when a row comes, returns read(*this) for it; resets the statement either
  // way. For lookups that find one row or none.
  template <class F>
  Result<std::optional<std::invoke_result_t<F, Stmt&>>> one(F&& read) {
    std::optional<std::invoke_result_t<F, Stmt&>> out;
    KF_TRY(bool row, step());
    if (row) out = read(*this);
    reset();
    return out;
  }
  // Steps through every row, calling read(*this) for each, then resets the statement (and clears
  // its bindings) whether it ends, fails or read stops it. read returns void, or a Status: a
  // failed Status stops the walk and is returned. Errors of a step name the SQL.
  template <class F>
  Status each(F&& read) {
    while (true) {
      auto row = step();
      if (!row.ok()) {
        reset();
        return std::move(row).error();
      }
      if (!*row) break;
      if constexpr (std::is_void_v<std::invoke_result_t<F, Stmt&>>) {
        read(*this);
      } else {
        Status st = read(*this);
        if (!st.ok()) {
          reset();
          return st;
        }
      }
    }
    reset();
    return {};
  }
  void reset();

  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  std::optional<std::string> opt_text(int col) const;
  std::optional<std::int64_t> opt_int64(int col) const;
  bool is_null(int col) const;

 private:
  friend class Db;
  Stmt(sqlite3* db, sqlite3_stmt* s, bool owned) : db_(db), s_(s), owned_(owned) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
  bool owned_ = true;  // cached statements belong to the Db
};

struct OpenOptions {
  std::string path;
  int busy_timeout_ms = 10'000;
  bool migrate = true;  // apply pending migrations (refusing a newer schema either way)
};

class Db {
 public:
  // Opens (creating if needed), registers kf_text()/kf_put() (texts.hpp) and migrates. Errors:
  // "sqlite" (cannot open), "schema" (newer than this build, or a migration failed).
  static Result<std::unique_ptr<Db>> open(const OpenOptions& opts);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status exec(std::string_view sql);
  // A fresh statement owned by the caller.
  Result<Stmt> prepare(std::string_view sql);
  // A statement from the connection's cache, reset and with bindings cleared. The reference
  // stays valid until the Db is destroyed; do not keep two uses of the same SQL alive at once.
  Result<Stmt*> cached(std::string_view sql);

  std::int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* raw() { return db_; }
  const std::string& path() const { return path_; }

  // The schema version recorded in the database (0 for a new file).
  Result<int> schema_version();

  // SQLite's data_version: a number that changes when another connection, of this process or
  // another one, commits. Cheap (no page is read): an idle loop asks it before it looks for work.
  Result<std::int64_t> data_version();

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::map<std::string, std::unique_ptr<Stmt>, std::less<>> cache_;
};

enum class TxMode { deferred, immediate };

// RAII transaction: rolls back on destruction unless committed.
class Transaction {
 public:
  static Result<Transaction> begin(Db& db, TxMode mode = TxMode::immediate);
  Transaction(Transaction&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Status commit();

 private:
  explicit Transaction(Db* db) : db_(db) {}
  Db* db_;
};

// The migrations compiled into this build (migrations/NNNN_name.sql).
std::span<const EmbeddedFile> migrations();
// The highest migration number this build knows.
int latest_schema_version();
// Applies migrations newer than the database's version, each in its own transaction, recording
// each in kforge_schema. Refuses a database whose version is newer than `files` know.
Status migrate(Db& db, std::span<const EmbeddedFile> files);

// Named SQL blocks ("-- name: NAME" lines start each) from embedded .sql files. A name given
// twice aborts (a programming error, caught by any test that uses the set).
class QuerySet {
 public:
  explicit QuerySet(std::span<const EmbeddedFile> files);
  // The SQL for name; aborts on an unknown name (a programming error, caught by any test).
  std::string_view operator[](std::string_view name) const;

 private:
  std::map<std::string, std::string, std::less<>> q_;
};

}  // namespace kforge::store
