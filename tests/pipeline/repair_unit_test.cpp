// The repair stage's pieces: the shipped repair templates and evidence blocks, the evidence a
// stored verdict turns into, and the reading of a repair answer.

#include <gtest/gtest.h>

#include <filesystem>

#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/repair.hpp"
#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/speed.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path shipped() {
  return test::source_dir() / "prompts";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A stored report as the pool keeps it: the harness's required fields, then `fields`. Repair
// reads it through verify::parse_stored_report, so the test fails where it does not parse.
json stored(const json& fields) {
  json r = {{"harness", verify::harness_report_version()},
            {"pid", 1},
            {"verdict", "passed"},
            {"detail", "1 test passed"},
            {"phase", "done"}};
  for (const auto& [k, v] : fields.items()) r[k] = v;
  auto parsed = verify::parse_stored_report(r);
  EXPECT_TRUE(parsed.ok() && *parsed) << (parsed.ok() ? "no report" : parsed.error().message);
  return r;
}

TEST(RepairPrompts, ShippedVersionsHaveARepairTemplateRecordedOnlyForRunsWithRounds) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  for (const std::string v : {"v1", "v2"}) {
    const PipelineSpec* spec = *lib->pipeline(v);
    ASSERT_TRUE(spec->repair.has_value()) << v;
    const Template& r = *spec->repair;
    EXPECT_EQ(r.sha256, sha256_hex(test::read_text(shipped() / v / "repair.md")));
    for (const char* p : {"code", "kernel_wrapper", "unitest_code", "evidence", "round"})
      EXPECT_NE(std::find(r.placeholders.begin(), r.placeholders.end(), p), r.placeholders.end())
          << v << " repair.md lacks {{" << p << "}}";
    bool analysis =
        std::find(r.placeholders.begin(), r.placeholders.end(), "analysis") != r.placeholders.end();
    EXPECT_EQ(analysis, v == "v2");
    EXPECT_TRUE(r.schema["properties"].contains("unfixable"));
    EXPECT_EQ(spec->evidence.sha256, sha256_hex(test::read_text(shipped() / "evidence.md")));
    // Without rounds the repair template is not part of the run; with rounds it is.
    EXPECT_FALSE(spec->identities().contains("repair"));
    json ids = spec->identities(true);
    EXPECT_EQ(ids["repair"]["sha256"], r.sha256);
    EXPECT_EQ(ids["repair"]["evidence_sha256"], spec->evidence.sha256);
    EXPECT_EQ(spec->mismatch(ids), "");
    EXPECT_EQ(spec->mismatch(spec->identities()), "");
    json changed = ids;
    changed["repair"]["sha256"] = "00";
    EXPECT_TRUE(has(spec->mismatch(changed), "prompts/" + v + "/repair.md changed"));
    changed = ids;
    changed["repair"]["evidence_sha256"] = "00";
    EXPECT_EQ(spec->mismatch(changed), "prompts/evidence.md changed since the run was created");
  }
}

TEST(RepairPrompts, AMissingEvidenceBlockOrUnknownPlaceholderIsAnErrorNamingTheFile) {
  test::TempDir dir;
  fs::copy(shipped(), dir.path(), fs::copy_options::recursive);
  std::string text = test::read_text(shipped() / "evidence.md");
  std::string cut = text.substr(0, text.find("<!-- evidence: no_kernel_launch -->"));
  test::write_text(dir.path() / "evidence.md", cut);
  auto lib = PromptLibrary::load(dir.path());
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(has(lib.error().message, "evidence.md: no block 'no_kernel_launch'"))
      << lib.error().message;
  for (const char* flag : {"tampered", "unstable_test", "kernel_not_used"}) {
    std::string block = std::string("<!-- evidence: ") + flag + " -->";
    std::string left = text.substr(0, text.find(block));
    std::size_t next = text.find("<!-- evidence: ", text.find(block) + block.size());
    if (next != std::string::npos) left += text.substr(next);
    test::write_text(dir.path() / "evidence.md", left);
    lib = PromptLibrary::load(dir.path());
    ASSERT_FALSE(lib.ok()) << flag;
    EXPECT_TRUE(has(lib.error().message, std::string("no block '") + flag + "'"))
        << lib.error().message;
  }
  test::write_text(dir.path() / "evidence.md", text + "\n<!-- evidence: extra -->\n{{bogus}}\n");
  lib = PromptLibrary::load(dir.path());
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(has(lib.error().message, "unknown placeholder {{bogus}}")) << lib.error().message;
}

// A harness report of a failed test, as the verifier stores it.
VerdictEvidence failed_verdict() {
  VerdictEvidence v;
  v.verdict = "failed";
  v.detail = "test_copy: AssertionError: z differs from x for 16x16 (unitest_code line 8)";
  v.script =
      "# ---- kforge: preamble ----\nimport torch\n# ---- kforge: code ----\nK = 1\n"
      "# ---- kforge: kernel_wrapper ----\ndef copy(x):\n    return x\n"
      "# ---- kforge: unitest_code ----\nimport torch\n\ndef test_copy():\n    torch.manual_seed(0)"
      "\n    for m in (16,):\n        x = 1\n        z = copy(x)\n"
      "        assert torch.equal(z, x), \"z differs from x for 16x16\"\n";
  std::string tb;
  for (int i = 1; i <= 60; ++i) tb += "traceback line " + std::to_string(i) + "\n";
  v.report = stored(
      {{"sections",
        {{"preamble", {2, 2}},
         {"code", {4, 4}},
         {"kernel_wrapper", {6, 7}},
         {"unitest_code", {9, 16}}}},
       {"tests",
        json::array({{{"name", "test_copy"},
                      {"status", "failed"},
                      {"exception", "AssertionError"},
                      {"message", "z differs from x for 16x16"},
                      {"traceback", tb},
                      {"where",
                       {{"section", "unitest_code"}, {"line", 8}, {"function", "test_copy"}}}}})}});
  for (int i = 1; i <= 50; ++i) v.stderr_tail += "stderr line " + std::to_string(i) + "\n";
  return v;
}

TEST(RepairEvidence, AFailedTestGivesItsLineMessageAndCappedTails) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v2");
  auto text = render_evidence(spec->evidence, failed_verdict());
  ASSERT_TRUE(text.ok()) << text.error().message;
  const std::string& e = *text;
  EXPECT_TRUE(has(e, "Verdict: `failed`. test_copy: AssertionError: z differs")) << e;
  EXPECT_TRUE(has(e, "`test_copy`, at unitest_code line 8")) << e;
  // The line as it ran, taken from the script.
  EXPECT_TRUE(has(e, "assert torch.equal(z, x), \"z differs from x for 16x16\"")) << e;
  EXPECT_TRUE(has(e, "The exception: `AssertionError`")) << e;
  // Tails, capped: the last 25 lines of the traceback, the last 20 of stderr.
  EXPECT_TRUE(has(e, "traceback line 60")) << e;
  EXPECT_TRUE(has(e, "traceback line 36\n")) << e;
  EXPECT_FALSE(has(e, "traceback line 35\n")) << e;
  EXPECT_TRUE(has(e, "stderr line 50")) << e;
  EXPECT_TRUE(has(e, "stderr line 31\n")) << e;
  EXPECT_FALSE(has(e, "stderr line 30\n")) << e;
  EXPECT_FALSE(has(e, "kernels skipped")) << e;
  EXPECT_FALSE(has(e, "no kernel of the code was launched")) << e;
}

TEST(RepairEvidence, QualityFlagsAreSaidInPlainWords) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v1");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed";
  v.flags = {"mutant_survived"};
  v.stderr_tail = "a warning\n";
  v.report = stored({{"tests", json::array({{{"name", "test_add"}, {"status", "passed"}}})}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "Verdict: `passed`. 1 test passed")) << *text;
  EXPECT_TRUE(has(*text, "kernels skipped")) << *text;
  EXPECT_TRUE(has(*text, "So the test checks nothing that the kernel computes")) << *text;
  EXPECT_FALSE(has(*text, "a warning")) << "stderr of a passing run is noise";
  EXPECT_FALSE(has(*text, "The first failing test")) << *text;
  v.flags = {"no_kernel_launch"};
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(has(*text, "no kernel of the code was launched")) << *text;
  EXPECT_FALSE(has(*text, "checks nothing that the kernel computes")) << *text;
  // A timeout: no test report, the detail says it all.
  VerdictEvidence t;
  t.verdict = "timeout";
  t.detail = "no result within 120 s; the process group was killed";
  text = render_evidence(spec->evidence, t);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(has(*text, "Verdict: `timeout`. no result within 120 s")) << *text;
}

TEST(RepairEvidence, AWeakTestIsToldWhichMutantsItLetThrough) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v2");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; weak test: it still passes under the permute mutant";
  v.flags = {"weak_test"};
  v.report = stored({{"tests", json::array({{{"name", "test_add"}, {"status", "passed"}}})},
                     {"mutation",
                      {{"killed", 3},
                       {"applicable", 4},
                       {"survived", {"permute"}},
                       {"not_applicable", json::array()},
                       {"not_run", json::array()}}}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "- `permute`: the test still passes when the output's elements are reordered: "
                  "it compares sums, norms or sorted values, not the elements in place."))
      << *text;
  EXPECT_TRUE(has(*text, "So the test would pass a wrong kernel")) << *text;
  EXPECT_FALSE(has(*text, "kernels skipped")) << *text;
  // Two survivors (the battery stops at the first, but a stored score may name more): one line
  // each, in order.
  v.report["mutation"]["survived"] = {"tail", "scale"};
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(has(*text,
                  "- `tail`: the test still passes when the last element of each output is "
                  "far off: it never checks the tail.\n- `scale`:"))
      << *text;
}

TEST(RepairEvidence, WeakInputsNameTheSurvivingKernelMutantAndItsLine) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v2");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; weak inputs: ...";
  v.flags = {"weak_inputs", "constant_output"};
  v.report =
      stored({{"tests", json::array({{{"name", "test_rows"}, {"status", "passed"}}})},
              {"mutation",
               {{"killed", 6},
                {"applicable", 6},
                {"survived", json::array()},
                {"not_applicable", json::array()},
                {"not_run", json::array()},
                {"kernel",
                 {{"killed", 2},
                  {"applicable", 3},
                  {"equivalent", 1},
                  {"tried", 4},
                  {"survived", json::array({{{"mutant", "k3"},
                                             {"op", "mask_drop"},
                                             {"kernel", "rows_kernel"},
                                             {"section", "code"},
                                             {"section_line", 12},
                                             {"desc",
                                              "the mask of the tl.load `tl.load(x_ptr + cols)` is "
                                              "removed"},
                                             {"hint",
                                              "inputs whose size is a multiple of the block cannot "
                                              "tell them apart"}}})}}}}}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "- the test still passes when the mask of the tl.load `tl.load(x_ptr + cols)` "
                  "is removed (code line 12): inputs whose size is a multiple of the block "
                  "cannot tell them apart."))
      << *text;
  EXPECT_TRUE(has(*text, "Do not change the kernel:")) << *text;
  EXPECT_TRUE(has(*text, "Every output the kernel wrote had all its elements equal")) << *text;
  EXPECT_FALSE(has(*text, "So the test would pass a wrong kernel")) << *text;  // not weak_test
}

TEST(RepairEvidence, OutOfBoundsNamesTheKernelAndTheBufferOrTheFault) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v2");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; out of bounds: ...";
  v.flags = {"out_of_bounds"};
  v.report = stored({{"tests", json::array({{{"name", "test_copy"}, {"status", "passed"}}})},
                     {"bounds",
                      {{"out_of_bounds", true},
                       {"detail", "kernel copy_kernel writes outside out_ptr (launch 1)"}}}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "kernel copy_kernel writes outside out_ptr (launch 1)")) << *text;
  EXPECT_TRUE(has(*text, "mask every lane at or past the size")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;

  // A run that died of the fault: no replay, the fault is what the repair is told.
  v.verdict = "error";
  v.report = stored({{"bounds", {{"out_of_bounds", true}, {"fault", {{"in", "the run"}}}}}});
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "the run died of an illegal memory access")) << *text;
}

// A tampered sample is told what it replaced and in which run, from the real run's guard and the
// mutant runs' (the stored report's "integrity", "guard" and "mutant"), never in our internals'
// words; an unstable test is told which control run failed and how.
TEST(RepairEvidence, TamperedSaysWhatWasReplacedAndUnstableWhichControlFailed) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v1");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; tampered: ...";
  v.flags = {"tampered"};
  json replaced = json::array(
      {{{"what", "torch.testing.assert_close"}, {"how", "replaced"}, {"phase", "run"}}});
  v.report = stored(
      {{"tests", json::array({{{"name", "test_add"}, {"status", "passed"}}})},
       {"integrity",
        {{"armed", true},
         {"watched", 40},
         {"tampered", true},
         {"replaced", replaced},
         {"scans", json::array()}}},
       {"mutant",
        {{"integrity",
          {{"armed", true},
           {"watched", 40},
           {"tampered", true},
           {"replaced",
            json::array(
                {{{"what", "sys.settrace"}, {"how", "replaced"}, {"phase", "output_mutants"}}})},
           {"scans", json::array({{{"event", "sys._getframe"}, {"phase", "output_mutants"}}})}}},
         {"guard", json::array({"sys._getframe"})}}}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "- `torch.testing.assert_close` was replaced (in the real run)."))
      << *text;
  EXPECT_TRUE(has(*text, "- `sys.settrace` was replaced (in the output_mutants run).")) << *text;
  EXPECT_TRUE(has(*text, "- the code called `sys._getframe` (in the output_mutants run)."))
      << *text;
  EXPECT_TRUE(has(*text, "must not replace, patch or wrap library functions")) << *text;
  EXPECT_FALSE(has(*text, "control run")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;
  // Nothing recorded: the block still says what the flag means.
  v.report = json::object();
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "(what was changed was not recorded)")) << *text;

  v.flags = {"unstable_test"};
  v.detail = "1 test passed; unstable test: a control run of the unmutated sample failed";
  v.report = stored({{"mutant",
                      {{"controls",
                        {{"failed", true},
                         {"runs", json::array({{{"kind", "fresh"},
                                                {"at", "before skip_launch"},
                                                {"result", "passed"},
                                                {"duration_ms", 3}},
                                               {{"kind", "rerun"},
                                                {"at", "output mutant 3 of 7"},
                                                {"result", "failed"},
                                                {"duration_ms", 2},
                                                {"by", "test_add: AssertionError"}}})}}}}}});
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "- a `rerun` control run (the same tests again, output mutant 3 of 7): "
                  "failed, `test_add: AssertionError`."))
      << *text;
  EXPECT_FALSE(has(*text, "`fresh` control run")) << *text;
  EXPECT_TRUE(has(*text, "Make them repeatable")) << *text;
  EXPECT_FALSE(has(*text, "was replaced")) << *text;

  // Voided by the harness with no control failed (the kernel faulted in its bounds replay,
  // controls.void_reason): the evidence says that, not that a control run failed (issue 51).
  const std::string why =
      "the kernel died of an illegal memory access in its bounds replay, so where memory lies "
      "decides its runs and no mutant run's result counts";
  v.detail = "1 test passed; unstable test: " + why;
  v.report = stored({{"mutant",
                      {{"controls",
                        {{"failed", false},
                         {"void", true},
                         {"void_reason", why},
                         {"runs", json::array({{{"kind", "fresh"},
                                                {"at", "after the skip-launch run"},
                                                {"result", "passed"},
                                                {"duration_ms", 3}}})}}}}}});
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "No control run of the unmodified sample failed")) << *text;
  EXPECT_TRUE(has(*text, "\n" + why + "\n")) << *text;
  EXPECT_TRUE(has(*text, "bound every `tl.load` and `tl.store` with a mask")) << *text;
  EXPECT_FALSE(has(*text, "a run that should have passed failed")) << *text;
  EXPECT_FALSE(has(*text, "which control run failed was not recorded")) << *text;
  EXPECT_FALSE(has(*text, "Make them repeatable")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;

  // The mutant runs' process ended without their report twice (issue 52: report.mutant.lost): how
  // each attempt ended, not a failed control that never ran.
  v.detail =
      "1 test passed; unstable test: the process of its mutant runs ... ended without "
      "their report in each of its 2 attempts (the last: killed by SIGKILL (signal 9))";
  v.report =
      stored({{"mutant",
               {{"verdict", "crashed"},
                {"lost",
                 json::array({"exit code 0 without a report", "killed by SIGKILL (signal 9)"})}}}});
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "- exit code 0 without a report\n- killed by SIGKILL (signal 9)\n"))
      << *text;
  EXPECT_TRUE(has(*text, "do not exit,\nkill or signal the process")) << *text;
  EXPECT_FALSE(has(*text, "which control run failed was not recorded")) << *text;
  EXPECT_FALSE(has(*text, "No control run of the unmodified sample failed")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;
}

// A wrapper whose answer outside the test was the host's is told on which call and how much of
// the answer still agreed with the kernels' outputs replaced (the stored report's "origin").
TEST(RepairEvidence, KernelNotUsedSaysWhichCallAnsweredWithTheHostsResult) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v1");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; kernel not used: ...";
  v.flags = {"kernel_not_used"};
  auto check = [](const char* on, const char* result, json share) {
    return json{{"on", on}, {"result", result}, {"share", share}, {"elements", 200}, {"runs", 3}};
  };
  v.report = stored({{"origin",
                      {{"checked", json::array({check("inputs()", "kernel", 0.0),
                                                check("scaled by 1e3", "host", 0.75)})},
                       {"host", "scaled by 1e3"},
                       {"bound", 0.5},
                       {"ms", 12}}}});
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "on inputs() scaled by 1e3, 75% of the output's elements still agree"))
      << *text;
  EXPECT_TRUE(has(*text, "The wrapper must return what the kernel")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;
  // Nothing recorded: the block still says what the flag means.
  v.report = json::object();
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text, "(which call was not recorded)")) << *text;
}

TEST(RepairEvidence, ACrossCompileFailureCarriesEachRequiredTargetsCompilerError) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v1");
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = "1 test passed; does not compile for a required target: hip:gfx942: ...";
  v.flags = {"cross_compile_failed"};
  v.report = {{"harness", verify::harness_report_version()},
              {"pid", 1},
              {"verdict", "passed"},
              {"detail", "1 test passed"},
              {"phase", "done"},
              {"tests", json::array({{{"name", "test_add"}, {"status", "passed"}}})},
              {"cross_compile",
               {{"required", {"hip:gfx942"}},
                {"targets",
                 {{"hip:gfx942",
                   {{"result", "error"},
                    {"kernel", "add_kernel"},
                    {"stage", "ttgir"},
                    {"error", "ttgir: RuntimeError: num_warps * warp_size = 2048 threads"}}},
                  {"hip:gfx90a", {{"result", "error"}, {"error", "not required"}}},
                  {"hip:gfx1100", {{"result", "ok"}}}}}}}};
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "- `hip:gfx942`, kernel `add_kernel`:\n\n  ```\n  ttgir: RuntimeError: "
                  "num_warps * warp_size = 2048 threads\n  ```"))
      << *text;
  EXPECT_FALSE(has(*text, "not required")) << *text;  // only the targets the run requires
  EXPECT_TRUE(has(*text, "So the sample does not port")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;
  // Without the flag (a target compiled, or none required) the block is not used.
  v.flags.clear();
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(has(*text, "does not port")) << *text;
}

TEST(RepairEvidence, ADifferentialFailureNamesTheTransformAndWhatDiffered) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v3");
  VerdictEvidence v;
  v.verdict = "failed";
  v.detail =
      "differential: on inputs() scaled by 1e3, the wrapper disagrees with the declared "
      "reference (output 0 has 200 non-finite values where the reference's are finite)";
  v.report = {{"harness", verify::harness_report_version()},
              {"pid", 1},
              {"verdict", "failed"},
              {"detail", v.detail},
              {"phase", "done"},
              {"tests", json::array({{{"name", "test_softmax"}, {"status", "passed"}}})},
              {"differential",
               {{"transforms", json::array({{{"transform", "scaled by 1e3"},
                                             {"result", "differs"},
                                             {"detail",
                                              "output 0 has 200 non-finite values where the "
                                              "reference's are finite"}}})},
                {"failed", "scaled by 1e3"}}}};
  ASSERT_TRUE(verify::parse_stored_report(v.report).ok());  // a declared field of the report
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "- on the inputs of `inputs()` scaled by 1e3: output 0 has 200 "
                  "non-finite values where the reference's are finite"))
      << *text;
  EXPECT_TRUE(has(*text, "subtract the maximum before `exp`")) << *text;
  EXPECT_FALSE(has(*text, "{{")) << *text;
  // Agreement everywhere (no "failed"): the block is not used.
  v.report["differential"]["failed"] = nullptr;
  v.report["differential"]["transforms"][0]["result"] = "agrees";
  text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(has(*text, "transformed copies")) << *text;
}

// A run that requires a speedup: the slow sample's verdict detail carries its speed label, and
// the verdict block puts it in front of the model (prompts/evidence.md stays as it was).
TEST(RepairEvidence, ASlowSampleCarriesItsSpeedLabel) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const PipelineSpec* spec = *lib->pipeline("v3");
  verify::VerifyResult r;
  r.verdict = verify::Verdict::passed;
  r.detail = "1 test passed";
  r.report = {
      {"harness", verify::harness_report_version()},
      {"pid", 1},
      {"verdict", "passed"},
      {"detail", "1 test passed"},
      {"phase", "done"},
      {"tests", json::array({{{"name", "test_add"}, {"status", "passed"}}})},
      {"speed",
       {{"timed", true},
        {"kernels",
         json::array({{{"kernel", "add_kernel"}, {"time_us", 41.25}, {"fraction_of_peak", 0.61}}})},
        {"reference", {{"speedup", 0.82}, {"ci", {0.79, 0.85}}}},
        {"pass_perf", false},
        {"flags", json::array()}}}};
  auto parsed = verify::parse_stored_report(r.report);  // as the pool or a verdict line does
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  r.harness = *parsed;
  ASSERT_TRUE(verify::require_speedup(r, 1.5));
  VerdictEvidence v;
  v.verdict = "passed";
  v.detail = r.detail;
  v.flags = r.flags;
  v.report = r.report;
  auto text = render_evidence(spec->evidence, v);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(has(*text,
                  "slow: speedup 0.82x (95% interval 0.79-0.85) over the PyTorch reference, "
                  "required above 1.50x; kernel 41.2 us, 61% of peak bandwidth"))
      << *text;
}

TEST(RepairAnswer, UnfixableOrBothPiecesOfCode) {
  auto a = read_repair_answer({{"unfixable", "triton.ops was removed"}});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->unfixable);
  EXPECT_EQ(a->reason, "triton.ops was removed");
  a = read_repair_answer(
      {{"kernel_wrapper", "def f(): pass"}, {"unitest_code", "def test_f(): f()"}});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->unfixable);
  EXPECT_EQ(a->unitest_code, "def test_f(): f()");
  auto bad = read_repair_answer({{"kernel_wrapper", "def f(): pass"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, "parse");
  EXPECT_TRUE(has(bad.error().message, "neither \"unfixable\" nor both"));
}

}  // namespace
}  // namespace kforge::pipeline
