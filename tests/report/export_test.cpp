// kforge export: the original records round-trip with every field in order, the run's outputs
// are added, the order is stable and the write is atomic.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "kforge/report/export.hpp"

namespace kforge::report {
namespace {

using ojson = nlohmann::ordered_json;
using test::ReportFixture;

std::vector<ojson> read_jsonl(const std::filesystem::path& p) {
  std::vector<ojson> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) out.push_back(ojson::parse(line));
  return out;
}

// The corpus records as they are in the source file, by key.
std::map<std::string, ojson> originals() {
  std::map<std::string, ojson> m;
  for (auto& r : ojson::parse(test::read_text(test::fixture_file("corpus.json"))))
    m[r["file"].get<std::string>()] = r;
  return m;
}

const ojson* find_key(const std::vector<ojson>& recs, const std::string& key) {
  for (const auto& r : recs)
    if (r["file"] == key) return &r;
  return nullptr;
}

const std::vector<std::string> kAdded = {"kernel_wrapper", "unitest_code", "kernel_analysis",
                                         "verdict",        "flags",        "status",
                                         "repair_round",   "model",        "prompt",
                                         "mutation_score", "coverage",     "cross_compile",
                                         "speed"};

TEST(ReportExport, EveryOriginalFieldKeptInOrderThenTheOutputs) {
  ReportFixture fx;
  auto out = fx.dir() / "v2.jsonl";
  auto sum = export_run(fx.db(), "v2", out, ExportOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->written, 14);  // every job of v2, finished or not
  EXPECT_EQ(sum->skipped, 0);
  auto recs = read_jsonl(out);
  ASSERT_EQ(recs.size(), 14u);
  auto orig = originals();
  std::string previous;
  for (const auto& r : recs) {
    std::string key = r["file"];
    EXPECT_LT(previous, key) << "not in key order";
    previous = key;
    const ojson& o = orig.at(key);
    // The original fields first, in their order, with equal values (numbers, nulls, nested
    // objects and non-ASCII text included); then exactly the added fields.
    std::vector<std::string> names;
    for (const auto& [k, v] : r.items()) names.push_back(k);
    ASSERT_EQ(names.size(), o.size() + kAdded.size()) << key;
    std::size_t i = 0;
    for (const auto& [k, v] : o.items()) {
      EXPECT_EQ(names[i], k) << key;
      EXPECT_EQ(r[k], v) << key << "." << k;
      ++i;
    }
    for (const auto& a : kAdded) EXPECT_EQ(names[i++], a) << key;
  }
  // The record whose fields were in an unusual order keeps that order.
  EXPECT_EQ(find_key(recs, "softmax.py")->begin().key(), "difficulty");
  const ojson& uni = *find_key(recs, "syntax_typo.py");
  EXPECT_EQ(uni["comp_note"], "descriptions with ünïcødé — “quotes” and 🚀 survive");
  EXPECT_EQ(uni["ratio"], 0.0015);
  EXPECT_TRUE(uni["reviewed"].is_null());
}

TEST(ReportExport, TheMutationScoreAndCoverageFactsOfEachVerification) {
  ReportFixture fx;
  fx.exec("set_mutation_score",
          {"copy_transpose.py", "6", "6",
           R"({"output_sizes": [1, 4096], "tail_path": true, "size_one": true, "empty": false})"});
  auto out = fx.dir() / "v2.jsonl";
  ASSERT_TRUE(export_run(fx.db(), "v2", out, ExportOptions{}).ok());
  auto recs = read_jsonl(out);
  const ojson& ct = *find_key(recs, "copy_transpose.py");
  EXPECT_EQ(ct["mutation_score"], ojson({{"killed", 6}, {"applicable", 6}}));
  EXPECT_EQ(ct["coverage"]["output_sizes"], ojson({1, 4096}));
  EXPECT_EQ(ct["coverage"]["tail_path"], true);
  // With a kernel battery: its part of the score, survivors included.
  fx.exec("set_mutation_report", {"copy_transpose.py",
                                  R"({"killed": 6, "applicable": 6, "survived": [],
               "kernel": {"killed": 2, "applicable": 3, "equivalent": 1, "tried": 8,
                          "survived": [{"mutant": "k3", "op": "index_swap", "section": "code",
                                        "section_line": 9, "desc": "the index terms ..."}]}})"});
  ExportOptions all;
  all.include_flagged = true;
  ASSERT_TRUE(export_run(fx.db(), "v2", out, all).ok());
  auto again = read_jsonl(out);
  const ojson& k = (*find_key(again, "copy_transpose.py"))["mutation_score"]["kernel"];
  EXPECT_EQ(k["killed"], 2);
  EXPECT_EQ(k["applicable"], 3);
  EXPECT_EQ(k["equivalent"], 1);
  EXPECT_EQ(k["survived"][0]["op"], "index_swap");
  // Verified before scores were stored, or never verified: null, not zero.
  const ojson& g = *find_key(recs, "garbled_output.py");
  EXPECT_TRUE(g["mutation_score"].is_null());
  EXPECT_TRUE(g["coverage"].is_null());
  for (const auto& r : recs) {
    if (r["file"] != "copy_transpose.py") {
      EXPECT_TRUE(r["mutation_score"].is_null()) << r["file"];
    }
  }
}

// A label without figures is exported with its flag and its reason.
TEST(ReportExport, ANotTimedLabelCarriesItsFlagAndReason) {
  ReportFixture fx;
  fx.exec("set_speed_not_timed",
          {"add_kernel.py", "v2", "timing failed: OutOfMemoryError: CUDA out of memory"});
  auto out = fx.dir() / "v2.jsonl";
  ASSERT_TRUE(export_run(fx.db(), "v2", out, ExportOptions{}).ok());
  auto recs = read_jsonl(out);
  auto a = nlohmann::json(find_key(recs, "add_kernel.py")->at("speed"));
  EXPECT_EQ(a["timed"], false);
  EXPECT_EQ(a["flags"], nlohmann::json::array({"not_timed"}));
  EXPECT_EQ(a["reason"], "timing failed: OutOfMemoryError: CUDA out of memory");
}

TEST(ReportExport, TheSpeedLabelOfEachVerification) {
  ReportFixture fx;
  fx.exec("set_speed", {"add_kernel.py", "v2", "41.5", "1.8", "1.6", "2.0", "1"});
  fx.exec("set_speed", {"copy_transpose.py", "v2", "12.5", "", "", "", ""});
  auto out = fx.dir() / "v2.jsonl";
  ASSERT_TRUE(export_run(fx.db(), "v2", out, ExportOptions{}).ok());
  auto recs = read_jsonl(out);
  auto a = nlohmann::json(find_key(recs, "add_kernel.py")->at("speed"));
  EXPECT_EQ(a["timed"], true);
  EXPECT_DOUBLE_EQ(a["kernel_us"].get<double>(), 41.5);
  EXPECT_DOUBLE_EQ(a["speedup"].get<double>(), 1.8);
  EXPECT_EQ(a["speedup_ci"], nlohmann::json::array({1.6, 2.0}));
  EXPECT_EQ(a["pass_perf"], true);
  EXPECT_EQ(a["flags"], nlohmann::json::array());
  EXPECT_EQ(a["device"], "NVIDIA H100 80GB HBM3");
  // Timed without a reference: the kernel's time, no speedup, no pass_perf.
  auto c = nlohmann::json(find_key(recs, "copy_transpose.py")->at("speed"));
  EXPECT_DOUBLE_EQ(c["kernel_us"].get<double>(), 12.5);
  EXPECT_TRUE(c["speedup"].is_null());
  EXPECT_TRUE(c["speedup_ci"].is_null());
  EXPECT_TRUE(c["pass_perf"].is_null());
  EXPECT_TRUE(find_key(recs, "softmax.py")->at("speed").is_null());  // not timed
}

TEST(ReportExport, TheCrossCompileOfEachVerificationAndTheCompilesForFilter) {
  ReportFixture fx;
  fx.exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx942", "ok", ""});
  fx.exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx90a", "error", "ttgir: x"});
  fx.exec("set_cross_compile", {"copy_transpose.py", "v2", "hip:gfx942", "error", "amdgcn: y"});
  fx.exec("set_cross_compile", {"softmax.py", "v2", "hip:gfx942", "unavailable", "no backend"});
  auto out = fx.dir() / "v2.jsonl";
  ASSERT_TRUE(export_run(fx.db(), "v2", out, ExportOptions{}).ok());
  auto recs = read_jsonl(out);
  EXPECT_EQ(nlohmann::json(find_key(recs, "add_kernel.py")->at("cross_compile")),
            nlohmann::json({{"hip:gfx942", "ok"}, {"hip:gfx90a", "error"}}));
  EXPECT_EQ(nlohmann::json(find_key(recs, "softmax.py")->at("cross_compile")),
            nlohmann::json({{"hip:gfx942", "unavailable"}}));
  EXPECT_TRUE(find_key(recs, "layernorm.py")->at("cross_compile").is_null());  // no target
  // Only the samples that compile for every target asked for.
  ExportOptions opts;
  opts.compiles_for = {"hip:gfx942"};
  auto sum = export_run(fx.db(), "v2", out, opts);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->written, 1);
  EXPECT_EQ(sum->not_compiling, 13);
  recs = read_jsonl(out);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["file"], "add_kernel.py");
  opts.compiles_for = {"hip:gfx942", "hip:gfx90a"};
  sum = export_run(fx.db(), "v2", out, opts);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->written, 0);
}

TEST(ReportExport, TheRunsOutputsAndProvenance) {
  ReportFixture fx;
  auto out = fx.dir() / "v2.jsonl";
  ASSERT_TRUE(export_run(fx.db(), "v2", out, ExportOptions{}).ok());
  auto recs = read_jsonl(out);
  const ojson& ct = *find_key(recs, "copy_transpose.py");
  EXPECT_EQ(ct["verdict"], "passed");
  EXPECT_EQ(ct["flags"], ojson::array());
  EXPECT_EQ(ct["status"], "verified");
  EXPECT_EQ(ct["model"], "gpt-4o-mini");
  EXPECT_EQ(ct["kernel_analysis"]["functional_contract"], "Z == X.T");
  EXPECT_NE(ct["kernel_wrapper"].get<std::string>().find("def run_copy_transpose"),
            std::string::npos);
  EXPECT_NE(ct["unitest_code"].get<std::string>().find("def test_copy_transpose"),
            std::string::npos);
  EXPECT_EQ(ct["prompt"]["tag"], "v2");
  EXPECT_EQ(ct["prompt"]["pipeline"], "v2");
  EXPECT_EQ(ct["prompt"]["analyze"]["version"], "v2/analyze");
  EXPECT_EQ(ct["prompt"]["generate"]["sha256"],
            "3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c");
  // Failed at analysis: nothing generated, no verdict.
  const ojson& g = *find_key(recs, "garbled_output.py");
  EXPECT_TRUE(g["kernel_analysis"].is_null());
  EXPECT_TRUE(g["kernel_wrapper"].is_null());
  EXPECT_TRUE(g["verdict"].is_null());
  EXPECT_EQ(g["status"], "parse_error");
  // Re-generated after a crash and rejected: the old verdict does not apply to the new code.
  const ojson& rg = *find_key(recs, "retry_gen.py");
  EXPECT_TRUE(rg["verdict"].is_null());
  EXPECT_EQ(rg["status"], "rejected");
  EXPECT_EQ(rg["unitest_code"], "def check():\n    pass\n");
  // Still waiting for the verifier.
  EXPECT_EQ(find_key(recs, "slow_pending.py")->at("status"), "unfinished");
  // The second verification of matmul_autotune is the one that counts.
  EXPECT_EQ(find_key(recs, "matmul_autotune.py")->at("verdict"), "passed");
  // A job left at stage 'done' after its generation failed: the failure is its status.
  ASSERT_TRUE(export_run(fx.db(), "v2-qwen", fx.dir() / "q.jsonl", ExportOptions{}).ok());
  auto q = read_jsonl(fx.dir() / "q.jsonl");
  EXPECT_EQ(find_key(q, "softmax.py")->at("status"), "llm_error");
  EXPECT_TRUE(find_key(q, "softmax.py")->at("kernel_wrapper").is_null());
  EXPECT_EQ(find_key(q, "layernorm.py")->at("model"), "qwen2.5-coder-32b");
}

TEST(ReportExport, VerdictFilterAndFormats) {
  ReportFixture fx;
  // v2 verified: add_kernel, copy_transpose, flaky_provider, matmul_autotune, softmax,
  // syntax_typo, vacuous_test.
  ExportOptions passed;
  passed.verdicts = {"passed"};
  auto out = fx.dir() / "v2-verified.jsonl";
  auto sum = export_run(fx.db(), "v2", out, passed);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->written, 7);
  EXPECT_EQ(sum->skipped, 7);
  std::vector<std::string> keys;
  for (const auto& r : read_jsonl(out)) keys.push_back(r["file"]);
  EXPECT_EQ(keys, (std::vector<std::string>{"add_kernel.py", "copy_transpose.py",
                                            "flaky_provider.py", "matmul_autotune.py", "softmax.py",
                                            "syntax_typo.py", "vacuous_test.py"}));
  // v1: 5 verified (+ slow_pending, verified in v1) = 6; with the two flagged passes, 8.
  auto v1 = export_run(fx.db(), "v1", fx.dir() / "v1.jsonl", passed);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->written, 6);
  passed.include_flagged = true;
  v1 = export_run(fx.db(), "v1", fx.dir() / "v1.jsonl", passed);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->written, 8);
  // v1 has no analysis stage: no kernel_analysis field at all.
  for (const auto& r : read_jsonl(fx.dir() / "v1.jsonl"))
    EXPECT_FALSE(r.contains("kernel_analysis"));
  // Several verdicts: copy_transpose and v1_only failed, matmul_autotune timed out.
  ExportOptions some;
  some.verdicts = {"failed", "timeout"};
  auto s = export_run(fx.db(), "v1", fx.dir() / "some.jsonl", some);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->written, 3);

  // JSON: one list holding the same records as the JSONL.
  ExportOptions json;
  json.format = ExportFormat::json;
  json.verdicts = {"passed"};
  ASSERT_TRUE(export_run(fx.db(), "v2", fx.dir() / "v2.json", json).ok());
  auto list = ojson::parse(test::read_text(fx.dir() / "v2.json"));
  ASSERT_TRUE(list.is_array());
  auto lines = read_jsonl(out);
  ASSERT_EQ(list.size(), lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(list[i], lines[i]);
  // An empty selection is still a valid, empty list.
  ExportOptions none;
  none.format = ExportFormat::json;
  none.verdicts = {"skipped"};
  ASSERT_TRUE(export_run(fx.db(), "v2", fx.dir() / "empty.json", none).ok());
  EXPECT_EQ(ojson::parse(test::read_text(fx.dir() / "empty.json")), ojson::array());

  EXPECT_EQ(parse_export_format("auto", "x.jsonl").value(), ExportFormat::jsonl);
  EXPECT_EQ(parse_export_format("auto", "x.json").value(), ExportFormat::json);
  EXPECT_FALSE(parse_export_format("xml", "x").ok());
  EXPECT_EQ(parse_export_format("auto", "-").value(), ExportFormat::json);
  EXPECT_EQ(parse_export_format("auto", "out").value(), ExportFormat::json);
  EXPECT_FALSE(parse_export_format("auto", "x.parquet").ok());
  EXPECT_FALSE(parse_export_format("jsonl", "x.parquet").ok());
  EXPECT_FALSE(parse_export_format("auto", "x.txt").ok());
  EXPECT_TRUE(parse_export_format("jsonl", "x.txt").ok());
}

TEST(ReportExport, AFailedExportLeavesTheOldFileAndNoTemporaries) {
  ReportFixture fx;
  auto out = fx.dir() / "out" / "v2.jsonl";
  std::filesystem::create_directory(fx.dir() / "out");
  test::write_text(out, "the previous export\n");
  // A record that already has a field the export would add: refused, naming sample and field.
  fx.exec("add_verdict_field", {"softmax.py"});
  auto r = export_run(fx.db(), "v2", out, ExportOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "conflict");
  EXPECT_NE(r.error().message.find("sample 'softmax.py'"), std::string::npos);
  EXPECT_NE(r.error().message.find("'verdict'"), std::string::npos);
  EXPECT_EQ(test::read_text(out), "the previous export\n");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(fx.dir() / "out")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";

  // Unknown tag, unknown verdict, a directory that does not exist.
  auto unknown = export_run(fx.db(), "v9", fx.dir() / "x.jsonl", ExportOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, "not_found");
  EXPECT_FALSE(std::filesystem::exists(fx.dir() / "x.jsonl"));
  ExportOptions bad;
  bad.verdicts = {"great"};
  auto b = export_run(fx.db(), "v1", fx.dir() / "x.jsonl", bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, "usage");
  auto nodir = export_run(fx.db(), "v1", fx.dir() / "no" / "such" / "x.jsonl", ExportOptions{});
  ASSERT_FALSE(nodir.ok());
  EXPECT_EQ(nodir.error().kind, "io");
  EXPECT_NE(nodir.error().message.find("no/such/x.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace kforge::report
