#include <gtest/gtest.h>

#include "db_util.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::store {
namespace {

using test::TempDir;

std::unique_ptr<Db> open_ok(const std::string& path, bool migrate = true) {
  OpenOptions o;
  o.path = path;
  o.migrate = migrate;
  auto db = Db::open(o);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db.ok() ? std::move(db).value() : nullptr;
}

using test::db_scalar;
using test::db_text;

TEST(Migrations, FreshDatabaseGetsEveryMigration) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  ASSERT_TRUE(db);
  EXPECT_EQ(*db->schema_version(), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 1);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM kforge_schema"),
            static_cast<std::int64_t>(migrations().size()));
  for (const char* t : {"samples", "runs", "jobs", "stage_outputs", "verifications"}) {
    EXPECT_EQ(
        db_scalar(*db,
                  std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") +
                      t + "'"),
        1)
        << t;
  }
  EXPECT_EQ(db_text(*db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(db_scalar(*db, "PRAGMA foreign_keys"), 1);
}

TEST(Migrations, ReopeningAppliesNothingTwice) {
  TempDir dir;
  std::string path = (dir / "k.db").string();
  std::int64_t applied_ms;
  {
    auto db = open_ok(path);
    applied_ms = db_scalar(*db, "SELECT max(applied_ms) FROM kforge_schema");
    ASSERT_TRUE(
        db->exec("INSERT INTO samples(key, code_sha256, code, record_json, source, source_index, "
                 "created_ms, updated_ms) VALUES ('k', 'h', 'c', '{}', 's', 0, 1, 1)")
            .ok());
  }
  auto db = open_ok(path);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM kforge_schema"),
            static_cast<std::int64_t>(migrations().size()));
  EXPECT_EQ(db_scalar(*db, "SELECT max(applied_ms) FROM kforge_schema"), applied_ms);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM samples"), 1);
}

TEST(Migrations, NewerDatabaseIsRefusedWithAClearMessage) {
  TempDir dir;
  std::string path = (dir / "k.db").string();
  {
    auto db = open_ok(path);
    ASSERT_TRUE(db->exec("INSERT INTO kforge_schema(version, name, applied_ms) VALUES (9999, "
                         "'9999_future.sql', 1)")
                    .ok());
  }
  OpenOptions o;
  o.path = path;
  auto db = Db::open(o);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.error().kind, "schema");
  EXPECT_NE(db.error().message.find("schema version 9999"), std::string::npos)
      << db.error().message;
  EXPECT_NE(db.error().message.find("newer kforge"), std::string::npos);
  EXPECT_NE(db.error().message.find(path), std::string::npos);
}

TEST(Migrations, FailingMigrationRollsBackAndKeepsEarlierOnes) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string(), /*migrate=*/false);
  const EmbeddedFile good[] = {{"0001_a.sql", "CREATE TABLE a (x INTEGER);"}};
  ASSERT_TRUE(migrate(*db, good).ok());
  const EmbeddedFile more[] = {
      {"0001_a.sql", "CREATE TABLE a (x INTEGER);"},
      {"0002_b.sql", "CREATE TABLE b (y INTEGER); INSERT INTO nowhere VALUES (1);"}};
  auto r = migrate(*db, more);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("0002_b.sql"), std::string::npos) << r.error().message;
  EXPECT_EQ(*db->schema_version(), 1);
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM sqlite_master WHERE name='b'"), 0);
  // Fixed, it applies on the next start.
  const EmbeddedFile fixed[] = {{"0001_a.sql", "CREATE TABLE a (x INTEGER);"},
                                {"0002_b.sql", "CREATE TABLE b (y INTEGER);"}};
  ASSERT_TRUE(migrate(*db, fixed).ok());
  EXPECT_EQ(*db->schema_version(), 2);
}

TEST(Store, OneReadsARowOrNoneAndLeavesTheStatementReusable) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  ASSERT_TRUE(db->exec("CREATE TABLE t(k TEXT, v INTEGER); INSERT INTO t VALUES ('a', 7)").ok());
  auto s = db->cached("SELECT v FROM t WHERE k = ?1");
  ASSERT_TRUE(s.ok());
  auto v = [](Stmt& r) { return r.int64(0); };
  auto hit = (*s)->bind(1, "a").one(v);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(*hit, std::optional<std::int64_t>(7));
  auto miss = (*s)->bind(1, "b").one(v);
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());
  // Reset after each: the connection can change the table (no statement holds it open).
  ASSERT_TRUE(db->exec("DROP TABLE t").ok());
  auto gone = db->prepare("SELECT v FROM t");
  EXPECT_FALSE(gone.ok());
}

TEST(Store, EachWalksEveryRowStopsOnAFailedReadAndLeavesTheStatementReusable) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  ASSERT_TRUE(db->exec("CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (1), (2), (3), (4)").ok());
  auto s = db->cached("SELECT v FROM t WHERE v >= ?1 ORDER BY v");
  ASSERT_TRUE(s.ok());
  std::vector<std::int64_t> seen;
  ASSERT_TRUE((*s)->bind(1, 2).each([&](Stmt& r) { seen.push_back(r.int64(0)); }).ok());
  EXPECT_EQ(seen, (std::vector<std::int64_t>{2, 3, 4}));
  // A read that fails stops the walk and its error comes back; the statement is reset.
  seen.clear();
  auto stopped = (*s)->bind(1, 1).each([&](Stmt& r) -> Status {
    seen.push_back(r.int64(0));
    if (r.int64(0) == 2) return fail("bad_row", "row 2");
    return {};
  });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().kind, "bad_row");
  EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2}));
  // No rows: read is never called.
  int calls = 0;
  ASSERT_TRUE((*s)->bind(1, 9).each([&](Stmt&) { ++calls; }).ok());
  EXPECT_EQ(calls, 0);
  // A failing step (an error SQLite finds while stepping) is returned with the SQL named.
  auto bad = db->prepare("SELECT abs(-9223372036854775807 - 1)");
  ASSERT_TRUE(bad.ok());
  auto err = bad->each([](Stmt&) {});
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("abs("), std::string::npos) << err.error().message;
  // Reset after each: nothing holds the table open.
  ASSERT_TRUE(db->exec("DROP TABLE t").ok());
}

TEST(Store, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  {
    auto tx = Transaction::begin(*db);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(
        db->exec("INSERT INTO samples(key, code_sha256, code, record_json, source, source_index, "
                 "created_ms, updated_ms) VALUES ('k', 'h', 'c', '{}', 's', 0, 1, 1)")
            .ok());
  }
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM samples"), 0);
  {
    auto tx = Transaction::begin(*db);
    ASSERT_TRUE(
        db->exec("INSERT INTO samples(key, code_sha256, code, record_json, source, source_index, "
                 "created_ms, updated_ms) VALUES ('k', 'h', 'c', '{}', 's', 0, 1, 1)")
            .ok());
    ASSERT_TRUE(tx->commit().ok());
  }
  EXPECT_EQ(db_scalar(*db, "SELECT count(*) FROM samples"), 1);
}

TEST(Store, ForeignKeysAreEnforced) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  auto r = db->exec(
      "INSERT INTO jobs(run_id, sample_id, stage, created_ms, updated_ms) VALUES (42, 42, "
      "'analyze', 1, 1)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("FOREIGN KEY"), std::string::npos) << r.error().message;
}

TEST(Store, SqlErrorsNameTheDatabaseAndStatement) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  auto r = db->exec("SELECT * FROM no_such_table");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "sqlite");
  EXPECT_NE(r.error().message.find("no_such_table"), std::string::npos);
  EXPECT_NE(r.error().message.find("k.db"), std::string::npos);
}

TEST(Store, UnwritableLocationIsAClearError) {
  OpenOptions o;
  o.path = "/nonexistent-dir/k.db";
  auto db = Db::open(o);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("/nonexistent-dir/k.db"), std::string::npos);
}

TEST(QuerySet, ParsesNamedBlocks) {
  const EmbeddedFile files[] = {
      {"q.sql", "-- name: one\n-- a comment\nSELECT 1;\n\n-- name: two\nSELECT\n  2;\n"}};
  QuerySet q(files);
  EXPECT_EQ(q["one"], "SELECT 1;\n\n");
  EXPECT_EQ(q["two"], "SELECT\n  2;\n");
}

TEST(Samples, InsertFindUpdate) {
  TempDir dir;
  auto db = open_ok((dir / "k.db").string());
  Samples s(*db);
  SampleRow row{"k1",     "h1", "code", std::string("d1"), std::nullopt, "{\"code\":\"code\"}",
                "f.json", 3};
  ASSERT_TRUE(s.insert(row, 100).ok());
  auto found = s.find("k1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->code_sha256, "h1");
  row.code_sha256 = "h2";
  ASSERT_TRUE(s.update(row, 200).ok());
  EXPECT_EQ((*s.find("k1"))->code_sha256, "h2");
  EXPECT_FALSE(s.find("nope")->has_value());
  EXPECT_EQ(*s.count(), 1);
  EXPECT_FALSE(s.insert(row, 300).ok());  // the key is unique
}

}  // namespace
}  // namespace kforge::store
