// kforge export on report's fixture database (tests/report/fixture.hpp): exit codes (0
// success, 1 failure, 2 bad usage) and messages.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report_cli_fixture.hpp"

namespace kforge::test {
namespace {

TEST_F(ReportCli, Export) {
  auto out = fx.dir() / "v2.jsonl";
  auto r = kforge({"export", "v2", "--out", out.string(), "--verdict", "passed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "exported 7 samples of v2 to")) << r.out;
  EXPECT_TRUE(has(r.out, "(7 left out by --verdict)")) << r.out;
  // A path that cannot be written is named as given, not by the temporary file beside it.
  auto bad = fx.dir() / "missing" / "v2.jsonl";
  r = kforge({"export", "v2", "--out", bad.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(
      r.err, "kforge: error: " + bad.string() + ": cannot be written: No such file or directory"))
      << r.err;
  EXPECT_FALSE(has(r.err, ".tmp")) << r.err;
  r = kforge(
      {"export", "v1", "--out", (fx.dir() / "v1.json").string(), "--verdict", "failed,timeout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_text(fx.dir() / "v1.json")).size(), 3u);
  EXPECT_EQ(kforge({"export", "v2"}).exit_code, 2);  // no --out
  EXPECT_EQ(kforge({"export", "v2", "--out", out.string(), "--format", "xml"}).exit_code, 2);
  r = kforge({"export", "v2", "--out", out.string(), "--verdict", "great"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "'great' is not a verdict")) << r.err;
  EXPECT_EQ(kforge({"export", "nope", "--out", out.string()}).exit_code, 1);
}

// Issue 56, 10: a file named for another format is refused, never written as JSON.
TEST_F(ReportCli, ExportRefusesAFileNamedForAnotherFormat) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--format", "jsonl"}, {"--format", "sft"}}) {
    auto parquet = fx.dir() / "x.parquet";
    std::vector<std::string> args = {"export", "v2", "--out", parquet.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kforge(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(has(r.err,
                    "x.parquet: kforge export writes JSON (a .json list or .jsonl lines), "
                    "not Parquet"))
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(parquet));
  }
  auto csv = fx.dir() / "x.CSV";
  EXPECT_EQ(kforge({"export", "v2", "--out", csv.string()}).exit_code, 2);
  // An extension naming nothing, in auto: said so, with the way out.
  auto out = fx.dir() / "x.data";
  auto r = kforge({"export", "v2", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "the extension '.data' names no format")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(kforge({"export", "v2", "--out", out.string(), "--format", "jsonl"}).exit_code, 0);
}

}  // namespace
}  // namespace kforge::test
