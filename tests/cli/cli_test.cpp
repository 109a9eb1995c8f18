// The kforge and kforged binaries as a user runs them: exit codes, messages, the import flow.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testutil.hpp"

namespace kforge {
namespace {

using test::ProcResult;
using test::TempDir;

class Cli : public ::testing::Test {
 protected:
  ProcResult kforge(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), test::binary("apps/kforge/kforge").string());
    env.push_back("KFORGE_DB=" + (dir_ / "k.db").string());
    env.push_back("KFORGE_CONFIG=" + (dir_ / "none.yaml").string());
    if (!std::filesystem::exists(dir_ / "none.yaml")) test::write_text(dir_ / "none.yaml", "{}\n");
    return test::run_process(args, env);
  }
  std::int64_t samples() {
    auto r = kforge({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["samples"].get<std::int64_t>();
  }
  TempDir dir_;
};

const char* kMap = "code=output,description_1=simp_instru,description_2=comp_instru";

TEST_F(Cli, ImportTritonBenchThenStatusThenReimportThenTruncated) {
  auto corpus = test::small_corpus();
  const int n = test::kSmallCorpusRecords;
  auto r = kforge({"import", corpus.string(), "--map", kMap, "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(n) + " added"), std::string::npos) << r.out;
  EXPECT_EQ(samples(), n);

  r = kforge({"import", corpus.string(), "--map", kMap, "--key", "file", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["added"], 0);
  EXPECT_EQ(j["unchanged"], n);
  EXPECT_EQ(samples(), n);

  std::string text = test::read_text(corpus);
  test::write_text(dir_ / "truncated.json", text.substr(0, text.size() / 2));
  r = kforge({"import", (dir_ / "truncated.json").string(), "--map", kMap, "--key", "file"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated.json: record "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was imported"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 600u) << "the error should be one readable line";
  EXPECT_EQ(samples(), n);
}

TEST_F(Cli, StatusOnAnEmptyDatabase) {
  auto r = kforge({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("samples    0"), std::string::npos) << r.out;
  EXPECT_EQ(samples(), 0);
}

TEST_F(Cli, ExitCodes) {
  EXPECT_EQ(kforge({"--help"}).exit_code, 0);
  EXPECT_EQ(kforge({"import", "--help"}).exit_code, 0);
  EXPECT_EQ(kforge({"status", "--help"}).exit_code, 0);
  EXPECT_EQ(kforge({}).exit_code, 2);
  EXPECT_EQ(kforge({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(kforge({"import"}).exit_code, 2);
  EXPECT_EQ(kforge({"import", "x.json", "--format", "xml"}).exit_code, 2);
  EXPECT_EQ(kforge({"import", "x.json", "--map", "colour=x"}).exit_code, 2);
  auto r = kforge({"import", (dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.json: No such file"), std::string::npos) << r.err;
}

TEST_F(Cli, BadConfigurationNamesFileAndLine) {
  test::write_text(dir_ / "bad.yaml", "log:\n  level: info\nstore:\n  pathh: x.db\n");
  auto r = kforge({"--config", (dir_ / "bad.yaml").string(), "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.yaml:4: store.pathh: unknown key"), std::string::npos) << r.err;

  test::write_text(dir_ / "bad2.yaml", "store:\n  busy_timeout_ms: soon\n");
  r = test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (dir_ / "bad2.yaml").string(), "--check-config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad2.yaml:2: store.busy_timeout_ms: expected an integer, got 'soon'"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, ShippedConfigurationIsValid) {
  auto r =
      test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (test::source_dir() / "config/kforge.yaml").string(), "--check-config"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, NewerDatabaseIsRefused) {
  ASSERT_EQ(kforge({"status"}).exit_code, 0);
  // scripts/bootstrap installs the sqlite3 shell; only its absence is a reason to skip.
  if (!std::filesystem::exists("/usr/bin/sqlite3")) GTEST_SKIP() << "sqlite3 shell not installed";
  auto sqlite = test::run_process({"/usr/bin/sqlite3", (dir_ / "k.db").string(),
                                   "INSERT INTO kforge_schema VALUES (9999, '9999_x.sql', 0)"});
  ASSERT_EQ(sqlite.exit_code, 0) << sqlite.err;
  auto r = kforge({"status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("newer kforge"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
