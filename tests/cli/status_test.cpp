// kforge status on a database without runs: it never creates one, and shows its size with the
// write-ahead log. (With runs and a daemon: run_status_test.cpp.)

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"

namespace kforge::test {
namespace {

TEST_F(Cli, StatusNeverCreatesADatabase) {
  auto r = kforge({"status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("database " + (dir_ / "k.db").string() + " does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kforge import FILE creates it"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  for (auto args :
       std::vector<std::vector<std::string>>{{"run", "create", "a", "--pipeline", "v1"},
                                             {"export", "a", "--out", "x.json"},
                                             {"compare", "a", "b"},
                                             {"retry", "a", "--verdict", "error"},
                                             {"debug", "a", "--failed", "--out", "d"}}) {
    auto c = kforge(args);
    EXPECT_EQ(c.exit_code, 1) << args[0] << ": " << c.err;
    EXPECT_NE(c.err.find("does not exist"), std::string::npos) << args[0] << ": " << c.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  // A failed import leaves no database behind either, nor does a dry run.
  test::write_text(dir_ / "bad.json", "[{\"code\": 3}]");
  r = kforge({"import", (dir_ / "bad.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  r = kforge({"import", test::small_corpus().string(), "--map", kMap, "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  // After a real import, status reads it.
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  r = kforge({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("samples    40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("daemon     none has run on this database"), std::string::npos) << r.out;
}

// status shows what the database takes on disk: the file and its write-ahead log.
TEST_F(Cli, StatusShowsTheDatabaseSizeWithItsLog) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  auto r = kforge({"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto b = nlohmann::json::parse(r.out)["database_bytes"];
  auto file = static_cast<std::int64_t>(std::filesystem::file_size(dir_ / "k.db"));
  EXPECT_EQ(b["file"].get<std::int64_t>(), file);
  EXPECT_GE(b["wal"].get<std::int64_t>(), 0);
  EXPECT_EQ(b["total"].get<std::int64_t>(), file + b["wal"].get<std::int64_t>());
  r = kforge({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto line = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(line.find("B: file "), std::string::npos) << line;
  EXPECT_NE(line.find(" + WAL "), std::string::npos) << line;
}

}  // namespace
}  // namespace kforge::test
