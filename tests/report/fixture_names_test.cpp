// The hand-written report fixture (fixtures/ab_runs.sql) speaks the pipeline's language: every
// stage, failure kind and flag it stores is a string that libs/ writes. (States, statuses and
// verdicts are held to their lists by the schema's CHECK constraints already.) A fixture that
// invents "verdict_failed" or "invalid_json" fails here, so the report tests cannot drift away
// from what the real scheduler and verifier store.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "fixture.hpp"

namespace kforge::test {
namespace {

// Every quoted word ("word", 'word', "prefix:") in the C++, SQL and Python of libs/.
std::set<std::string> literals_of_libs() {
  std::set<std::string> out;
  const std::regex quoted(R"re(["']([a-z][a-z0-9_]*:?)["'])re");
  for (const auto& e : std::filesystem::recursive_directory_iterator(source_dir() / "libs")) {
    const auto ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".sql" && ext != ".py"))
      continue;
    const std::string text = read_text(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), quoted), end; it != end; ++it)
      out.insert((*it)[1].str());
  }
  return out;
}

// A value libs/ writes: a literal, or "prefix:rest" built from the literals "prefix:" and "rest"
// (the scheduler's "llm:http", "rejected:no_kernel_launch").
bool written_by_libs(const std::set<std::string>& lits, const std::string& v) {
  if (lits.count(v)) return true;
  auto colon = v.find(':');
  return colon != std::string::npos && lits.count(v.substr(0, colon + 1)) &&
         lits.count(v.substr(colon + 1));
}

std::vector<std::string> distinct(store::Db& db, const std::string& sql) {
  std::vector<std::string> out;
  auto s = db.prepare(sql);
  EXPECT_TRUE(s.ok()) << sql;
  if (!s.ok()) return out;
  while (*s->step()) out.push_back(s->text(0));
  return out;
}

TEST(ReportFixtureNames, EveryStageFailureKindAndFlagIsOneLibsWrites) {
  const auto lits = literals_of_libs();
  // The checker itself: the names the pipeline does write are found...
  for (const char* real :
       {"verify_queued", "no_kernel_launch", "no_test_function", "parse", "rate_limit", "llm:http",
        "rejected:no_kernel_launch", "verifier", "mutant_survived", "infrastructure"})
    EXPECT_TRUE(written_by_libs(lits, real)) << real;
  // ...and the ones an earlier fixture invented are not.
  for (const char* invented :
       {"verdict_failed", "rejected_by_facts", "invalid_json", "http_503", "llm:http_503"})
    EXPECT_FALSE(written_by_libs(lits, invented)) << invented;

  ReportFixture fx;
  const std::vector<std::pair<std::string, std::string>> columns = {
      {"jobs.stage", "SELECT DISTINCT stage FROM jobs"},
      {"jobs.error_kind", "SELECT DISTINCT error_kind FROM jobs WHERE error_kind IS NOT NULL"},
      {"stage_outputs.stage", "SELECT DISTINCT stage FROM stage_outputs"},
      {"stage_outputs.error_kind",
       "SELECT DISTINCT error_kind FROM stage_outputs WHERE error_kind IS NOT NULL"},
      {"verifications.flags_json",
       "SELECT DISTINCT f.value FROM verifications, json_each(verifications.flags_json) f"},
      {"job_events.kind", "SELECT DISTINCT kind FROM job_events"},
  };
  int checked = 0;
  for (const auto& [column, sql] : columns)
    for (const auto& v : distinct(fx.db(), sql)) {
      EXPECT_TRUE(written_by_libs(lits, v)) << "fixtures/ab_runs.sql stores " << column << " = '"
                                            << v << "', a string nothing in libs/ writes";
      ++checked;
    }
  EXPECT_GE(checked, 10);
  // A job the verifier has judged is 'done' at stage 'done' (the verify stage writes both in
  // one transaction); a failed job keeps the stage it failed at.
  EXPECT_EQ(fx.db()
                .prepare("SELECT count(*) FROM jobs WHERE state = 'failed' AND stage IN "
                         "('verify', 'done')")
                ->one([](store::Stmt& s) { return s.int64(0); })
                .value()
                .value_or(-1),
            0);
}

}  // namespace
}  // namespace kforge::test
