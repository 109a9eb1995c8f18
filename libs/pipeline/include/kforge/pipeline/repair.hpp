#pragma once
// The repair stage's pieces that do not depend on the scheduler: the verifier's evidence as the
// repair prompt shows it, and the reading of a repair answer.
//
// After a verdict that is not verified, a job goes to stage 'repair' at the next round
// (store_job_verdict decides, within the run's repair_rounds). The scheduler renders
// prompts/<version>/repair.md with the code, the analysis (v2), the previous round's wrapper and
// test, and {{evidence}}: the blocks of prompts/evidence.md that apply to the stored verdict,
// filled from its row in `verifications`. The answer is either a corrected wrapper and test
// (verified again, as round N) or {"unfixable": reason}, which ends the sample.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/pipeline/prompt.hpp"

namespace kforge::pipeline {

// One stored verdict (a row of `verifications`), as far as the repair prompt uses it.
struct VerdictEvidence {
  std::string verdict;
  std::vector<std::string> flags;
  std::string detail;
  nlohmann::json report;  // result_json: the harness's report (null when none)
  std::string script;     // the script that ran (empty when none)
  std::string stderr_tail;
};

// How much of each piece of text the prompt carries (the ends are kept: the last lines of a
// traceback or of stderr, the first lines of a message).
struct EvidenceCaps {
  std::size_t message_lines = 20;
  std::size_t message_bytes = 1500;
  std::size_t traceback_lines = 25;
  std::size_t traceback_bytes = 3000;
  std::size_t stderr_lines = 20;
  std::size_t stderr_bytes = 2000;
};

// The evidence text: the blocks "verdict" (always), "failing_test", "message" and "traceback"
// (when the report names a failing test with them), "stderr" (when the verdict is not passed and
// stderr is not empty), "mutant_survived", "no_kernel_launch" and "weak_test" (by flag; its
// {{survivors}} says in plain words what each surviving output mutant shows), "weak_inputs"
// (by flag; {{kernel_mutants}} names each surviving kernel mutant, its line and what it says
// about the test's inputs), "constant_output" (by flag), "out_of_bounds" (by flag, on any
// verdict; {{bounds}} names the kernel and the buffer it reads or writes outside, or the
// fault), and "cross_compile_failed" (by flag; {{targets}} lists each required target that failed
// with its kernel and the compiler's stage and first lines), in that order. Error (kind "prompt"):
// a block uses a placeholder without a value.
Result<std::string> render_evidence(const EvidenceTemplate& t, const VerdictEvidence& v,
                                    const EvidenceCaps& caps = {});

struct RepairAnswer {
  bool unfixable = false;
  std::string reason;  // when unfixable
  std::string kernel_wrapper;
  std::string unitest_code;
};

// A parsed repair answer (already checked against repair.schema.json): {"unfixable": reason}, or
// both kernel_wrapper and unitest_code. Error (kind "parse"): neither.
Result<RepairAnswer> read_repair_answer(const nlohmann::json& parsed);

}  // namespace kforge::pipeline
