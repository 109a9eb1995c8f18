// The verifier's vocabularies (store/vocabulary.hpp): each is one list of names, in a file beside
// the harness (kforge_harness/vocabulary/*.txt). C++'s table, the compiled-in file and the SQL
// table the migration seeds hold the same names in the same order; the columns' CHECKs allow
// them; a verification with a flag outside the list is refused.

#include <gtest/gtest.h>

#include <set>

#include "kforge/store/db.hpp"
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
            "cross_compile_failed, tampered, unstable_test)");
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

}  // namespace
}  // namespace kforge::store
