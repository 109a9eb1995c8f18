#pragma once
// What the verifier decides about one sample, and how a finished run becomes that decision.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/verify/harness_report.hpp"

namespace kforge::verify {

// The verdicts and flags are store's vocabularies (store/vocabulary.hpp: one table of names
// each, from kforge_harness/vocabulary/*.txt).
using store::Flag;

// The verdict's name ("passed"), from store::kVerdictNames.
const char* to_string(Verdict v);

// Quality flags on a passing sample: it is not counted as verified when it has any. Each name
// comes from store::kFlagNames.
inline constexpr const char* kNoKernelLaunch =
    store::flag_name(Flag::no_kernel_launch);  // no kernel of its code ran
inline constexpr const char* kMutantSurvived =
    store::flag_name(Flag::mutant_survived);  // passes with launches skipped
// Passes with the outputs of its launches made wrong by one of the output mutants (the detail
// and report["mutation"]["survived"] name them): the test would not catch a wrong kernel.
inline constexpr const char* kWeakTest = store::flag_name(Flag::weak_test);
// Passes with one of the kernels it launched made wrong (a kernel mutant the equivalence replay
// showed to compute something else: report["mutation"]["kernel"]["survived"] says which and
// where): the test's inputs cannot tell a wrong kernel from the right one.
inline constexpr const char* kWeakInputs = store::flag_name(Flag::weak_inputs);
// Every output of more than one element that its launches wrote had all its elements equal:
// the test cannot tell the right kernel from many wrong ones.
inline constexpr const char* kConstantOutput = store::flag_name(Flag::constant_output);
// A kernel it launched reads or writes outside its buffers: found by the guard-zone replay of a
// passing sample's launches (report["bounds"]), or the run died of an illegal memory access.
// Whether such a kernel faults depends on what lies next to its buffers, so the flag, not the
// verdict, is what stays the same however memory was laid out (docs/VERIFIER.md).
inline constexpr const char* kOutOfBounds = store::flag_name(Flag::out_of_bounds);
// The sample's code replaced a function a verdict or a time rests on (a comparison, a clock, a
// CUDA event, the import machinery, Triton's launch path, the verifier's own functions) or
// scanned the process for the verifier (gc.get_objects, sys._current_frames, a trace or audit
// hook): report["integrity"] and the pool's report["guard"] say what and in which run
// (docs/VERIFIER.md, "Trust model").
inline constexpr const char* kTampered = store::flag_name(Flag::tampered);
// A control run (the unmutated sample run again, at a random place among the mutant runs)
// failed: the test does not give the same answer twice, so no mutant run's failure is a kill
// (report["mutant"]["controls"]).
inline constexpr const char* kUnstableTest = store::flag_name(Flag::unstable_test);
// The wrapper launched its kernel, but the answer the verifier compared outside the test (the
// reference comparison on inputs(), a differential transform) still agreed with the declared
// reference when every output of its kernels was replaced right after the launch: the host
// computed it (report["origin"], docs/VERIFIER.md, "Where the answer came from").
inline constexpr const char* kKernelNotUsed = store::flag_name(Flag::kernel_not_used);
// Set when the verifier itself could not run the sample (sandbox set-up, no usable device, a
// report that does not match report_fields.txt): the verdict says nothing about the sample and
// the caller may retry.
inline constexpr const char* kInfrastructure = store::flag_name(Flag::infrastructure);
// Set when the sample needs what the verifier's Python lacks (torch, triton or numpy is not
// installed): the verdict stands, but says nothing about the sample, so it is not repaired.
inline constexpr const char* kEnvironment = store::flag_name(Flag::environment);

struct VerifyResult {
  std::string key;
  Verdict verdict = Verdict::error;
  std::string detail;  // one line: the assertion, exception, signal or deadline
  std::vector<std::string> flags;
  nlohmann::json report;  // the harness's report plus what the pool observed ("pool")
  // The harness's report, parsed (harness_report.hpp): what C++ reads of it. nullopt when the
  // harness wrote none (a deadline, a crash, a job the pool could not run).
  std::optional<HarnessReport> harness;
  std::string script;            // the exact script that ran (empty when none was assembled)
  std::string stdout_text;       // captured, capped (head and tail)
  std::string stderr_tail;       // the last lines of stderr
  std::int64_t duration_ms = 0;  // wall time of the sample's process(es)
  std::string device;
  // The caller cancelled the sample (Pool::cancel) before it ended: nothing was judged, and
  // nothing of it should be stored as a verdict; `detail` says why it was cancelled.
  bool cancelled = false;

  // passed, with no quality flag.
  bool verified() const { return verdict == Verdict::passed && flags.empty(); }
};

// Why the pool ended a run, if it did.
enum class KillReason { none, timeout, memory_rss, memory_cgroup, worker_lost, cancelled };

// Everything known about one finished run of the harness.
struct RunFacts {
  std::optional<HarnessReport> report;  // the harness's report, if it wrote a whole one
  // Why the report it wrote is not one (a field missing, unknown or of the wrong type, another
  // version: parse_harness_report's message); then the verdict is an infrastructure error.
  std::string report_error;
  KillReason killed = KillReason::none;
  int wait_status = -1;  // raw waitpid status; -1 unknown
  double timeout_s = 0;
  std::int64_t memory_cap_mb = 0;
  std::int64_t peak_rss_kb = 0;
  std::string stderr_tail;
  std::string lost;  // KillReason::worker_lost: why the pool took the worker for lost
};

struct Classified {
  Verdict verdict = Verdict::error;
  std::string detail;
  std::vector<std::string> flags;
};

// The verdict for a run (the mutant check is applied separately, by the pool).
Classified classify(const RunFacts& f);

// The output mutants, in the order the harness runs them (verifier.mutants picks among them).
inline constexpr std::array<std::string_view, 6> kOutputMutants = {
    "tail", "interior", "permute", "permute_row", "scale", "zero"};

// The kernel battery's part of the score (report["kernel_battery"], docs/VERIFIER.md "Kernel
// mutants"): mutants the test killed, those that applied (killed or survived), those the
// equivalence replay found to compute the same (not counted), and each survivor (mutant, op,
// kernel, section, section_line, desc, hint). ran: the battery ran at all.
struct KernelScore {
  bool ran = false;
  int killed = 0;
  int applicable = 0;
  int equivalent = 0;
  int tried = 0;  // every mutant it built, whatever the result
  std::vector<KernelSurvivor> survived;
  std::string stopped;
  nlohmann::json to_json() const;
};

// The mutant runs' part of a real run's result. The skip-launch run counts as one mutant
// ("skip_launch"): killed when the tests did not pass with the launches skipped, not counted
// when the verifier itself failed (infrastructure). Its report's "battery" (present when it was
// killed and output mutants were asked for) holds one entry per output mutant run: killed,
// survived, not_applicable (it changed no output) or error (not counted).
struct MutationScore {
  int killed = 0;
  int applicable = 0;
  std::vector<std::string> survived;        // in the order they ran
  std::vector<std::string> not_applicable;  // output mutants that changed nothing
  std::vector<std::string> not_run;         // after the first survivor, or a lost GPU context
  std::string stopped;                      // why the battery stopped early, if it did
  // Output mutants that survived only with one launch changed on its own: name -> launch.
  std::vector<std::pair<std::string, int>> per_launch;
  KernelScore kernel;
  nlohmann::json to_json() const;
};

// mutant_report: the skip-launch run's report (nullptr when it wrote none). Results the harness
// voided (report["controls"]["void"]: after a failed control, or when the real run's kernel died
// of an illegal memory access in its bounds replay, controls.void_reason) count for nothing, the
// skip-launch run's included; a void_reason is the score's `stopped`. foreign_memory: the real
// run is flagged out_of_bounds (its bounds replay found a read or write outside its buffers, or
// its kernel died of an illegal memory access): what every rerun computes then depends on memory
// the sample does not own, so no mutant run's kill or survival counts and the score says why.
MutationScore score_mutants(Verdict skip_verdict, bool skip_infrastructure,
                            const HarnessReport* mutant_report, bool foreign_memory = false);

// Records the score on the real run's result (report["mutation"]) and, when an output mutant
// survived, flags it kWeakTest and names the survivors in its detail; when a kernel mutant
// survived, flags it kWeakInputs and says which change, on which line, the test let through. The
// skip-launch mutant's own flag (kMutantSurvived) is set by the pool.
void apply_mutation_score(VerifyResult& primary, const MutationScore& score);

// What a sample's result pipe holds: its reports, one JSON object per line (the real run's,
// then the mutant runs' in the same process), and, between them, the guard's lines
// ({"guard": EVENT}) that the harness's audit hook writes the moment the sample's code scans
// the process for the verifier. Only complete lines count; a line that is not an object is
// skipped, and so is a timing sample's lend line ({"lend": "wait"|"back"}: the pool reads those
// as they come, docs/VERIFIER.md "Lent slots").
struct ResultLines {
  std::vector<nlohmann::json> reports;
  nlohmann::json guard = nlohmann::json::array();  // the events, in order
};
ResultLines split_result_lines(std::string_view result);

// Flags kTampered when a report of the sample's (the real run's or the mutant runs') says the
// guard found a replaced function or a scan for the verifier ("integrity": tampered), and
// names the first findings in the detail. Called for every report of the sample.
// guard: the pool's guard lines of the process that wrote the report (ResultLines::guard).
void apply_integrity(VerifyResult& r, const HarnessReport* report, const nlohmann::json& guard);

// Flags kUnstableTest when the harness voided the mutant runs' results ("controls": void): with
// the harness's void_reason in the detail when it gave one, else the failed control's failure;
// never with `foreign_memory` (score_mutants): whether a control of a kernel that reads out of
// bounds fails is where the allocator put the memory around its buffers, so it flags nothing
// (issue 52: flags that repeat). A void for want of GPU memory (controls.infrastructure) flags
// kInfrastructure instead, with the harness's reason: the sample is verified again.
void apply_controls(VerifyResult& primary, const HarnessReport* mutant_report,
                    bool foreign_memory = false);

// A passing sample whose mutant runs' process (skip-launch run, output and kernel mutant runs,
// controls) ended without their report in each of its `attempts` (it died, was killed or hung: the
// last one's `why`) is not verified without them (issue 52: a sample's code can end its own process
// when it is imported again). Flags kUnstableTest, or kInfrastructure when the last attempt failed
// for the verifier's reasons (`infrastructure`: a lost worker, a report it cannot read; the sample
// is verified again).
void apply_missing_mutant_runs(VerifyResult& primary, const std::string& why, bool infrastructure,
                               std::size_t attempts);

// The plain words for what a surviving mutant shows about a test (repair prompts, debug).
std::string mutant_meaning(std::string_view mutant);

// One surviving kernel mutant in plain words: "the test still passes when the mask of the
// tl.load `...` is removed (code line 12): inputs whose size is a multiple of the block cannot
// tell them apart".
std::string kernel_mutant_meaning(const KernelSurvivor& survivor);
// The same for a survivor as the stored mutation score holds it (report["mutation"]["kernel"]).
std::string kernel_mutant_meaning(const nlohmann::json& survivor);

// Flags a passing result kConstantOutput when its coverage facts say every output of more than
// one element was constant.
void apply_output_facts(VerifyResult& r);

// Flags a passing result kKernelNotUsed when the harness's origin check (report["origin"])
// found a call outside the test whose answer did not come from the kernel; the detail says
// which call and how much of its answer still agreed.
void apply_origin_facts(VerifyResult& r);
// What the detail and the repair evidence say of the origin check's finding ("on inputs()
// scaled by 1e3, 100% of the output's elements ..."); empty when it found none.
std::string origin_meaning(const HarnessReport& report);

// Flags kOutOfBounds (any verdict) when the harness's guard-zone replay found a launch reading
// or writing outside its buffers (report["bounds"]["out_of_bounds"]), or when an error or crash
// says the GPU met an illegal memory access (then report["bounds"] records that); the detail
// says which kernel and buffer, or the fault.
void apply_bounds_facts(VerifyResult& r);

// Flags kOutOfBounds when a control run of the unmutated sample (in the mutant runs' report)
// died of an illegal memory access: only the sample's own code ran there, so its kernel touched
// memory no allocation of its holds, which the bounds replay did not see this time (whether
// that faults depends on what lies next to its buffers). report["bounds"] records the fault as
// apply_bounds_facts does. Nothing when the sample is flagged out of bounds already.
void apply_control_faults(VerifyResult& primary, const HarnessReport* mutant_report);

// "SIGSEGV" for 11; "signal N" when unknown.
std::string signal_name(int sig);

// The last non-empty lines of text (at most max_lines lines and max_bytes bytes).
std::string last_lines(const std::string& text, std::size_t max_lines, std::size_t max_bytes);

}  // namespace kforge::verify
