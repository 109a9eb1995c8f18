// The verifier's vocabularies (store/vocabulary.hpp): each is one list of names, in a file beside
// the harness (kforge_harness/vocabulary/*.txt). C++'s table, the compiled-in file and the SQL
// table the migration seeds hold the same names in the same order; the columns' CHECKs allow
// them; a verification with a flag outside the list is refused; a named query writes a name as its
// token (:verdict_passed), which the query set fills from the C++ table.

#include <gtest/gtest.h>

#include <set>

#include "kforge/core/embedded.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/query_vocabulary.hpp"
#include "kforge/store/states.hpp"
#include "kforge/store/vocabulary.hpp"
#include "testutil.hpp"

namespace kforge::store {
namespace {

template <class E, std::size_t N>
std::vector<std::string> table_names(const EnumName<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

std::vector<std::string> sql_names(Db& db, const std::string& table) {
  std::vector<std::string> out;
  auto s = db.prepare("SELECT name FROM " + table + " ORDER BY position");
  EXPECT_TRUE(s.ok()) << table;
  if (!s.ok()) return out;
  EXPECT_TRUE(s->each([&](Stmt& r) { out.push_back(r.text(0)); }).ok());
  return out;
}

TEST(Vocabulary, CppFileAndSqlHoldTheSameNamesInTheSameOrder) {
  test::TempDir dir;
  auto db = Db::open({.path = (dir / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  struct Case {
    const char* file;
    std::vector<std::string> cpp;
    const char* table;
  };
  for (const Case& c :
       {Case{"verdicts.txt", table_names(kVerdictNames), "verdict_names"},
        Case{"flags.txt", table_names(kFlagNames), "flag_names"},
        Case{"target_results.txt", table_names(kTargetResultNames), "target_result_names"},
        Case{"stage_kinds.txt", table_names(kStageKindNames), "stage_kind_names"}}) {
    SCOPED_TRACE(c.file);
    auto file = vocabulary_lines(c.file);
    EXPECT_FALSE(file.empty());
    EXPECT_EQ(c.cpp, file);
    EXPECT_EQ(sql_names(**db, c.table), file);
  }
  EXPECT_TRUE(vocabulary_lines("nothing.txt").empty());
}

TEST(Vocabulary, NamesReadBackAndAnUnknownOneListsTheKnown) {
  for (const auto& e : kVerdictNames) EXPECT_EQ(*parse_verdict(e.name), e.value);
  for (const auto& e : kFlagNames) EXPECT_EQ(*parse_flag(e.name), e.value);
  for (const auto& e : kTargetResultNames) EXPECT_EQ(*parse_target_result(e.name), e.value);
  EXPECT_EQ(verdict_name(Verdict::crashed), "crashed");
  EXPECT_EQ(to_string(Flag::weak_inputs), "weak_inputs");
  EXPECT_EQ(to_string(TargetResultKind::not_run), "not_run");
  auto bad = parse_flag("weak");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "'weak' is not a quality flag (no_kernel_launch, mutant_survived, weak_test, "
            "weak_inputs, constant_output, out_of_bounds, infrastructure, environment, slow, "
            "cross_compile_failed, tampered, unstable_test, kernel_not_used)");
}

// Inserts a verification of the fixture's sample with the given flags.
Status insert_verification(Db& db, const std::string& flags) {
  KF_CHECK(
      db.exec("INSERT OR IGNORE INTO samples (id, key, code_sha256, code, record_json, source, "
              "source_index, created_ms, updated_ms) VALUES (1, 'k', 'h', 'c', '{}', 's', 0, 0, 0);"
              "INSERT OR IGNORE INTO runs (id, tag, pipeline, model, created_ms, updated_ms) "
              "VALUES (1, 't', 'v2', 'm', 0, 0);"));
  KF_TRY(Stmt s, db.prepare("INSERT INTO verifications (run_id, sample_id, verdict, flags_json, "
                            "created_ms) VALUES (1, 1, 'passed', ?1, 0)"));
  s.bind(1, flags);
  return s.run();
}

TEST(Vocabulary, AVerificationWithAFlagOutsideTheListIsRefused) {
  test::TempDir dir;
  auto db = Db::open({.path = (dir / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto ok = insert_verification(**db, "[\"weak_test\",\"out_of_bounds\"]");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  auto bad = insert_verification(**db, "[\"weak_tests\"]");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("a flag that is not in flag_names"), std::string::npos)
      << bad.error().message;
  auto update = (*db)->exec("UPDATE verifications SET flags_json = '[\"mutant\"]'");
  ASSERT_FALSE(update.ok());
  EXPECT_NE(update.error().message.find("flag_names"), std::string::npos);
}

TEST(Vocabulary, SqlTokensBecomeTheTablesNamesAndNothingElseChanges) {
  auto sql = vocabulary_sql(
      "SELECT ':verdict_passed', \":flag_slow\" -- :verdict_nothing here\n"
      "FROM v WHERE verdict IN (:verdict_passed, :verdict_skipped) AND f = :flag_out_of_bounds\n"
      "AND s = :speed_flag_not_timed AND t = :target_result_not_run AND k = :stage_kind_code\n"
      "AND other = :other AND run_id = ?1;");
  ASSERT_TRUE(sql.ok()) << sql.error().message;
  EXPECT_EQ(*sql,
            "SELECT ':verdict_passed', \":flag_slow\" -- :verdict_nothing here\n"
            "FROM v WHERE verdict IN ('passed', 'skipped') AND f = 'out_of_bounds'\n"
            "AND s = 'not_timed' AND t = 'not_run' AND k = 'code'\n"
            "AND other = :other AND run_id = ?1;");
}

TEST(Vocabulary, ASqlTokenOfNoNameIsAnErrorNamingItAndTheNames) {
  auto bad = vocabulary_sql("SELECT 1 WHERE verdict = :verdict_pased");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, "sql");
  EXPECT_EQ(bad.error().message,
            ":verdict_pased: 'pased' is not a verdict (passed, failed, error, timeout, crashed, "
            "invalid, skipped)");
  auto speed = vocabulary_sql("SELECT :speed_flag_slowish");
  ASSERT_FALSE(speed.ok());
  EXPECT_NE(speed.error().message.find("'slowish' is not a speed flag ("), std::string::npos)
      << speed.error().message;
  const EmbeddedFile bad_file[] = {{"bad.sql", "-- name: q\nSELECT :flag_weak;\n"}};
  // The set refuses to load (spdlog's critical line, on stdout, names the query and its file).
  EXPECT_DEATH(QuerySet{bad_file}, "");
}

// A token written before the query's ?1 (SQLite would number a bound :name 1, the same slot as
// ?1) still counts what the name counts: the set puts the literal in before SQLite sees it.
TEST(Vocabulary, AQuerySetsTokenBeforeItsParametersCountsWhatTheNameCounts) {
  test::TempDir dir;
  auto db = Db::open({.path = (dir / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_TRUE(insert_verification(**db, "[\"weak_test\"]").ok());
  ASSERT_TRUE(insert_verification(**db, "[]").ok());
  ASSERT_TRUE((*db)->exec("UPDATE verifications SET verdict = 'failed' WHERE id = 2").ok());
  const EmbeddedFile file[] = {{"t.sql",
                                "-- name: passed_with\n"
                                "SELECT count(*) FROM verifications v\n"
                                "WHERE v.verdict = :verdict_passed AND EXISTS (\n"
                                "  SELECT 1 FROM json_each(v.flags_json) f\n"
                                "  WHERE f.value = :flag_weak_test) AND v.run_id = ?1;\n"}};
  const QuerySet q(file);
  auto s = (*db)->cached(q["passed_with"]);
  ASSERT_TRUE(s.ok()) << s.error().message;
  (*s)->bind(1, 1);
  auto n = (*s)->one([](Stmt& r) { return r.int64(0); });
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->value_or(-1), 1);
  EXPECT_NE(q["passed_with"].find("v.verdict = 'passed'"), std::string_view::npos);
}

}  // namespace
}  // namespace kforge::store
