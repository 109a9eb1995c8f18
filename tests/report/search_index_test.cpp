// The viewer's search after migration 0051 (a sample's own texts enter the search index with its
// first job, not at import): the same workload of imports, runs, updates and late jobs on a
// database that stays at version 50 (every sample indexed at import, as before), one migrated
// from 50 to the latest in place, and one created at the latest gives the same answers to the
// same searches through the viewer's own path (report::view, /keys), and the same schema for the
// last two.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "db_util.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/search_index.hpp"
#include "kforge/report/viewer.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

constexpr int kSamples = 50;

std::unique_ptr<store::Db> open_db(const fs::path& path, bool migrate) {
  auto db = store::Db::open({.path = path.string(), .migrate = migrate});
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db.ok() ? std::move(db).value() : nullptr;
}

// A database at schema version `version` (migrations after it not applied).
std::unique_ptr<store::Db> open_at(const fs::path& path, int version) {
  auto db = open_db(path, /*migrate=*/false);
  std::vector<EmbeddedFile> upto;
  char next[16];
  std::snprintf(next, sizeof next, "%04d", version + 1);
  for (const auto& f : store::migrations())
    if (f.name < std::string_view(next)) upto.push_back(f);
  auto st = store::migrate(*db, upto);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  EXPECT_EQ(*db->schema_version(), version);
  return db;
}

// A database at schema version 50, the one before migration 0051.
std::unique_ptr<store::Db> open_at_50(const fs::path& path) {
  return open_at(path, 50);
}

store::SampleRow sample(int i, const std::string& extra = "") {
  store::SampleRow r;
  r.key = "s" + std::to_string(i) + ".py";
  r.code = "import triton\n@triton.jit\ndef kernel_" + std::to_string(i) +
           "(x_ptr):\n    x = tl.load(x_ptr+" + std::to_string(i % 7) + ")  # Größe \"q\"\n" +
           (i % 3 == 0 ? "    tl.atomic_add(x_ptr, x)\n" : "") + extra;
  r.code_sha256 = sha256_hex(r.code);
  r.description_1 = i % 2 == 0
                        ? std::optional<std::string>("Softmax over ÉCOLE rows " + std::to_string(i))
                        : std::nullopt;
  r.record_json = "{}";
  r.source = "corpus.jsonl";
  r.source_index = i;
  return r;
}

std::vector<std::int64_t> ids(store::Db& db, int from, int to) {
  std::vector<std::int64_t> out;
  for (int i = from; i < to; ++i)
    out.push_back(
        db_scalar(db, "SELECT id FROM samples WHERE key = 's" + std::to_string(i) + ".py'"));
  return out;
}

void create_run(store::Db& db, const std::string& tag, std::vector<std::int64_t> samples) {
  ManualClock clock;
  pipeline::JobStore jobs(db, clock, "test");
  pipeline::NewRun run;
  run.tag = tag;
  run.pipeline = "v2";
  run.model = "m";
  run.first_stage = "generate";
  run.sample_ids = std::move(samples);
  auto r = jobs.create_run(run);
  ASSERT_TRUE(r.ok()) << r.error().message;
}

void exec(store::Db& db, const std::string& sql) {
  auto st = db.exec(sql);
  ASSERT_TRUE(st.ok()) << sql << ": " << st.error().message;
}

// Imports, runs, an update of a sample in a run and of one in none, a sample imported after
// the runs that gets a job later (as a scoring item's), a verdict's detail, a deleted sample.
void workload(store::Db& db) {
  store::Samples samples(db);
  for (int i = 0; i < kSamples - 10; ++i) ASSERT_TRUE(samples.insert(sample(i), 1).ok());
  create_run(db, "a", ids(db, 0, 30));
  ASSERT_TRUE(samples.update(sample(5, "# zebra_update\n"), 2).ok());
  ASSERT_TRUE(samples.update(sample(35, "# yak_update\n"), 2).ok());
  for (int i = kSamples - 10; i < kSamples; ++i) ASSERT_TRUE(samples.insert(sample(i), 3).ok());
  create_run(db, "b", ids(db, 20, 40));
  exec(db,
       "INSERT INTO jobs (run_id, sample_id, state, stage, created_ms, updated_ms) "
       "SELECT r.id, s.id, 'verify_queued', 'verify', 4, 4 FROM runs r, samples s "
       "WHERE r.tag = 'b' AND s.key = 's41.py'");
  exec(db,
       "INSERT INTO verifications (job_id, run_id, sample_id, attempt, verdict, detail, "
       "created_ms) SELECT j.id, j.run_id, j.sample_id, 0, 'failed', 'AssertionError: "
       "wombat mismatch', 5 FROM jobs j JOIN runs r ON r.id = j.run_id "
       "JOIN samples s ON s.id = j.sample_id WHERE r.tag = 'a' AND s.key = 's7.py'");
  // The newest sample deleted: SQLite gives its id to the next one.
  exec(db, "DELETE FROM samples WHERE key = 's49.py'");
  ASSERT_TRUE(samples.insert(sample(49, "# reused_id\n"), 6).ok());
}

const std::vector<std::string> kWords = {
    "kernel_1",  "KERNEL_2",     "x_ptr+3)",   "atomic_add", "softmax", "école",    "größe",
    "\"q\"",     "zebra_update", "yak_update", "s4",         "wombat",  "mismatch", "reused_id",
    "kernel_48", "nothing_here", "tl",         "ROWS 2",     "x_ptr):", "kernel_41"};

// Every search's keys in runs a and b, one line each.
std::string answers(store::Db& db, const std::vector<std::string>& words = kWords) {
  std::string out;
  for (const char* tag : {"a", "b"}) {
    for (const auto& w : words) {
      report::ViewRequest req{"/keys", {{"tag", tag}, {"q", w}}};
      auto r = report::view(db, req, report::ViewOptions{});
      EXPECT_EQ(r.status, 200) << w << r.body;
      std::string keys = r.body;
      for (char& c : keys)
        if (c == '\n') c = ' ';
      out += std::string(tag) + " " + w + ": " + keys + "\n";
    }
  }
  return out;
}

// Every row of the search index: its id, text and run.
std::string index_rows(store::Db& db) {
  return db_text(db,
                 "SELECT group_concat(rowid || ':' || coalesce(run_id, '-') || ':' || body, "
                 "char(10)) FROM (SELECT rowid, run_id, body FROM search_text ORDER BY rowid)");
}

std::string schema(store::Db& db) {
  return db_text(db,
                 "SELECT group_concat(type || ' ' || name || ': ' || coalesce(sql, ''), char(10)) "
                 "FROM (SELECT * FROM sqlite_master ORDER BY type, name)");
}

TEST(SearchIndex, AnswersAreTheSameAsWhenEverySampleWasIndexedAtImport) {
  TempDir dir;
  auto before = open_at_50(dir / "before.db");
  ASSERT_TRUE(before);
  workload(*before);
  auto fresh = open_db(dir / "fresh.db", /*migrate=*/true);
  ASSERT_TRUE(fresh);
  workload(*fresh);
  // The viewer reads the newest schema only (since migration 0052 its search reads tables 50 has
  // not): the database kept at 50 is searched after its upgrade, which leaves the index as 50
  // made it (each row's id, text and run), so those are the answers of the index 50 built.
  const std::string index_at_50 = index_rows(*before);
  before.reset();
  auto upgraded = open_db(dir / "before.db", /*migrate=*/true);
  ASSERT_TRUE(upgraded);
  EXPECT_EQ(index_rows(*upgraded), index_at_50);
  const std::string expected = answers(*upgraded);
  EXPECT_EQ(answers(*fresh), expected);

  // Not vacuous: the updated texts, the late job's sample and the verdict are found where they
  // are, the old text of an updated sample is not, and a run's samples only.
  auto keys_in = [](store::Db& db, const char* tag, const char* q) {
    return report::view(db, report::ViewRequest{"/keys", {{"tag", tag}, {"q", q}}},
                        report::ViewOptions{})
        .body;
  };
  auto keys = [&](const char* tag, const char* q) { return keys_in(*fresh, tag, q); };
  EXPECT_EQ(keys("a", "zebra_update"), "s5.py\n");
  EXPECT_EQ(keys("b", "zebra_update"), "");
  EXPECT_EQ(keys("b", "yak_update"), "s35.py\n");
  EXPECT_EQ(keys("b", "kernel_41"), "s41.py\n");
  EXPECT_EQ(keys("a", "wombat"), "s7.py\n");
  EXPECT_EQ(keys("a", "größe").size(), 30 * std::string("s0.py\n").size() + 20);
  EXPECT_EQ(keys("b", "x_ptr+3)"), "s24.py\ns31.py\ns38.py\n");

  // The point: samples that no run holds are not in the index (s40..s49 but s41).
  const char* indexed = "SELECT count(*) FROM search_text WHERE rowid % 4 = 0";
  EXPECT_EQ(db_scalar(*upgraded, indexed), kSamples);
  EXPECT_EQ(db_scalar(*fresh, indexed), 41);

  // Migrated in place from 50: the schema of a database made fresh.
  EXPECT_EQ(*upgraded->schema_version(), store::latest_schema_version());
  EXPECT_EQ(schema(*upgraded), schema(*fresh));
  // After the upgrade a new run's samples enter the index with their jobs, as in a fresh one.
  EXPECT_EQ(db_scalar(*fresh, "SELECT id FROM samples WHERE key = 's49.py'"), kSamples);
  create_run(*upgraded, "c", ids(*upgraded, 45, 50));
  create_run(*fresh, "c", ids(*fresh, 45, 50));
  for (store::Db* db : {upgraded.get(), fresh.get()}) {
    EXPECT_EQ(keys_in(*db, "c", "kernel_4"), "s45.py\ns46.py\ns47.py\ns48.py\ns49.py\n");
    EXPECT_EQ(keys_in(*db, "c", "reused_id"), "s49.py\n");
  }
  EXPECT_EQ(answers(*upgraded), answers(*fresh));
}

// --- the answers' texts, indexed in batches after their checkpoints (migration 0052) ---

std::string sql_quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// An answer of run `tag`'s sample s<i>: its parsed JSON and status, as a checkpoint stores them
// (the columns of pipeline.sql's insert_stage_output that have no default).
void add_answer(store::Db& db, const std::string& tag, int i, const std::string& stage,
                const std::string& status, const std::string& parsed_json) {
  exec(db,
       "INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, "
       "prompt_version, prompt_sha256, request_sha256, request_text, parsed_text, created_ms) "
       "SELECT j.id, j.run_id, j.sample_id, " +
           sql_quoted(stage) + ", 1, " + sql_quoted(status) +
           ", 'v1', 'p', 'r', kf_put('{}'), kf_put(" + sql_quoted(parsed_json) +
           "), 7 FROM jobs j JOIN runs r ON r.id = j.run_id JOIN samples s ON s.id = j.sample_id "
           "WHERE r.tag = " +
           sql_quoted(tag) + " AND s.key = 's" + std::to_string(i) + ".py'");
}

std::string code_answer(int i, const std::string& extra = "") {
  return "{\"kernel_wrapper\": \"def wrap_" + std::to_string(i) +
         "(x):\\n    return Kernel_Ünïcode(x)  # " + extra +
         "\", \"unitest_code\": \"assert check_" + std::to_string(i) + "() == \\\"ÉCOLE\\\"\"}";
}

// Answers of runs a (s0..s9) and b (s20..s24): generate and repair answers holding code, and
// answers the index never holds (an analysis without code, a rejected one).
void answers_workload(store::Db& db) {
  for (int i = 0; i < 10; ++i) add_answer(db, "a", i, "generate", "ok", code_answer(i));
  add_answer(db, "a", 3, "repair", "ok", code_answer(3, "repaired_once"));
  add_answer(db, "a", 4, "analysis", "ok", "{\"analysis\": \"analysis_only\"}");
  add_answer(db, "a", 5, "generate", "rejected", code_answer(5, "rejected_answer"));
  for (int i = 20; i < 25; ++i) add_answer(db, "b", i, "generate", "ok", code_answer(i));
}

const std::vector<std::string> kAnswerWords = {
    "wrap_3",    "WRAP_2",    "wrap_2",        "kernel_ünïcode", "KERNEL_ÜNÏCODE",
    "check_7()", "\"école\"", "repaired_once", "analysis_only",  "rejected_answer",
    "wr",        "wrap_21",   "ap_2",          "nothing_there"};

// The keys of run `tag`'s samples one of whose answers the index finds `word` in (its quoted
// phrase), read from search_text alone.
std::string index_matches(store::Db& db, const std::string& tag, const std::string& word) {
  std::string phrase = "\"";
  for (char c : word) phrase += c == '"' ? std::string("\"\"") : std::string(1, c);
  phrase += "\"";
  return word + ": " +
         db_text(db,
                 "SELECT coalesce(group_concat(key, ' '), '') FROM (SELECT DISTINCT s.key FROM "
                 "search_text t JOIN stage_outputs o ON o.id = t.rowid / 4 JOIN runs r ON r.id "
                 "= o.run_id JOIN samples s ON s.id = o.sample_id WHERE search_text MATCH " +
                     sql_quoted(phrase) + " AND t.rowid % 4 = 1 AND r.tag = " + sql_quoted(tag) +
                     " ORDER BY s.key)") +
         "\n";
}

// The viewer's keys for `word` in run `tag`, as index_matches spells them.
std::string keys_of(store::Db& db, const std::string& tag, const std::string& word) {
  std::string keys =
      report::view(db, report::ViewRequest{"/keys", {{"tag", tag}, {"q", word}}}, {}).body;
  if (!keys.empty() && keys.back() == '\n') keys.pop_back();
  for (char& c : keys)
    if (c == '\n') c = ' ';
  return word + ": " + keys + "\n";
}

std::int64_t watermark(store::Db& db) {
  return db_scalar(db, "SELECT outputs_upto FROM search_indexed");
}
std::int64_t indexed_answers(store::Db& db) {
  return db_scalar(db, "SELECT count(*) FROM search_text WHERE rowid % 4 = 1");
}

TEST(SearchIndex, AnAnswerIsFoundAsSoonAsItIsStoredAndTheSameOnceIndexed) {
  TempDir dir;
  auto db = open_db(dir / "k.db", /*migrate=*/true);
  ASSERT_TRUE(db);
  workload(*db);
  answers_workload(*db);
  // Stored, none indexed: a checkpoint no longer writes the index.
  EXPECT_EQ(watermark(*db), 0);
  EXPECT_EQ(indexed_answers(*db), 0);
  auto keys = [&](const char* tag, const char* q) {
    return report::view(*db, report::ViewRequest{"/keys", {{"tag", tag}, {"q", q}}},
                        report::ViewOptions{})
        .body;
  };
  const std::string unindexed = answers(*db, kAnswerWords);
  EXPECT_EQ(keys("a", "wrap_3"), "s3.py\n");
  EXPECT_EQ(keys("a", "KERNEL_ÜNÏCODE").size(), 10 * std::string("s0.py\n").size());
  EXPECT_EQ(keys("b", "wrap_2"), "s20.py\ns21.py\ns22.py\ns23.py\ns24.py\n");
  EXPECT_EQ(keys("a", "repaired_once"), "s3.py\n");
  EXPECT_EQ(keys("a", "\"école\""), keys("a", "check_"));
  for (const char* none : {"analysis_only", "rejected_answer", "wr"})
    EXPECT_EQ(keys("a", none), "") << none;

  // Indexed in batches of 4 answer ids: the same answers, now from the index.
  ASSERT_TRUE(pipeline::index_all_answers(*db, 4).ok());
  const std::int64_t newest = db_scalar(*db, "SELECT max(id) FROM stage_outputs");
  EXPECT_EQ(watermark(*db), newest);
  EXPECT_EQ(indexed_answers(*db), 16);  // the 16 that hold code
  EXPECT_EQ(answers(*db, kAnswerWords), unindexed);
  auto again = pipeline::index_answers(*db, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->caught_up());
  EXPECT_EQ(indexed_answers(*db), 16);

  // The newest answers deleted: SQLite gives their ids to the next ones, which the watermark
  // must not cover before they are indexed.
  exec(*db, "DELETE FROM stage_outputs WHERE id > " + std::to_string(newest - 3));
  EXPECT_EQ(watermark(*db), newest - 3);
  EXPECT_EQ(keys("b", "wrap_24"), "");
  add_answer(*db, "b", 24, "repair", "ok", code_answer(24, "reborn_answer"));
  EXPECT_EQ(db_scalar(*db, "SELECT max(id) FROM stage_outputs"), newest - 2);
  EXPECT_EQ(keys("b", "reborn_answer"), "s24.py\n");
  ASSERT_TRUE(pipeline::index_all_answers(*db, 0).ok());
  EXPECT_EQ(watermark(*db), newest - 2);
  EXPECT_EQ(keys("b", "reborn_answer"), "s24.py\n");
  EXPECT_EQ(indexed_answers(*db), 14);
}

TEST(SearchIndex, ADatabaseKeptAt51GivesTheSameAnswersUpgradedAsAFreshOne) {
  TempDir dir;
  auto before = open_at(dir / "before.db", 51);  // each answer indexed by its trigger
  ASSERT_TRUE(before);
  workload(*before);
  answers_workload(*before);
  auto fresh = open_db(dir / "fresh.db", /*migrate=*/true);  // no answer indexed yet
  ASSERT_TRUE(fresh);
  workload(*fresh);
  answers_workload(*fresh);
  std::vector<std::string> words = kWords;
  words.insert(words.end(), kAnswerWords.begin(), kAnswerWords.end());
  EXPECT_EQ(indexed_answers(*before), 16);
  // What 51's index (its answers written by migration 0036's trigger) finds for the answers'
  // words, read from the index itself: those words are in no key or sample text.
  std::string at_51;
  for (const auto& w : kAnswerWords) at_51 += index_matches(*before, "a", w);
  const std::string index_at_51 = index_rows(*before);

  before.reset();
  auto upgraded = open_db(dir / "before.db", /*migrate=*/true);
  ASSERT_TRUE(upgraded);
  EXPECT_EQ(*upgraded->schema_version(), store::latest_schema_version());
  EXPECT_EQ(schema(*upgraded), schema(*fresh));
  EXPECT_EQ(index_rows(*upgraded), index_at_51);
  // Its answers were indexed by 0036's trigger: the watermark starts past them.
  EXPECT_EQ(watermark(*upgraded), db_scalar(*upgraded, "SELECT max(id) FROM stage_outputs"));
  const std::string expected = answers(*upgraded, words);
  EXPECT_EQ(answers(*fresh, words), expected);  // the fresh one's answers not indexed yet
  std::string upgraded_keys, fresh_keys;
  for (const auto& w : kAnswerWords) {
    upgraded_keys += keys_of(*upgraded, "a", w);
    fresh_keys += keys_of(*fresh, "a", w);
  }
  EXPECT_EQ(upgraded_keys, at_51);
  EXPECT_EQ(fresh_keys, at_51);
  EXPECT_NE(at_51.find("s3.py"), std::string::npos);
  // Answers stored after the upgrade are found before and after their batch, as in a fresh one.
  for (store::Db* db : {upgraded.get(), fresh.get()}) {
    add_answer(*db, "b", 22, "repair", "ok", code_answer(22, "after_upgrade"));
    EXPECT_EQ(answers(*db, {"after_upgrade"}), "a after_upgrade: \nb after_upgrade: s22.py \n");
    ASSERT_TRUE(pipeline::index_all_answers(*db, 0).ok());
    EXPECT_EQ(answers(*db, {"after_upgrade"}), "a after_upgrade: \nb after_upgrade: s22.py \n");
  }
  EXPECT_EQ(answers(*upgraded, words), answers(*fresh, words));
  EXPECT_EQ(indexed_answers(*upgraded), indexed_answers(*fresh));
}

}  // namespace
}  // namespace kforge::test
