// kforge debug: a folder per sample with everything needed to read and re-run it by hand.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <set>

#include "fixture.hpp"
#include "kforge/report/debug.hpp"

namespace kforge::report {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using test::ReportFixture;

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(ReportDebug, FailedSampleFolderAndRunSh) {
  ReportFixture fx;
  auto dir = write_debug(fx.db(), "v1", "copy_transpose.py", fx.dir() / "dbg");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(*dir, fx.dir() / "dbg" / "copy_transpose.py");
  EXPECT_EQ(
      names_in(*dir),
      (std::set<std::string>{".kforge-debug", "README.txt", "record.json", "code.py",
                             "generate.prompt.md", "generate.request.json", "generate.response.txt",
                             "kernel_wrapper.py", "unitest_code.py", "script.py", "run.sh",
                             "verdict.json", "stderr.txt", "attempts.json"}));
  EXPECT_EQ(test::read_text(*dir / "code.py"),
            ojson::parse(test::read_text(*dir / "record.json"))["output"].get<std::string>());
  EXPECT_EQ(test::read_text(*dir / "kernel_wrapper.py"),
            "def copy(x):\n    return [row[:] for row in x]\n");
  std::string prompt = test::read_text(*dir / "generate.prompt.md");
  EXPECT_TRUE(contains(prompt, "## system\n\nYou are an expert in Triton GPU kernels."));
  EXPECT_TRUE(contains(prompt, "## user\n\nWrite a wrapper"));
  EXPECT_TRUE(contains(prompt, "def copy_kernel(X, Z, M, N"));
  EXPECT_TRUE(contains(test::read_text(*dir / "generate.response.txt"), "```json\n"));
  auto verdict = ojson::parse(test::read_text(*dir / "verdict.json"));
  EXPECT_EQ(verdict["verdict"], "failed");
  EXPECT_EQ(verdict["detail"], "AssertionError: Contiguous copy failed!");
  EXPECT_EQ(verdict["result"]["tests"][0]["name"], "test_copy_transpose");
  EXPECT_TRUE(contains(test::read_text(*dir / "stderr.txt"), "Contiguous copy failed!"));
  std::string readme = test::read_text(*dir / "README.txt");
  EXPECT_TRUE(contains(readme, "run      v1 (pipeline v1, model gpt-4o-mini)"));
  EXPECT_TRUE(contains(readme, "outcome  failed"));
  EXPECT_TRUE(contains(readme, "./run.sh"));

  // run.sh is executable and re-runs the stored script with python3: the same failure.
  struct stat st {};
  ASSERT_EQ(::stat((*dir / "run.sh").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
  auto r = test::run_process({(*dir / "run.sh").string()}, {}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "Z = [[1, 3], [2, 4]]")) << r.out;
  EXPECT_TRUE(contains(r.err, "AssertionError: Contiguous copy failed!")) << r.err;
}

TEST(ReportDebug, RunShRunsTheScriptWithTheVerifiersPythonAndPath) {
  // The verifier's Python (here a stand-in in a directory whose name needs quoting in sh) runs
  // the script, with verifier.python_path before the caller's PYTHONPATH; the README says which.
  ReportFixture fx;
  fs::path bin = fx.dir() / "it's a dir";
  fs::create_directories(bin);
  test::write_text(bin / "py", "#!/bin/sh\necho \"args $* path $PYTHONPATH\"\n");
  fs::permissions(bin / "py", fs::perms::owner_all);
  auto dir = write_debug(fx.db(), "v1", "copy_transpose.py", fx.dir() / "dbg",
                         {(bin / "py").string(), {"/opt/a b", "/opt/c"}});
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  auto r = test::run_process({(*dir / "run.sh").string(), "--flag"}, {"PYTHONPATH=/mine"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "args script.py --flag path /opt/a b:/opt/c:/mine\n");
  EXPECT_TRUE(contains(test::read_text(*dir / "README.txt"),
                       "./run.sh (" + (bin / "py").string() + " script.py)"));
  // No python_path and no PYTHONPATH of the caller's: none set.
  dir = write_debug(fx.db(), "v1", "copy_transpose.py", fx.dir() / "dbg",
                    {(bin / "py").string(), {}});
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  r = test::run_process({(*dir / "run.sh").string()}, {"PYTHONPATH="}, 60);
  EXPECT_EQ(r.out, "args script.py path \n") << r.err;
}

TEST(ReportDebug, TwoStageSampleHasItsAnalysis) {
  ReportFixture fx;
  auto dir = write_debug(fx.db(), "v2", "copy_transpose.py", fx.dir() / "dbg");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  auto names = names_in(*dir);
  for (const char* f : {"analyze.prompt.md", "analyze.request.json", "analyze.response.txt",
                        "analysis.json", "generate.prompt.md", "script.py", "run.sh"})
    EXPECT_TRUE(names.count(f)) << f;
  auto analysis = ojson::parse(test::read_text(*dir / "analysis.json"));
  EXPECT_EQ(analysis["functional_contract"], "Z == X.T");
  EXPECT_TRUE(contains(test::read_text(*dir / "analyze.prompt.md"), "Analyse this kernel"));
  // The script is the one stored: code, wrapper and test as the harness assembled them.
  std::string script = test::read_text(*dir / "script.py");
  EXPECT_TRUE(contains(script, "def copy_kernel("));
  EXPECT_TRUE(contains(script, "def test_copy_transpose():"));
  EXPECT_TRUE(contains(test::read_text(*dir / "README.txt"), "outcome  verified"));
}

TEST(ReportDebug, TheReadmeGivesTheMutationScoreAndTheSurvivors) {
  ReportFixture fx;
  fx.exec("set_mutation_report",
          {"copy_transpose.py",
           R"({"killed": 3, "applicable": 4, "survived": ["permute"], "not_applicable": ["scale"],
               "not_run": ["zero"]})"});
  auto dir = write_debug(fx.db(), "v2", "copy_transpose.py", fx.dir() / "dbg");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  std::string readme = test::read_text(*dir / "README.txt");
  EXPECT_TRUE(contains(
      readme, "mutants  killed 3 of 4 that apply; survived: permute; not applicable: scale\n"))
      << readme;
  EXPECT_FALSE(contains(readme, "kernel   ")) << readme;  // no kernel battery ran
  fx.exec("set_mutation_report", {"copy_transpose.py",
                                  R"({"killed": 6, "applicable": 6, "survived": [],
               "kernel": {"killed": 2, "applicable": 3, "equivalent": 1,
                          "survived": [{"mutant": "k2", "op": "index_swap",
                                        "kernel": "copy_kernel", "section": "code",
                                        "section_line": 9,
                                        "desc": "the index terms of `a` are swapped",
                                        "hint": "square inputs cannot tell them apart"}]}})"});
  dir = write_debug(fx.db(), "v2", "copy_transpose.py", fx.dir() / "dbg3");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  readme = test::read_text(*dir / "README.txt");
  EXPECT_TRUE(contains(readme,
                       "kernel   killed 2 of 3 that apply, 1 equivalent; survived: the "
                       "index terms of `a` are swapped (code line 9)\n"))
      << readme;
  // Without a mutation account (verified before the battery existed): no such line.
  auto plain = write_debug(fx.db(), "v2", "softmax.py", fx.dir() / "dbg2");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(contains(test::read_text(*plain / "README.txt"), "mutants  ")) << *plain;
}

TEST(ReportDebug, SampleThatNeverReachedTheVerifier) {
  ReportFixture fx;
  auto dir = write_debug(fx.db(), "v2", "garbled_output.py", fx.dir() / "dbg");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  auto names = names_in(*dir);
  EXPECT_FALSE(names.count("script.py"));
  EXPECT_FALSE(names.count("run.sh"));
  EXPECT_FALSE(names.count("analysis.json"));
  // The latest attempt's raw response and error.
  EXPECT_EQ(test::read_text(*dir / "analyze.response.txt"),
            "{\"analysis\": {\"core_function\": \"dropout with a philox seed, keeps");
  EXPECT_EQ(test::read_text(*dir / "analyze.error.txt"),
            "parse: unterminated string at line 1, column 62\n");
  auto attempts = ojson::parse(test::read_text(*dir / "attempts.json"));
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0]["error"], "no JSON object in the reply");
  std::string readme = test::read_text(*dir / "README.txt");
  EXPECT_TRUE(contains(readme, "outcome  parse_error"));
  EXPECT_TRUE(contains(readme, "never reached the verifier"));

  // A verdict from before a re-generation is shown, and marked as not applying.
  auto rg = write_debug(fx.db(), "v2", "retry_gen.py", fx.dir() / "dbg");
  ASSERT_TRUE(rg.ok()) << rg.error().message;
  readme = test::read_text(*rg / "README.txt");
  EXPECT_TRUE(contains(readme, "outcome  rejected"));
  EXPECT_TRUE(contains(readme, "does not apply to the current code"));
  EXPECT_EQ(ojson::parse(test::read_text(*rg / "attempts.json")).size(), 4u);
}

TEST(ReportDebug, EveryFailedSample) {
  ReportFixture fx;
  auto dirs = write_debug_failed(fx.db(), "v2", fx.dir() / "failed");
  ASSERT_TRUE(dirs.ok()) << dirs.error().message;
  // Finished and not verified in v2: garbled_output, layernorm, llvm_abort, no_launch, retry_gen,
  // wrong_launch (slow_pending is unfinished; the verified ones are left out).
  EXPECT_EQ(names_in(fx.dir() / "failed"),
            (std::set<std::string>{"garbled_output.py", "layernorm.py", "llvm_abort.py",
                                   "no_launch.py", "retry_gen.py", "wrong_launch.py"}));
  EXPECT_EQ(dirs->size(), 6u);
  EXPECT_TRUE(contains(test::read_text(fx.dir() / "failed" / "llvm_abort.py" / "stderr.txt"),
                       "LLVM ERROR: Cannot select"));
}

TEST(ReportDebug, ReplacesItsOwnFoldersOnlyAndNamesBadInput) {
  ReportFixture fx;
  auto out = fx.dir() / "dbg";
  ASSERT_TRUE(write_debug(fx.db(), "v1", "layernorm.py", out).ok());
  test::write_text(out / "layernorm.py" / "notes.txt", "mine");
  ASSERT_TRUE(write_debug(fx.db(), "v1", "layernorm.py", out).ok());  // replaced whole
  EXPECT_FALSE(fs::exists(out / "layernorm.py" / "notes.txt"));
  // A folder of the same name that kforge did not write is left alone.
  fs::create_directories(out / "softmax.py");
  test::write_text(out / "softmax.py" / "precious.txt", "keep");
  auto c = write_debug(fx.db(), "v1", "softmax.py", out);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, "conflict");
  EXPECT_EQ(test::read_text(out / "softmax.py" / "precious.txt"), "keep");
  // No temporary folders are left behind.
  for (const auto& n : names_in(out)) EXPECT_NE(n[0], '.') << n;

  auto missing = write_debug(fx.db(), "v1", "nope.py", out);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, "not_found");
  EXPECT_TRUE(contains(missing.error().message, "no sample with key 'nope.py'"));
  auto other = write_debug(fx.db(), "v2", "v1_only.py", out);
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(contains(other.error().message, "sample 'v1_only.py' is not in run 'v2'"));
  auto tag = write_debug(fx.db(), "v7", "softmax.py", out);
  ASSERT_FALSE(tag.ok());
  EXPECT_EQ(tag.error().kind, "not_found");
}

}  // namespace
}  // namespace kforge::report
