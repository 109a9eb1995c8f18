// The pipeline's states (store/states.hpp): each enum's names are exactly those its column's
// CHECK constraint allows in the migrated schema, read back by parse, and an unknown name is an
// error that lists the known ones.

#include <gtest/gtest.h>

#include <set>

#include "kforge/store/db.hpp"
#include "kforge/store/run_prompts.hpp"
#include "kforge/store/states.hpp"
#include "testutil.hpp"

namespace kforge::store {
namespace {

// The names a column's CHECK (COLUMN IN ('a', 'b', ...)) allows, from the table's SQL as the
// migrated database holds it.
std::set<std::string> allowed(Db& db, const std::string& table, const std::string& column) {
  auto s = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1");
  EXPECT_TRUE(s.ok());
  s->bind(1, table);
  auto row = s->step();
  EXPECT_TRUE(row.ok() && *row) << table;
  std::string sql = s->text(0);
  std::string marker = "CHECK (" + column + " IN (";
  auto at = sql.find(marker);
  EXPECT_NE(at, std::string::npos) << sql;
  auto end = sql.find(')', at + marker.size());
  std::set<std::string> out;
  std::string list = sql.substr(at + marker.size(), end - at - marker.size());
  for (std::size_t q = list.find('\''); q != std::string::npos; q = list.find('\'', q)) {
    auto close = list.find('\'', q + 1);
    out.insert(list.substr(q + 1, close - q - 1));
    q = close + 1;
  }
  return out;
}

template <class E, std::size_t N>
std::set<std::string> names(const EnumName<E> (&table)[N]) {
  std::set<std::string> out;
  for (const auto& e : table) out.emplace(e.name);
  return out;
}

TEST(States, EachEnumHasExactlyTheNamesItsColumnAllows) {
  test::TempDir dir;
  auto db = Db::open({.path = (dir / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(names(kRunStateNames), allowed(**db, "runs", "state"));
  EXPECT_EQ(names(kJobStateNames), allowed(**db, "jobs", "state"));
  EXPECT_EQ(names(kOutputStatusNames), allowed(**db, "stage_outputs", "status"));
}

TEST(States, NamesReadBackAndAnUnknownOneListsTheKnown) {
  for (const auto& e : kJobStateNames) EXPECT_EQ(*parse_job_state(e.name), e.value);
  for (const auto& e : kRunStateNames) EXPECT_EQ(*parse_run_state(e.name), e.value);
  for (const auto& e : kOutputStatusNames) EXPECT_EQ(*parse_output_status(e.name), e.value);
  for (const auto& e : kStageKindNames) EXPECT_EQ(*parse_stage_kind(e.name), e.value);
  auto bad = parse_job_state("finished");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "'finished' is not a job state (queued, leased, verify_queued, verifying, done, "
            "failed, cancelled)");
  EXPECT_FALSE(parse_output_status("").ok());
  // "done" is a job state and, in jobs.stage, the step after every other one.
  EXPECT_EQ(to_string(JobState::done), "done");
  EXPECT_EQ(step_of("done"), JobStep::none);
  EXPECT_EQ(step_of("verify"), JobStep::verify);
  EXPECT_EQ(step_of("generate"), std::nullopt);
  EXPECT_TRUE(before_verifier("analyze"));
  EXPECT_TRUE(before_verifier("plan"));
  EXPECT_FALSE(before_verifier("verify"));
  EXPECT_FALSE(before_verifier("done"));
  EXPECT_FALSE(before_verifier(kRepairStage));
  EXPECT_EQ(job_error_kind_of("unfixable"), JobErrorKind::unfixable);
  EXPECT_EQ(job_error_kind_of("llm:timeout"), std::nullopt);
  EXPECT_TRUE(finished(JobState::failed));
  EXPECT_FALSE(finished(JobState::cancelled));
}

TEST(States, ARunsStagesByKindComeFromWhatItRecorded) {
  auto prompts = nlohmann::json::parse(R"({
    "analyze": {"version": "t3", "sha256": "a", "kind": "analysis"},
    "plan": {"version": "t3", "sha256": "b", "kind": "analysis"},
    "generate": {"version": "t3", "sha256": "c", "kind": "code"},
    "retry": {"version": "common", "sha256": "d"}})");
  EXPECT_EQ(stages_of_kind(prompts, StageKind::analysis),
            (std::vector<std::string>{"analyze", "plan"}));
  EXPECT_EQ(stages_of_kind(prompts, StageKind::code), (std::vector<std::string>{"generate"}));
  EXPECT_FALSE(has_stage_kind(prompts, StageKind::repair));
  EXPECT_FALSE(has_stage_kind(nlohmann::json::object(), StageKind::code));
}

}  // namespace
}  // namespace kforge::store
