// Verdicts and device states stored in a real SQLite file.

#include <gtest/gtest.h>

#include "kforge/core/fs.hpp"
#include "kforge/verify/store.hpp"
#include "testutil.hpp"
#include "verify_util.hpp"

namespace kforge::verify {
namespace {

const store::QuerySet& columns_sql() {
  static const std::string text = [] {
    auto t = read_file(test::source_dir() / "tests" / "verify" / "store_columns.sql");
    if (!t.ok()) throw std::runtime_error(t.error().message);
    return *t;
  }();
  static const EmbeddedFile file{"store_columns.sql", text};
  static const store::QuerySet q(std::span<const EmbeddedFile>(&file, 1));
  return q;
}

// The one text of a named query of store_columns.sql, with ?1 = id.
std::string text_of(store::Db& db, const std::string& name, std::int64_t id) {
  auto s = db.prepare(columns_sql()[name]);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  if (!s.ok()) return "";
  s->bind(1, id);
  auto row = s->step();
  EXPECT_TRUE(row.ok() && *row) << name;
  return row.ok() && *row ? s->text(0) : "";
}

// A database with the rows verifications refer to; `before`: at the schema before migration
// 0025 (what an older kforge made), else at this build's.
std::unique_ptr<store::Db> fixture_db(const std::filesystem::path& path, bool before = false) {
  store::OpenOptions o;
  o.path = path.string();
  o.migrate = !before;
  auto db = store::Db::open(o);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  if (!db.ok()) return nullptr;
  if (before) {
    std::vector<EmbeddedFile> older;
    for (const auto& f : store::migrations())
      if (f.name < std::string_view("0025")) older.push_back(f);
    EXPECT_TRUE(store::migrate(**db, older).ok());
  }
  auto fixtures = read_file(test::source_dir() / "tests" / "verify" / "fixtures.sql");
  EXPECT_TRUE(fixtures.ok());
  EXPECT_TRUE((*db)->exec(*fixtures).ok());
  return std::move(db).value();
}

// A report with every part readers read, as the harness and the pool write it (every field
// report_fields.txt requires): tests, launches, output mutants and the kernel battery, coverage, a
// speed account, a bounds finding.
nlohmann::json rich_report() {
  return test::harness_json(nlohmann::json::parse(R"json({
    "tests": [{"name": "test_add", "status": "passed"},
              {"name": "test_big", "status": "failed",
               "where": {"section": "unitest_code", "line": 7, "function": "test_big"}}],
    "triton": {"available": true, "version": "3.6.0", "kernels": ["add_kernel", "mul_kernel"],
               "launches": {"mul_kernel": 1, "add_kernel": 3}, "autotune": "off",
               "autotune_used": [], "mutant": false, "compile": {"count": 2, "ms": 40},
               "launcher": {"count": 1, "ms": 5}},
    "mutation": {"killed": 5, "applicable": 6, "survived": ["zero_tail"], "not_applicable": [],
                 "not_run": [],
                 "kernel": {"killed": 2, "applicable": 3, "equivalent": 1, "tried": 3,
                            "survived": [{"mutant": "k3", "op": "index_swap", "kernel": "add_kernel",
                                          "section": "code", "section_line": 9,
                                          "desc": "i and j swapped", "hint": "test a non-square"}]}},
    "coverage": {"launches": 4, "outputs": {"add_kernel": ["out"]}, "output_sizes": [1, 4096],
                 "output_shapes": null, "output_dtypes": [], "blocks": [], "tail_path": true,
                 "size_one": false, "empty": false, "probed_outputs": [],
                 "constant_outputs": false, "unwatched_launches": 0},
    "speed": {"timed": false, "reason": "GPU busy"},
    "bounds": {"out_of_bounds": true, "detail": "kernel add_kernel writes outside out (launch 0)"},
    "pool": {"queue_ms": 3, "cpu_ms": 120},
    "mutant": {"verdict": "failed", "detail": "1 test failed", "duration_ms": 80, "compiles": 0}
})json"));
}

TEST(VerifyStore, WhatReadersReadOfTheReportIsStoredInColumnsAndTables) {
  test::TempDir tmp;
  auto db = fixture_db(tmp.path() / "k.db");
  ASSERT_TRUE(db);
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.report = rich_report();
  auto id = store_verification(*db, {std::nullopt, 1, 1, 1}, r, 1);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(text_of(*db, "columns_of", *id),
            R"(5|6|2|3|1|'[{"desc":"i and j swapped","hint":"test a non-square",)"
            R"("kernel":"add_kernel","mutant":"k3","op":"index_swap","section":"code",)"
            R"("section_line":9}]'|)"
            R"('{"blocks":[],"constant_outputs":false,"empty":false,"launches":4,)"
            R"("output_dtypes":[],"output_shapes":null,"output_sizes":[1,4096],)"
            R"("outputs":{"add_kernel":["out"]},"probed_outputs":[],"size_one":false,)"
            R"("tail_path":true,"unwatched_launches":0}'|'{"reason":"GPU busy","timed":false}'|)"
            R"(1|'kernel add_kernel writes outside out (launch 0)'|'["zero_tail"]'|'[]')");
  EXPECT_EQ(text_of(*db, "tests_of", *id),
            "0:'test_add':'passed':NULL:NULL 1:'test_big':'failed':'unitest_code':7");
  EXPECT_EQ(text_of(*db, "launches_of", *id), "1:add_kernel=3 2:mul_kernel=1");
  // A report without those parts (a run that did not pass): NULL, no rows; a bounds check that
  // found nothing is 0, not NULL.
  r.verdict = Verdict::failed;
  r.report = test::harness_json(
      {{"tests", nlohmann::json::array()}, {"bounds", {{"out_of_bounds", false}}}});
  auto bare = store_verification(*db, {std::nullopt, 1, 1, 2}, r, 2);
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_EQ(text_of(*db, "columns_of", *bare),
            "NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|0|NULL|NULL|NULL");
  EXPECT_EQ(text_of(*db, "tests_of", *bare), "");
  EXPECT_EQ(text_of(*db, "launches_of", *bare), "");
}

// The columns are read through the report's declaration: a field renamed on the pool's side (or
// the harness's) is not a NULL column but an `error` of the verifier naming the field, with no
// columns, tests, launches, speed label or targets.
TEST(VerifyStore, AReportWithARenamedFieldIsStoredAsAnErrorNamingTheField) {
  test::TempDir tmp;
  auto db = fixture_db(tmp.path() / "k.db");
  ASSERT_TRUE(db);
  struct Case {
    const char* object;
    const char* from;
    const char* to;
    const char* named;
  };
  int attempt = 0;
  for (const Case& c :
       {Case{"mutation", "killed", "kills", "\"mutation.killed\" is missing"},
        Case{"pool", "queue_ms", "queued_ms", "\"pool.queued_ms\" is not a field of the report"},
        Case{"mutant", "duration_ms", "duration",
             "\"mutant.duration\" is not a field of the report"}}) {
    SCOPED_TRACE(c.named);
    VerifyResult r;
    r.verdict = Verdict::passed;
    r.detail = "2 tests passed";
    r.report = rich_report();
    auto& obj = r.report[c.object];
    obj[c.to] = obj[c.from];
    obj.erase(c.from);
    auto id = store_verification(*db, {std::nullopt, 1, 1, ++attempt}, r, 1);
    ASSERT_TRUE(id.ok()) << id.error().message;
    auto row = db->prepare("SELECT verdict, flags_json, detail FROM verifications WHERE id = ?1");
    ASSERT_TRUE(row.ok());
    row->bind(1, *id);
    ASSERT_TRUE(row->step().value_or(false));
    EXPECT_EQ(row->text(0), "error");
    EXPECT_EQ(row->text(1), R"(["infrastructure"])");
    EXPECT_NE(row->text(2).find("does not read as declared (report_fields.txt): harness report: "
                                "field " +
                                std::string(c.named)),
              std::string::npos)
        << row->text(2);
    EXPECT_NE(row->text(2).find("the verdict was: 2 tests passed"), std::string::npos);
    EXPECT_EQ(text_of(*db, "columns_of", *id),
              "NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL");
    EXPECT_EQ(text_of(*db, "tests_of", *id), "");
    EXPECT_EQ(text_of(*db, "launches_of", *id), "");
  }
}

// A database from before migration 0025 gets, for every stored report, the columns and rows
// verify's store writes for the same report today.
TEST(VerifyStore, TheMigrationFillsTheColumnsAsTheStoreWritesThem) {
  test::TempDir tmp;
  auto now = fixture_db(tmp.path() / "now.db");
  auto old = fixture_db(tmp.path() / "old.db", /*before=*/true);
  ASSERT_TRUE(now && old);
  std::vector<nlohmann::json> reports = {
      rich_report(), nlohmann::json::object(),
      test::harness_json({{"bounds", {{"out_of_bounds", false}}}})};
  std::vector<std::int64_t> stored, migrated;
  for (const auto& report : reports) {
    VerifyResult r;
    r.verdict = Verdict::passed;
    r.report = report;
    auto id = store_verification(*now, {std::nullopt, 1, 1, 1}, r, 1);
    ASSERT_TRUE(id.ok()) << id.error().message;
    stored.push_back(*id);
    auto ins = old->prepare(columns_sql()["insert_before_columns"]);
    ASSERT_TRUE(ins.ok()) << ins.error().message;
    ins->bind(1, text_of(*now, "report_of", *id));
    if (report.contains("mutation")) {
      ins->bind(2, std::int64_t{5}).bind(3, std::int64_t{6});
    } else {
      ins->bind(2, nullptr).bind(3, nullptr);
    }
    ASSERT_TRUE(ins->run().ok());
    migrated.push_back(old->last_insert_rowid());
  }
  // A report that is not JSON (kforge never wrote one) does not stop the migration.
  auto bad = old->prepare(columns_sql()["insert_before_columns"]);
  ASSERT_TRUE(bad.ok());
  bad->bind(1, "{not json").bind(2, nullptr).bind(3, nullptr);
  ASSERT_TRUE(bad->run().ok());
  std::int64_t bad_id = old->last_insert_rowid();
  auto st = store::migrate(*old, store::migrations());
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const char* q : {"columns_of", "tests_of", "launches_of"})
      EXPECT_EQ(text_of(*old, q, migrated[i]), text_of(*now, q, stored[i])) << q << " " << i;
  EXPECT_EQ(text_of(*old, "launches_of", migrated[0]), "1:add_kernel=3 2:mul_kernel=1");
  EXPECT_EQ(text_of(*old, "columns_of", bad_id),
            "NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL");
}

// latest_verification: a sample's newest verification (not its highest attempt);
// latest_round_verification: the newest of each repair round's.
TEST(VerifyStore, TheViewsSayWhichVerificationCounts) {
  test::TempDir tmp;
  auto db = fixture_db(tmp.path() / "k.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec(columns_sql()["second_sample"]).ok());
  VerifyResult r;
  r.verdict = Verdict::failed;
  auto put = [&](std::int64_t sample, int attempt, int round) {
    VerificationKey key{std::nullopt, 1, sample, attempt};
    key.repair_round = round;
    auto id = store_verification(*db, key, r, 1);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : -1;
  };
  std::int64_t a = put(1, 3, 0);
  std::int64_t b = put(1, 1, 1);
  std::int64_t c = put(2, 1, 0);
  std::int64_t d = put(1, 1, 1);  // a retry's attempt numbers start again
  EXPECT_EQ(text_of(*db, "latest_of_run", 1), "1=" + std::to_string(d) + " 2=" + std::to_string(c));
  EXPECT_EQ(text_of(*db, "latest_of_rounds", 1),
            "1/0=" + std::to_string(a) + " 1/1=" + std::to_string(d) + " 2/0=" + std::to_string(c));
  (void)b;
  EXPECT_EQ(text_of(*db, "latest_of_run", 2), "");
}

TEST(VerifyStore, StoresAVerdictWithItsReport) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(test::source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  r.flags = {kMutantSurvived};
  r.report = {{"tests", {{{"name", "test_add"}, {"status", "passed"}}}}};
  r.script = "import torch\n";
  r.stderr_tail = "warning\n";
  r.duration_ms = 1234;
  r.device = "cuda:0";
  auto id = store_verification(**db, {std::nullopt, 1, 1, 2}, r, 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select = read_file(test::source_dir() / "tests" / "verify" / "select_verification.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->text(0), "passed");
  EXPECT_EQ(s->text(1), R"(["mutant_survived"])");
  EXPECT_EQ(s->text(2), "1 test passed");
  EXPECT_EQ(nlohmann::json::parse(s->text(3))["tests"][0]["name"], "test_add");
  EXPECT_EQ(s->text(4), "import torch\n");
  EXPECT_EQ(s->int64(5), 1234);
  EXPECT_EQ(s->text(6), "cuda:0");
  EXPECT_EQ(s->int64(7), 2);
  // A sample that does not exist is refused (foreign key), with context.
  auto bad = store_verification(**db, {std::nullopt, 1, 99, 1}, r, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sample 99"), std::string::npos);
}

// Issue 56, 5: a harness's error text and stderr that hold a NUL byte are stored whole, not cut
// at the NUL.
TEST(VerifyStore, TextsWithANulByteAreStoredWhole) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(test::source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  VerifyResult r;
  r.verdict = Verdict::error;
  r.detail = std::string("ValueError: source code string cannot contain null bytes\0after", 62);
  r.stderr_tail = std::string("line 1\0line 2\n", 14);
  auto id = store_verification(**db, {std::nullopt, 1, 1, 1}, r, 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select =
      read_file(test::source_dir() / "tests" / "verify" / "select_verification_texts.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->text(0), r.detail);
  EXPECT_EQ(s->text(1), r.stderr_tail);
  EXPECT_EQ(s->int64(2), 62);
  EXPECT_EQ(s->int64(3), 14);
}

TEST(VerifyStore, DeviceAlerts) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok());
  std::vector<DeviceStatus> devs = {{"cuda:0", true, 4, 4, 0, ""},
                                    {"cuda:1", false, 4, 0, 3, "GPU probe failed: Xid 79"}};
  ASSERT_TRUE(store_device_status(**db, devs, 5).ok());
  devs[0].ready_workers = 3;
  ASSERT_TRUE(store_device_status(**db, devs, 6).ok());
  auto alerts = device_alerts(**db);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].device, "cuda:1");
  EXPECT_EQ((*alerts)[0].start_failures, 3);
  EXPECT_EQ((*alerts)[0].reason, "GPU probe failed: Xid 79");
  EXPECT_EQ((*alerts)[0].updated_ms, 6);
}

// A daemon's pool at start replaces every row: an alert from an earlier configuration (or a pool
// that could not start) goes.
TEST(VerifyStore, ReplacingTheDevicesDropsEarlierRows) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(
      replace_device_status(**db, {{"verifier", false, 0, 0, 1, "cannot start: no python"}}, 5)
          .ok());
  auto before = device_alerts(**db);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].reason, "cannot start: no python");
  ASSERT_TRUE(replace_device_status(**db, {{"cpu", true, 2, 2, 0, ""}}, 6).ok());
  auto after = device_alerts(**db);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace kforge::verify
