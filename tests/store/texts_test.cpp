// Texts stored once and compressed (store/texts.hpp, migrations/0015_texts.sql): the helper and
// its SQL functions on real SQLite files, and the migration of a database written before it,
// including kill -9 at points during the migration.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "db_util.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/texts.hpp"
#include "testutil.hpp"

namespace kforge::store {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using Rows = std::vector<std::vector<std::optional<std::string>>>;

std::unique_ptr<Db> open_db(const fs::path& path, bool migrate = true) {
  OpenOptions o;
  o.path = path.string();
  o.migrate = migrate;
  auto db = Db::open(o);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db.ok() ? std::move(db).value() : nullptr;
}

using test::db_scalar;

Rows rows(Db& db, std::string_view sql, int cols) {
  Rows out;
  auto s = db.prepare(sql);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  if (!s.ok()) return out;
  while (true) {
    auto row = s->step();
    EXPECT_TRUE(row.ok()) << (row.ok() ? "" : row.error().message);
    if (!row.ok() || !*row) break;
    auto& r = out.emplace_back();
    for (int c = 0; c < cols; ++c) r.push_back(s->opt_text(c));
  }
  return out;
}

const QuerySet& fixture() {
  static const std::string text = [] {
    auto t = read_file(test::source_dir() / "tests" / "store" / "fixtures" / "before_texts.sql");
    if (!t.ok()) throw std::runtime_error(t.error().message);
    return *t;
  }();
  static const EmbeddedFile file{"before_texts.sql", text};
  static const QuerySet q(std::span<const EmbeddedFile>(&file, 1));
  return q;
}

std::string big_text(int seed) {
  std::string s;
  for (int i = 0; s.size() < 4000; ++i)
    s += "    x_" + std::to_string(seed) + " = tl.load(ptr + " + std::to_string(i) + ")\n";
  return s;
}

TEST(Texts, EachTextIsStoredOnceSmallOnesPlainLargeOnesCompressed) {
  TempDir dir;
  auto db = open_db(dir / "k.db");
  ASSERT_TRUE(db);
  std::string big = big_text(1);
  auto a = put_text(*db, big);
  auto b = put_text(*db, big);
  auto small = put_text(*db, "{\"x\": 1}");
  auto empty = put_text(*db, "");
  ASSERT_TRUE(a.ok() && b.ok() && small.ok() && empty.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *small);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM texts"), 3);
  EXPECT_EQ(*get_text(*db, *a), big);
  EXPECT_EQ(*get_text(*db, *small), "{\"x\": 1}");
  EXPECT_EQ(*get_text(*db, *empty), "");
  // zstd from kCompressFrom bytes on, and it pays: Python-like code shrinks several times.
  auto codecs = rows(*db, "SELECT codec, size, length(body) FROM texts ORDER BY id", 3);
  ASSERT_EQ(codecs.size(), 3u);
  EXPECT_EQ(codecs[0][0], "zstd");
  EXPECT_EQ(std::stoll(*codecs[0][1]), static_cast<long long>(big.size()));
  EXPECT_LT(std::stoll(*codecs[0][2]) * 4, static_cast<long long>(big.size()));
  EXPECT_EQ(codecs[1][0], "plain");
  EXPECT_EQ(pack_text(std::string(kCompressFrom - 1, 'a')).codec, "plain");
  EXPECT_EQ(pack_text(std::string(kCompressFrom, 'a')).codec, "zstd");
  // The key is the SHA-256 of the text's bytes, whatever the codec: tools without kforge's
  // functions can find a text by its hash.
  EXPECT_EQ(
      rows(*db, "SELECT lower(hex(sha256)) FROM texts WHERE id = " + std::to_string(*a), 1)[0][0],
      sha256_hex(big));

  // The SQL functions: NULL stays NULL, kf_put of a stored text is its id, kf_text reads it.
  EXPECT_EQ(rows(*db,
                 "SELECT kf_text(NULL), kf_text(" + std::to_string(*a) + ") = kf_text(" +
                     std::to_string(*b) + ")",
                 2)[0],
            (std::vector<std::optional<std::string>>{std::nullopt, "1"}));
  auto put = db->prepare("SELECT kf_put(?1), kf_put(NULL)");
  ASSERT_TRUE(put.ok());
  put->bind(1, big);
  ASSERT_TRUE(*put->step());
  EXPECT_EQ(put->int64(0), *a);
  EXPECT_TRUE(put->is_null(1));
}

// 4 KB that compresses poorly on its own, like prose: pseudo-random words.
std::string varied_text(std::uint32_t seed) {
  std::string s;
  while (s.size() < 4000) {
    seed = seed * 1664525u + 1013904223u;
    s += "w" + std::to_string(seed % 100000) + ((seed >> 20) % 9 == 0 ? "\n" : " ");
  }
  return s;
}

// Texts that repeat a registered dictionary (the prompt templates) store little more than what
// differs; each keeps the dictionary it used.
TEST(Texts, ADictionaryShrinksTextsThatRepeatItAndEachKeepsItsOwn) {
  TempDir dir;
  auto db = open_db(dir / "k.db");
  ASSERT_TRUE(db);
  std::string templ = varied_text(3), other = varied_text(4);
  auto stored = [&](std::int64_t id) {
    return db_scalar(*db, "SELECT length(body) FROM texts WHERE id = " + std::to_string(id));
  };
  auto dict_of = [&](std::int64_t id) {
    return db_scalar(*db, "SELECT coalesce(dict, 0) FROM texts WHERE id = " + std::to_string(id));
  };
  std::string a = templ + "def kernel_a(x): return x\n";
  auto ia = put_text(*db, a);
  ASSERT_TRUE(use_dictionary(*db, templ, 1000).ok());
  std::string b = templ + "def kernel_b(x): return x\n";
  auto ib = put_text(*db, b);
  ASSERT_TRUE(ia.ok() && ib.ok());
  EXPECT_EQ(dict_of(*ia), 0);
  std::int64_t d1 = dict_of(*ib);
  EXPECT_NE(d1, 0);
  EXPECT_LT(stored(*ib) * 4, stored(*ia)) << stored(*ib) << " with, " << stored(*ia) << " without";
  // A new dictionary is used from then on; what was stored keeps its own.
  ASSERT_TRUE(use_dictionary(*db, other, 2000).ok());
  std::string c = other + "def kernel_c(x): return x\n";
  auto ic = put_text(*db, c);
  ASSERT_TRUE(ic.ok());
  EXPECT_NE(dict_of(*ic), d1);
  EXPECT_NE(dict_of(*ic), 0);
  // Registering the first again makes it the latest.
  ASSERT_TRUE(use_dictionary(*db, templ, 3000).ok());
  auto id = put_text(*db, templ + "def kernel_d(x): return x\n");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(dict_of(*id), d1);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM text_dictionaries"), 2);
  // Read back, here and by another thread with its own connection (no digested dictionary yet).
  EXPECT_EQ(*get_text(*db, *ia), a);
  EXPECT_EQ(*get_text(*db, *ib), b);
  EXPECT_EQ(*get_text(*db, *ic), c);
  std::string from_thread;
  std::thread([&] {
    auto other_db = open_db(dir / "k.db");
    if (other_db) from_thread = *get_text(*other_db, *ib);
  }).join();
  EXPECT_EQ(from_thread, b);
}

TEST(Texts, AMissingOrDamagedTextIsAnErrorNamingIt) {
  TempDir dir;
  auto db = open_db(dir / "k.db");
  ASSERT_TRUE(db);
  auto missing = get_text(*db, 99);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("text 99: missing"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("k.db"), std::string::npos) << missing.error().message;
  auto id = put_text(*db, big_text(2));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(
      db->exec("UPDATE texts SET body = x'28b52ffd0000' WHERE id = " + std::to_string(*id)).ok());
  auto bad = get_text(*db, *id);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("text " + std::to_string(*id) + ": zstd body"),
            std::string::npos)
      << bad.error().message;
  // Through SQL, the statement fails with the same words.
  auto s = db->prepare("SELECT kf_text(" + std::to_string(*id) + ")");
  ASSERT_TRUE(s.ok());
  auto row = s->step();
  ASSERT_FALSE(row.ok());
  EXPECT_NE(row.error().message.find("zstd body does not decode"), std::string::npos)
      << row.error().message;
}

// The schema version just before 0015 (batch mode's 0013 and cross-compilation's 0014 came first).
constexpr int kBefore = 14;

// A database at the schema before 0015 with `samples` samples' worth of rows.
void make_before(const fs::path& path, int samples) {
  auto db = open_db(path, /*migrate=*/false);
  ASSERT_TRUE(db);
  std::vector<EmbeddedFile> before;
  for (const auto& f : migrations())
    if (f.name < std::string_view("0015")) before.push_back(f);
  ASSERT_TRUE(migrate(*db, before).ok());
  ASSERT_EQ(*db->schema_version(), kBefore);
  ASSERT_TRUE(db->exec("CREATE TEMP TABLE fill_size(n INTEGER); INSERT INTO fill_size VALUES (" +
                       std::to_string(samples) + ")")
                  .ok());
  auto st = db->exec(fixture()["fill_before_texts"]);
  ASSERT_TRUE(st.ok()) << st.error().message;
}

// The database at `path` is either wholly before 0015 or wholly after it (later migrations may
// have run too), with every text of `expected` (texts_before of the original) and counts that
// match its rows.
void expect_old_or_new(const fs::path& path, const Rows& expected, int* old_seen) {
  auto db = open_db(path, /*migrate=*/false);
  ASSERT_TRUE(db);
  int version = *db->schema_version();
  // After 0015: 15, or a later migration's version when the kill came after 0015 committed.
  ASSERT_TRUE(version == kBefore || version >= 15) << version;
  EXPECT_EQ(rows(*db, "PRAGMA integrity_check", 1), (Rows{{"ok"}}));
  std::int64_t has_texts =
      db_scalar(*db, "SELECT count(*) FROM sqlite_master WHERE name = 'texts'");
  std::int64_t old_cols = db_scalar(
      *db, "SELECT count(*) FROM pragma_table_info('llm_calls') WHERE name = 'request_json'");
  if (version == kBefore) {
    ++*old_seen;
    EXPECT_EQ(has_texts, 0);
    EXPECT_EQ(old_cols, 1);
    EXPECT_TRUE(rows(*db, fixture()["texts_before"], 5) == expected);
  } else {
    EXPECT_EQ(has_texts, 1);
    EXPECT_EQ(old_cols, 0);
    EXPECT_TRUE(rows(*db, fixture()["texts_after"], 5) == expected);
  }
  EXPECT_EQ(db_scalar(*db, fixture()["counts_off"]), 0);
  EXPECT_EQ(db_scalar(*db, fixture()["count_triggers"]), 4);
}

TEST(TextsMigration, ConvertsADatabaseWrittenBeforeItAndKeepsEveryTextAndCount) {
  TempDir dir;
  make_before(dir / "k.db", 60);
  Rows expected;
  std::int64_t distinct = 0;
  {
    auto db = open_db(dir / "k.db", /*migrate=*/false);
    ASSERT_TRUE(db);
    expected = rows(*db, fixture()["texts_before"], 5);
    distinct = db_scalar(*db, fixture()["distinct_texts_before"]);
    ASSERT_EQ(expected.size(), 60u * 2 + 12 + 60 * 2 + 15);
  }
  auto size_before = fs::file_size(dir / "k.db");
  {
    auto db = open_db(dir / "k.db");  // migrates
    ASSERT_TRUE(db);
    EXPECT_EQ(*db->schema_version(), latest_schema_version());
    // Each distinct text once: a call's request and answer are its stage output's.
    EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM texts"), distinct);
    EXPECT_EQ(db_scalar(*db,
                        "SELECT count(*) FROM llm_calls c JOIN stage_outputs o ON "
                        "o.request_sha256 = c.request_sha256 AND o.attempt = 1 WHERE "
                        "c.request_text <> o.request_text"),
              0);
    EXPECT_EQ(db_scalar(*db,
                        "SELECT count(*) FROM llm_calls WHERE status = 'replayed' AND "
                        "(request_text IS NOT NULL OR response_text IS NOT NULL)"),
              0);
    EXPECT_GT(db_scalar(*db, "SELECT count(*) FROM texts WHERE codec = 'zstd'"), 0);
    EXPECT_GT(db_scalar(*db, "SELECT count(*) FROM texts WHERE codec = 'plain'"), 0);
    EXPECT_TRUE(rows(*db, "PRAGMA foreign_key_check", 1).empty());
    // Compacted after the conversion (the migration asks for a VACUUM), its log truncated: each
    // request once instead of twice, the rest compressed.
    EXPECT_EQ(fs::file_size(dir / "k.db-wal"), 0u);
    EXPECT_LT(fs::file_size(dir / "k.db") * 10, size_before * 7)
        << fs::file_size(dir / "k.db") << " bytes after, " << size_before << " before";
  }
  int old_seen = 0;
  expect_old_or_new(dir / "k.db", expected, &old_seen);
  // The triggers of 0012 go on counting what is written after it.
  auto db = open_db(dir / "k.db");
  ASSERT_TRUE(db);
  for (const char* q : {"insert_output_after", "insert_call_after"}) {
    auto s = db->prepare(fixture()[q]);
    ASSERT_TRUE(s.ok()) << s.error().message;
    s->bind(1, big_text(7)).bind(2, std::string("short answer"));
    ASSERT_TRUE(s->run().ok());
  }
  EXPECT_EQ(db_scalar(*db, fixture()["counts_off"]), 0);
  EXPECT_EQ(db_scalar(*db, "SELECT n FROM run_output_totals WHERE stage = 'repair'"), 1);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM texts"), distinct + 2);
}

// Migrates the database at `path` in a child process, which tells through `ready` when it is
// about to start. (The test has no other thread when it forks, so the child may allocate.)
pid_t migrate_in_child(const fs::path& path, int ready) {
  auto pid = default_env().fork_call([&]() -> int {
    OpenOptions o;
    o.path = path.string();
    o.migrate = false;
    auto db = Db::open(o);
    if (!db.ok()) return 2;
    char c = 'm';
    if (::write(ready, &c, 1) != 1) return 3;
    return migrate(**db, migrations()).ok() ? 0 : 1;
  });
  return pid.ok() ? *pid : -1;
}

// Reaps the child; its wait status.
int reap(pid_t pid) {
  auto end = default_env().wait(pid, WaitMode::block);
  return end ? end->status : -1;
}

// kill -9 while the migration runs leaves the old schema with every row or the new one with
// every text, never a mixture; the next start migrates it.
TEST(TextsMigration, KillNineAtAnyPointLeavesTheOldSchemaOrTheNew) {
  TempDir dir;
  make_before(dir / "before.db", 250);
  Rows expected;
  {
    auto db = open_db(dir / "before.db", /*migrate=*/false);
    ASSERT_TRUE(db);
    expected = rows(*db, fixture()["texts_before"], 5);
  }
  ASSERT_FALSE(fs::exists(dir / "before.db-wal"));  // checkpointed at close: one file to copy
  using Clock = std::chrono::steady_clock;
  auto copy = [&](const std::string& name) {
    fs::copy_file(dir / "before.db", dir / name);
    return dir / name;
  };
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto started = [&] {
    char c = 0;
    return ::read(fds[0], &c, 1) == 1;
  };

  // How long the whole migration takes here, undisturbed.
  fs::path whole = copy("whole.db");
  pid_t pid = migrate_in_child(whole, fds[1]);
  ASSERT_TRUE(started());
  ASSERT_GT(pid, 0);
  auto t0 = Clock::now();
  int st = reap(pid);
  ASSERT_NE(st, -1) << "reaped";
  auto took = Clock::now() - t0;
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  int old_seen = 0;
  expect_old_or_new(whole, expected, &old_seen);

  // Killed at sixths of that time.
  int killed = 0;
  for (int k = 0; k < 6; ++k) {
    fs::path p = copy("kill" + std::to_string(k) + ".db");
    pid = migrate_in_child(p, fds[1]);
    ASSERT_TRUE(started());
    std::this_thread::sleep_for(took * k / 6);
    ASSERT_TRUE(default_env().kill(pid, SIGKILL));
    st = reap(pid);
    ASSERT_NE(st, -1) << "reaped";
    if (WIFSIGNALED(st)) ++killed;
    SCOPED_TRACE("killed after " + std::to_string(k) + "/6 of the migration's time");
    expect_old_or_new(p, expected, &old_seen);
    // The next start finishes the job.
    { ASSERT_TRUE(open_db(p)); }
    expect_old_or_new(p, expected, &old_seen);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  // Timing on a loaded machine varies; most kills land before the commit (the VACUUM after it
  // takes part of the time too).
  EXPECT_GE(killed, 3);
  EXPECT_GE(old_seen, 2) << "the kills should have landed inside the migration";
  std::printf("%d of 6 killed, %d left the old schema\n", killed, old_seen);
}

}  // namespace
}  // namespace kforge::store
