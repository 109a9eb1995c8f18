// kforge verify FILE, the real binary over a JSON Lines file built from the sample directories.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "kforge/verify/store.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

// One record of a `kforge verify` input file: a test sample's three fields under `file`.
std::string sample_line(const std::string& file, const verify::VerifyRequest& r) {
  return nlohmann::json{{"file", file},
                        {"code", *r.code},
                        {"kernel_wrapper", *r.kernel_wrapper},
                        {"unitest_code", *r.unitest_code}}
             .dump() +
         "\n";
}

// A kforge.yaml in `tmp` whose verifier runs samples on the CPU with the stand-in for Triton,
// plus `extra` lines of the verifier: section.
std::filesystem::path fake_triton_config(const TempDir& tmp, const std::string& extra = "") {
  auto config = tmp / "kforge.yaml";
  write_text(config, "verifier:\n  devices: [cpu]\n  python: " + sandbox_python() +
                         "\n  python_path: [" +
                         (source_dir() / "tests" / "verify" / "fake_triton").string() +
                         "]\n  preload: [triton]\n  work_dir: " + (tmp / "work").string() +
                         "\n  memory_cap_mb: 300\n  max_processes: 32\n" + extra);
  return config;
}

TEST(VerifyCli, VerifiesAJsonLinesFile) {
  TempDir tmp;
  auto input = tmp / "generated.jsonl";
  {
    std::ofstream out(input);
    for (const char* name :
         {"pass", "assert_fail", "segfault", "triton_vacuous", "triton_vector_add"}) {
      auto r = load_sample(name);
      out << sample_line(name, r);
    }
    out << nlohmann::json{{"file", "half"}, {"code", "x = 1"}}.dump() << "\n";
    out << nlohmann::json{{"file", "beyond the limit"}}.dump() << "\n";
  }
  auto config = fake_triton_config(tmp);
  auto out_json = tmp / "verdicts.jsonl";
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string(), "--limit", "6", "--workers", "2", "--timeout",
                        "20", "--json", out_json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("6 records, 5 run through the verifier in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 1 skipped (a field missing), not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("passed   3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed   1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crashed  1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped  1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("flagged mutant_survived: 1"), std::string::npos) << r.out;
  // "pass" defines no Triton kernel: it passes, flagged, and does not count as verified.
  EXPECT_NE(r.out.find("flagged no_kernel_launch: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified (passed, no flag): 1"), std::string::npos) << r.out;
  std::istringstream lines(read_text(out_json));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i]["index"], i);
  EXPECT_EQ(rows[0]["key"], "pass");
  EXPECT_EQ(rows[0]["verdict"], "passed");
  EXPECT_EQ(rows[0]["flags"], nlohmann::json::array({"no_kernel_launch"}));
  EXPECT_EQ(rows[2]["verdict"], "crashed");
  EXPECT_EQ(rows[3]["flags"], nlohmann::json::array({"mutant_survived"}));
  EXPECT_EQ(rows[4]["verdict"], "passed");
  EXPECT_EQ(rows[4]["flags"], nlohmann::json::array());
  EXPECT_EQ(rows[5]["verdict"], "skipped");
  EXPECT_EQ(rows[5]["detail"], "missing field(s): kernel_wrapper, unitest_code");
  // Per-sample figures, and the slowest samples listed.
  EXPECT_GE(rows[0]["duration_ms"].get<std::int64_t>(), 0);
  EXPECT_GE(rows[0]["cpu_ms"].get<std::int64_t>(), 0);
  EXPECT_EQ(rows[0]["device"], "cpu");
  EXPECT_TRUE(rows[0]["phases"].contains("import")) << rows[0].dump();
  EXPECT_TRUE(rows[3]["phases"].contains("mutant")) << rows[3].dump();
  EXPECT_TRUE(rows[0]["autotune"].is_array());
  // Each harness phase's wall and CPU time, both processes' (docs/VERIFIER.md, "Phases").
  for (const char* p : {"prepare", "test", "skip_launch"})
    EXPECT_TRUE(rows[3]["phase_times"].contains(p)) << p << ": " << rows[3].dump();
  EXPECT_GE(rows[3]["phase_times"]["test"]["cpu_ms"].get<std::int64_t>(), 0);
  EXPECT_NE(r.out.find("slowest samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phases (wall/cpu ms): prepare "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workers: 2 in all"), std::string::npos) << r.out;
}

TEST(VerifyCli, CrossCompileTargetsFromTheCommandLineAreInTheJsonAndTheSummary) {
  TempDir tmp;
  auto input = tmp / "generated.jsonl";
  {
    std::ofstream out(input);
    for (const char* name : {"triton_vector_add", "cross_inline_ptx", "assert_fail"}) {
      auto r = load_sample(name);
      out << sample_line(name, r);
    }
  }
  auto config = fake_triton_config(tmp, "  cross_compile: [hip:gfx90a]\n");
  auto out_json = tmp / "verdicts.jsonl";
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string(), "--workers", "2", "--timeout", "20",
                        "--cross-compile", "hip:gfx942", "--json", out_json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cross-compile hip:gfx942 (compiled, not run): error 1, not_run 1, ok 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cross-compile hip:gfx90a (compiled, not run): error 1, not_run 1, ok 1"),
            std::string::npos)
      << r.out;
  std::istringstream lines(read_text(out_json));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["cross_compile"], nlohmann::json({{"hip:gfx90a", "ok"}, {"hip:gfx942", "ok"}}));
  EXPECT_FALSE(rows[0].contains("cross_compile_errors"));
  EXPECT_EQ(rows[1]["cross_compile"]["hip:gfx942"], "error");
  EXPECT_EQ(rows[1]["cross_compile_errors"]["hip:gfx942"].get<std::string>().rfind(
                "amdgcn: RuntimeError: <inline asm>", 0),
            0u)
      << rows[1].dump();
  // Failed: not cross-compiled, and said so.
  EXPECT_EQ(rows[2]["cross_compile"],
            nlohmann::json({{"hip:gfx90a", "not_run"}, {"hip:gfx942", "not_run"}}));
  // The summary the TritonBench-G report prints (bench/verify/cross_compile_summary.py).
  auto sum = run_process({sandbox_python(),
                          (source_dir() / "bench/verify/cross_compile_summary.py").string(),
                          out_json.string(), "--markdown"});
  ASSERT_EQ(sum.exit_code, 0) << sum.err;
  EXPECT_NE(sum.out.find("3 samples, 2 passed on the GPU"), std::string::npos) << sum.out;
  EXPECT_NE(sum.out.find("hip:gfx942: 1 of 2 compile (50.0%)"), std::string::npos) << sum.out;
  EXPECT_NE(sum.out.find("| 1 | `amdgcn: RuntimeError: <inline asm>:N:N: error: invalid "
                         "instruction` | cross_inline_ptx |"),
            std::string::npos)
      << sum.out;

  // A bad target is refused before anything runs, naming the flag.
  r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(), "verify",
                   input.string(), "--cross-compile", "hip:gfx942,cuda:sm90"});
  EXPECT_EQ(r.exit_code, 2);  // bad usage
  EXPECT_NE(r.err.find("--cross-compile: 'cuda:sm90': backend 'cuda' is not one of: hip"),
            std::string::npos)
      << r.err;
  // So is one shaped like a target that Triton cannot name, with the forms accepted.
  r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(), "verify",
                   input.string(), "--cross-compile", "hip:gfx9999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--cross-compile: 'hip:gfx9999': 'gfx9999' is not an AMD architecture "
                       "Triton compiles for; accepted: hip:gfx908, hip:gfx90a,"),
            std::string::npos)
      << r.err;
}

// --skip-file: records listed there are withdrawn. One listed before the run never starts; one
// listed while it runs (its test sleeps an hour, --timeout 600) is stopped. Neither gets a line,
// the others are verified and written in record order, and the command ends without waiting out
// the hung record.
TEST(VerifyCli, RecordsListedInTheSkipFileAreWithdrawn) {
  TempDir tmp;
  auto input = tmp / "generated.jsonl";
  auto add = load_sample("triton_vector_add");
  auto hang = add;
  *hang.unitest_code += "\n\ndef test_hangs():\n    import time\n    time.sleep(3600)\n";
  {
    std::ofstream out(input);
    out << sample_line("first", add) << sample_line("listed", add) << sample_line("hangs", hang)
        << sample_line("last", add);
  }
  auto config = fake_triton_config(tmp);
  auto skip = tmp / "skip.txt";
  write_text(skip, "1\n");
  auto out_json = tmp / "verdicts.jsonl";
  // One worker, records in file order (by predicted cost "hangs", the longer test, would go
  // first): "hangs" runs after "first" (whose line comes first) and holds the slot.
  std::thread lister([&] {
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(20)))
      if (std::filesystem::exists(out_json) &&
          read_text(out_json).find("\"first\"") != std::string::npos)
        break;
    write_text(skip, "1\n2\nnot an index\n");
  });
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string(), "--workers", "1", "--timeout", "600", "--json",
                        out_json.string(), "--skip-file", skip.string(), "--order", "input"},
                       {}, 300);
  lister.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 records, 2 run through the verifier in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 2 withdrawn (listed in the skip file): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("passed   2"), std::string::npos) << r.out;
  std::istringstream lines(read_text(out_json));
  std::vector<std::string> keys;
  for (std::string line; std::getline(lines, line);) {
    auto row = nlohmann::json::parse(line);
    keys.push_back(row["key"].get<std::string>() + "|" + row["verdict"].get<std::string>());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"first|passed", "last|passed"}));
}

// Nothing passed (every record skipped): the summary still has the cross-compile line and each
// record its cross_compile value, not_run; the records are counted as skipped, not verified.
TEST(VerifyCli, CrossCompileSaysNotRunWhenNothingPassed) {
  TempDir tmp;
  auto input = tmp / "export.jsonl";
  {
    std::ofstream out(input);
    for (int i = 0; i < 3; ++i)
      out << nlohmann::json{{"file", "k" + std::to_string(i)}, {"output", "x = 1"}}.dump() << "\n";
  }
  auto config = tmp / "kforge.yaml";
  write_text(config, "verifier:\n  devices: [cpu]\n  python: " + sandbox_python() +
                         "\n  work_dir: " + (tmp / "work").string() + "\n");
  auto out_json = tmp / "verdicts.jsonl";
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string(), "--workers", "1", "--cross-compile", "hip:gfx942",
                        "--json", out_json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 records, 0 run through the verifier in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 3 skipped (a field missing), not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cross-compile hip:gfx942 (compiled, not run): not_run 3"),
            std::string::npos)
      << r.out;
  std::istringstream lines(read_text(out_json));
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n)
    EXPECT_EQ(nlohmann::json::parse(line)["cross_compile"],
              nlohmann::json({{"hip:gfx942", "not_run"}}))
        << line;
  EXPECT_EQ(n, 3);
}

TEST(VerifyCli, ANulByteInTheCodeIsAnInvalidVerdictWithItsReason) {
  TempDir tmp;
  auto input = tmp / "nul.jsonl";
  {
    std::ofstream out(input);
    auto r = load_sample("pass");
    auto nul = r;
    nul.code = *r.code + std::string("\n# a NUL: \0 here\n", 17);
    out << sample_line("nul_code", nul);
    auto nul_test = r;
    nul_test.unitest_code = std::string("\0", 1) + *r.unitest_code;
    out << sample_line("nul_test", nul_test);
    out << sample_line("pass", r);
  }
  auto config = fake_triton_config(tmp);
  auto out_json = tmp / "verdicts.jsonl";
  auto r = run_process(
      {binary("apps/kforge/kforge").string(), "--config", config.string(), "verify", input.string(),
       "--workers", "1", "--timeout", "20", "--json", out_json.string()},
      {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::istringstream lines(read_text(out_json));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["verdict"], "invalid");
  EXPECT_EQ(rows[0]["detail"], "code contains a NUL byte at offset " +
                                   std::to_string(load_sample("pass").code->size() + 10) +
                                   ": Python cannot compile source code with null bytes");
  EXPECT_EQ(rows[1]["verdict"], "invalid");
  EXPECT_NE(
      rows[1]["detail"].get<std::string>().find("unitest_code contains a NUL byte at offset 0"),
      std::string::npos)
      << rows[1].dump();
  EXPECT_EQ(rows[2]["verdict"], "passed");
  EXPECT_NE(r.out.find("invalid  2"), std::string::npos) << r.out;
}

// --order cost dispatches the longest predicted record first; the summary lines stay in record
// order. One worker, so --full's lines (written as records finish) show the order the worker took
// them; the default (verifier.order: input) keeps the file's; --plan prints the order and the
// predicted costs and runs nothing.
TEST(VerifyCli, RecordsRunLongestPredictedFirstAndLinesStayInRecordOrder) {
  TempDir tmp;
  auto input = tmp / "costed.jsonl";
  const std::vector<int> dots = {0, 4, 1, 9};  // tl.dot calls in a comment: a higher prediction
  {
    std::ofstream out(input);
    for (int d : dots) {
      auto r = load_sample("pass");
      for (int i = 0; i < d; ++i) *r.code += "\n# tl.dot(a, b)";
      *r.code += "\n";
      out << sample_line("k" + std::to_string(d), r);
    }
  }
  auto config = fake_triton_config(tmp);
  auto keys_of = [](const std::string& text) {
    std::istringstream lines(text);
    std::vector<std::string> keys;
    for (std::string line; std::getline(lines, line);)
      keys.push_back(nlohmann::json::parse(line)["key"].get<std::string>());
    return keys;
  };
  auto verify = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {binary("apps/kforge/kforge").string(),
                                     "--config",
                                     config.string(),
                                     "verify",
                                     input.string(),
                                     "--workers",
                                     "1",
                                     "--timeout",
                                     "60"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, 240);
  };
  const std::vector<std::string> by_cost = {"k9", "k4", "k1", "k0"};
  const std::vector<std::string> by_record = {"k0", "k4", "k1", "k9"};

  auto plan = verify({"--plan", "--order", "cost"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_EQ(keys_of(plan.out), by_cost) << plan.out;
  std::istringstream plan_lines(plan.out);
  double last = 1e9;
  for (std::string line; std::getline(plan_lines, line);) {
    auto row = nlohmann::json::parse(line);
    EXPECT_LT(row["cost_s"].get<double>(), last) << line;
    last = row["cost_s"].get<double>();
    EXPECT_EQ("k" + std::to_string(row["features"]["dots"].get<int>()), row["key"]) << line;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "work")) << "--plan started the verifier";

  auto summary = tmp / "summary.jsonl";
  auto r = verify({"--json", summary.string(), "--order", "cost"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(keys_of(read_text(summary)), by_record);
  auto full = tmp / "full.jsonl";
  r = verify({"--json", full.string(), "--full", "--order", "cost"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(keys_of(read_text(full)), by_cost);
  r = verify({"--json", full.string(), "--full"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(keys_of(read_text(full)), by_record);
  // The verdicts do not depend on the order.
  std::istringstream lines(read_text(summary));
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(nlohmann::json::parse(line)["verdict"], "passed") << line;
}

// --order early_long: the record predicted to outlast a share of the run per worker (r9, 400
// tl.dot calls in a comment) goes first and is marked long in --plan; the others keep their
// record order, r3 too (2 tl.dot calls: costlier than the rest, not long). One worker, so
// --full's lines show the order the worker took them. A wrong name is a usage error that lists
// the right ones.
TEST(VerifyCli, EarlyLongRunsTheLongRecordFirstAndTheRestInRecordOrder) {
  TempDir tmp;
  auto input = tmp / "costed.jsonl";
  std::vector<std::string> in_record_order;
  {
    std::ofstream out(input);
    for (int k = 0; k < 10; ++k) {
      auto r = load_sample("pass");
      int dots = k == 3 ? 2 : k == 9 ? 400 : 0;
      for (int i = 0; i < dots; ++i) *r.code += "\n# tl.dot(a, b)";
      *r.code += "\n";
      in_record_order.push_back("r" + std::to_string(k));
      out << sample_line(in_record_order.back(), r);
    }
  }
  auto config = fake_triton_config(tmp);
  auto verify = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {binary("apps/kforge/kforge").string(),
                                     "--config",
                                     config.string(),
                                     "verify",
                                     input.string(),
                                     "--timeout",
                                     "60"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, 240);
  };
  auto rows_of = [](const std::string& text) {
    std::istringstream lines(text);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
    return rows;
  };
  auto keys_of = [&](const std::string& text) {
    std::vector<std::string> keys;
    for (const auto& row : rows_of(text)) keys.push_back(row["key"].get<std::string>());
    return keys;
  };
  std::vector<std::string> early = {"r9"};
  early.insert(early.end(), in_record_order.begin(), in_record_order.end() - 1);

  auto plan = verify({"--plan", "--order", "early_long", "--workers", "1"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_EQ(keys_of(plan.out), early) << plan.out;
  for (const auto& row : rows_of(plan.out))
    EXPECT_EQ(row["long"].get<bool>(), row["key"] == "r9") << row.dump();
  EXPECT_NE(plan.err.find("plan: order early_long, workers 1, predicted "), std::string::npos)
      << plan.err;
  EXPECT_NE(plan.err.find("; long: 1 (predicted over "), std::string::npos) << plan.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "work")) << "--plan started the verifier";
  // By cost r3 comes second; --plan's lines say nothing of long there.
  auto by_cost = verify({"--plan", "--order", "cost", "--workers", "1"});
  ASSERT_EQ(by_cost.exit_code, 0) << by_cost.err;
  ASSERT_EQ(keys_of(by_cost.out).size(), 10u);
  EXPECT_EQ(keys_of(by_cost.out)[1], "r3") << by_cost.out;
  EXPECT_FALSE(rows_of(by_cost.out)[0].contains("long")) << by_cost.out;
  // Planned again, the same order.
  EXPECT_EQ(verify({"--plan", "--order", "early_long", "--workers", "1"}).out, plan.out);

  auto full = tmp / "full.jsonl";
  auto r = verify({"--json", full.string(), "--full", "--order", "early_long", "--workers", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(keys_of(read_text(full)), early);
  for (const auto& row : rows_of(read_text(full))) EXPECT_EQ(row["verdict"], "passed") << row;

  auto bad = verify({"--plan", "--order", "early-long"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE((bad.out + bad.err).find("early_long"), std::string::npos) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("--order"), std::string::npos) << bad.out << bad.err;
}

TEST(VerifyCli, BadInputIsAClearError) {
  TempDir tmp;
  auto input = tmp / "broken.json";
  write_text(input, "[{\"code\": \"x\"},\n 42]");
  auto config = tmp / "kforge.yaml";
  write_text(config, "verifier:\n  devices: [cpu]\n  python: " + sandbox_python() +
                         "\n  work_dir: " + (tmp / "work").string() + "\n");
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("record 1 (line 2): not a JSON object"), std::string::npos) << r.err;
}

TEST(VerifyCli, StatusShowsADeviceOutOfRotation) {
  TempDir tmp;
  auto db_path = tmp / "k.db";
  {
    auto db = store::Db::open({db_path.string()});
    ASSERT_TRUE(db.ok()) << db.error().message;
    std::vector<verify::DeviceStatus> devs = {
        {"cuda:0", true, 4, 4, 0, ""}, {"cuda:1", false, 4, 0, 3, "GPU probe failed: Xid 79"}};
    ASSERT_TRUE(verify::store_device_status(**db, devs, 1700000000000).ok());
  }
  auto r = run_process({binary("apps/kforge/kforge").string(), "status"},
                       {"KFORGE_DB=" + db_path.string(), "KFORGE_CONFIG=/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("ALERT      verifier device cuda:1 out of rotation (3 failed worker starts): "
                 "GPU probe failed: Xid 79"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("cuda:0"), std::string::npos);
}

// Two (fake) GPUs of which the second is broken (a fake torch whose CUDA is unavailable there):
// the run finishes on the other, and `kforge status` shows the alert that
// `kforge verify --record-devices` stored.
TEST(VerifyCli, ABrokenGpuLeavesTheRotationAndStatusShowsIt) {
  TempDir tmp;
  auto input = tmp / "samples.jsonl";
  {
    std::ofstream out(input);
    auto r = load_sample("pass");
    for (int i = 0; i < 6; ++i) out << sample_line("pass-" + std::to_string(i), r);
  }
  auto db_path = tmp / "k.db";
  auto config = tmp / "kforge.yaml";
  write_text(config, "store:\n  path: " + db_path.string() +
                         "\nverifier:\n  devices: [cuda:0, cuda:1]\n  workers_per_device: 1\n"
                         "  preload: [torch]\n  python_path: [" +
                         (source_dir() / "tests" / "verify" / "fake_gpu_second_broken").string() +
                         "]\n  python: " + sandbox_python() +
                         "\n  work_dir: " + (tmp / "work").string() +
                         "\n  max_start_failures: 1\n  memory_cap_mb: 300\n  max_processes: 32\n");
  auto out_json = tmp / "verdicts.jsonl";
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", config.string(),
                        "verify", input.string(), "--timeout", "20", "--json", out_json.string(),
                        "--record-devices"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed   6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ALERT: cuda:1 out of rotation: GPU probe failed"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("is_available() is False"), std::string::npos) << r.out;
  auto st =
      run_process({binary("apps/kforge/kforge").string(), "--config", config.string(), "status"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("ALERT      verifier device cuda:1 out of rotation"), std::string::npos)
      << st.out;
}

}  // namespace
}  // namespace kforge::test
