// kforge export's options for training data, and the folder's guarantees, on the report
// fixture's database: splits parsed with errors that name the item, the folder replaced whole or
// not at all.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "kforge/report/dataset.hpp"

namespace kforge::report {
namespace {

using test::ReportFixture;

TEST(ReportDataset, SplitsAreNamedFractionsThatSumToOne) {
  auto s = parse_splits("train=0.8,validation=0.1,test=0.1");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[1].name, "validation");
  EXPECT_DOUBLE_EQ((*s)[2].fraction, 0.1);
  auto bad = [](const std::string& spec) {
    auto r = parse_splits(spec);
    EXPECT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.error().kind, "usage") << spec;
    return r.error().message;
  };
  EXPECT_EQ(bad("train=0.9,test=0.2"), "--split: the fractions sum to 1.1 (0.9 + 0.2), not 1");
  EXPECT_EQ(bad("train=0.9"), "--split: the fractions sum to 0.9 (0.9), not 1");
  EXPECT_EQ(bad("train"), "--split: 'train' is not NAME=FRACTION (e.g. train=0.9,test=0.1)");
  EXPECT_EQ(bad("train=0.5,train=0.5"), "--split: the split 'train' is given twice");
  EXPECT_EQ(bad("train=half,test=0.5"),
            "--split: train='half' is not a fraction above 0 and at most 1");
  EXPECT_EQ(bad("train=1,test=0"), "--split: test='0' is not a fraction above 0 and at most 1");
  EXPECT_EQ(bad("a/b=1"),
            "--split: the split name 'a/b' may hold only letters, digits, '_' and '-'");
}

TEST(ReportDataset, FormatsAndReasoningStyles) {
  EXPECT_EQ(parse_row_shape("sft"), RowShape::sft);
  EXPECT_EQ(parse_row_shape("prompt-completion"), RowShape::prompt_completion);
  EXPECT_EQ(parse_row_shape("trajectory"), RowShape::trajectory);
  EXPECT_EQ(parse_row_shape("rl"), RowShape::rl);
  EXPECT_EQ(parse_row_shape("jsonl"), std::nullopt);
  auto f = parse_export_format("chatml", "x.jsonl");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message,
            "--format: 'chatml' is not one of json, jsonl, auto (kforge's records) or sft, "
            "prompt-completion, trajectory, rl (training rows)");
  EXPECT_EQ(*parse_reasoning_style(""), ReasoningStyle::think);
  EXPECT_EQ(*parse_reasoning_style("reasoning_content"), ReasoningStyle::reasoning_content);
  EXPECT_FALSE(parse_reasoning_style("inline").ok());
}

TEST(ReportDataset, SplitsAreDeterministicAndNearTheirFractions) {
  std::vector<Split> s = {{"train", 0.9}, {"test", 0.1}};
  int test = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string key = "kernel_" + std::to_string(i) + ".py";
    std::size_t a = split_index(s, key);
    EXPECT_EQ(a, split_index(s, key));
    test += a == 1;
  }
  EXPECT_NEAR(test, 400, 60);
}

std::size_t lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

TEST(ReportDataset, AFolderIsReplacedWholeAndOnlyWhenItIsAnExport) {
  ReportFixture fx;
  auto dir = fx.dir() / "out";
  ExportOptions opts;
  auto sum = export_folder(fx.db(), "v2", dir, opts);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->rows.written, 14);
  ASSERT_EQ(sum->splits.size(), 1u);
  EXPECT_EQ(sum->splits[0].name, "train");
  EXPECT_EQ(lines(dir / "data" / "train-00000-of-00001.jsonl"), 14u);
  EXPECT_TRUE(std::filesystem::exists(dir / "README.md"));
  // Again, with the verified samples only: the old rows are gone, not mixed in.
  opts.verdicts = {"passed"};
  opts.shard_rows = 3;
  ASSERT_TRUE(export_folder(fx.db(), "v2", dir, opts).ok());
  std::size_t rows = 0, files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "data")) {
    ++files;
    rows += lines(e.path());
  }
  EXPECT_EQ(rows, 7u);
  EXPECT_EQ(files, 3u);
  EXPECT_TRUE(std::filesystem::exists(dir / "data" / "train-00002-of-00003.jsonl"));
  // A failed export (an unknown run) leaves it as it was, and no staging folder behind.
  EXPECT_FALSE(export_folder(fx.db(), "nope", dir, opts).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "data" / "train-00002-of-00003.jsonl"));
  for (const auto& e : std::filesystem::directory_iterator(fx.dir().path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // Someone else's folder is never replaced.
  auto mine = fx.dir() / "mine";
  std::filesystem::create_directories(mine);
  test::write_text(mine / "README.md", "# my dataset\n");
  auto r = export_folder(fx.db(), "v2", mine, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "conflict");
  EXPECT_EQ(test::read_text(mine / "README.md"), "# my dataset\n");
}

}  // namespace
}  // namespace kforge::report
