#pragma once
// The harness's report, parsed once. The report's fields are declared in one file,
// kforge_harness/report_fields.txt (its path, type, whether it is always there, and the phase
// that writes it), which the harness checks each report against before writing it and which the
// pool compiles in. parse_harness_report() checks a report against the same file and fails
// closed: a field missing, unknown or of the wrong type, or a report of another version, is an
// error naming the field (the pool turns it into an `error` verdict, as VerdictLine does for its
// lines). Every C++ read of a report field goes through the HarnessReport it returns; nothing
// else reads the report's JSON with a default. Adding a field: its line in report_fields.txt
// (and the version up by one), the harness writing it, and here, if C++ reads it, a member and
// its line in harness_report.cpp (docs/VERIFIER.md, "The report").

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/store/vocabulary.hpp"

namespace kforge::verify {

using store::Verdict;

// The version of the report this kforge reads (report_fields.txt's `version` line); the pool
// sends it with each request, and the harness refuses a request of another version.
int harness_report_version();

// The speed label (verifier.timing; docs/VERIFIER.md, "The speed label"): what the harness
// measured of a passing sample (report["speed"]), read into one summary.
struct SpeedLabel {
  bool timed = false;
  std::string reason;  // why not timed
  std::string device;
  std::optional<double> kernel_us;  // the sum of the timed kernels' medians
  // That sum without the fallback to the wrapper's time (none when no kernel was timed alone),
  // and the timed wrapper call's median (report["speed"]["reference"]["time_us"]).
  std::optional<double> kernels_sum_us, wrapper_us;
  std::optional<double> gbps, fraction_of_peak;
  std::optional<double> speedup, speedup_lo, speedup_hi, reference_us;
  std::optional<double> min_speedup;
  std::optional<bool> pass_perf;
  std::vector<std::string> flags;
  std::optional<std::int64_t> exclusive_ms;
  // The share of the timed wrapper call's GPU time spent in the sample's own Triton launches,
  // the sample's launches in one call, and the bound below which the label flags library_work.
  std::optional<double> kernel_share, min_kernel_share;
  std::optional<std::int64_t> launches_per_call;
  // Where the label flags library_work or kernel_not_timed: the GPU kernels a call ran besides
  // the sample's, the longest first (name, microseconds; empty where the profiler cannot run).
  std::vector<std::pair<std::string, double>> ran_instead;
  // The timing's own GPU memory per byte of the inputs it timed, and those bytes.
  std::optional<double> memory_per_input_byte;
  std::optional<std::int64_t> input_bytes;
  // report["speed"] as the harness wrote it (verify's store keeps it: verifications.speed_json).
  nlohmann::json raw;
  // {"timed", "kernel_us", "gbps", "fraction_of_peak", "speedup", "speedup_ci", "pass_perf",
  // "flags", ...}: for `kforge verify --json`, export and debug.
  nlohmann::json to_json() const;
};

// One cross-compile target's result as the harness reported it: ok, error (with the stage and
// the compiler's first lines), unavailable (this Triton has no backend for it; the sample is not
// failed) or not_run (no launch of the sample's kernels was captured).
struct TargetResult {
  std::string target;
  store::TargetResultKind result = store::TargetResultKind::error;
  std::string error;   // "stage: Type: first lines" for an error, the reason otherwise
  std::string kernel;  // the first kernel that failed
};

// A kernel mutant the test let through (report["kernel_battery"]["survived"]): which mutant,
// its operator, kernel and place, and the change in words.
struct KernelSurvivor {
  std::string mutant, op, kernel;
  std::optional<std::string> section;
  std::optional<std::int64_t> section_line;
  std::string desc, hint;
  nlohmann::json to_json() const;
  // One read from the stored mutation score (report["mutation"]["kernel"]["survived"], which
  // to_json wrote); nullopt for anything else.
  static std::optional<KernelSurvivor> from_json(const nlohmann::json& j);
};

// What Triton's compile() (or the launcher builds) cost in the run.
struct CompileCost {
  std::int64_t count = 0, ms = 0;
  std::optional<std::int64_t> cpu_ms, child_cpu_ms;
};

struct HarnessReport {
  struct Test {
    std::string name, status;
    std::optional<std::int64_t> duration_ms;
    bool ran_at_import = false;
    // A test that did not pass: its exception, message and traceback, and where in the script
    // it failed (a section and its line; tests[].where).
    std::optional<std::string> exception, message, traceback;
    std::optional<std::string> where_section;
    std::optional<std::int64_t> where_line;
  };
  struct Triton {
    std::vector<std::string> kernels;
    std::vector<std::pair<std::string, std::int64_t>> launches;  // kernel -> launches
    CompileCost compile, launcher;
    std::vector<std::pair<std::string, std::string>> autotune_used;  // kernel, config
    std::int64_t total_launches() const;
  };
  struct Prestart {
    std::optional<std::int64_t> ms, cpu_ms, waited_ms;
  };
  struct Coverage {
    bool constant_outputs = false;
    nlohmann::json outputs = nlohmann::json::object();  // kernel -> the arguments it wrote
    nlohmann::json raw;  // every coverage fact, as the harness wrote them (kforge verify --json)
  };
  struct Bounds {
    bool out_of_bounds = false;
    std::string detail;
    bool fault = false;  // the run died of an illegal memory access (bounds.fault)
  };
  // The differential check (report["differential"], docs/VERIFIER.md): each transform of
  // inputs() and whether the wrapper agreed with the declared reference on it.
  struct Differential {
    struct Transform {
      std::string transform, result, detail;  // result: agrees, differs or skipped
    };
    std::vector<Transform> transforms;
    std::optional<std::string> failed;  // the transform it failed on
  };
  // Where the answer the verifier compared outside the test came from (report["origin"],
  // docs/VERIFIER.md, "Where the answer came from"): each call the differential check agreed on
  // (inputs(), then each transform), made again with the kernels' outputs replaced after each
  // launch; `host` names the first call whose answer still agreed with the reference (more than
  // `bound` of its elements): the kernel launched, but the host computed the answer.
  struct Origin {
    struct Check {
      std::string on, result;       // result: kernel, host, no_launch or not_judged
      std::optional<double> share;  // of the judged elements, those that still agreed
      std::int64_t elements = 0, runs = 0;
      std::string detail;
    };
    std::vector<Check> checked;
    std::optional<std::string> host;
    double bound = 0.5;
    const Check* host_check() const;  // the check `host` names (nullptr when none)
  };
  struct OutputMutant {
    std::string mutant, result;
    std::optional<int> launch;  // survived with this launch alone changed
  };
  struct Battery {
    std::vector<OutputMutant> mutants;
    std::vector<std::string> not_run;
    std::string stopped;  // or the harness's error
    nlohmann::json raw;   // as the harness wrote it (kept with the result, for debug)
  };
  struct KernelBattery {
    std::vector<std::string> results;  // each mutant's result, in order ("" when it has none)
    std::vector<KernelSurvivor> survived;
    std::string stopped;
    nlohmann::json raw;  // as the harness wrote it
  };

  // What the harness's guard found (report["integrity"], docs/VERIFIER.md, "Trust model").
  struct Integrity {
    struct Replaced {
      std::string what, how, phase;
    };
    struct Scan {
      std::string event, phase;
    };
    bool armed = false, tampered = false;
    std::int64_t watched = 0;
    std::vector<Replaced> replaced;
    std::vector<Scan> scans;
    nlohmann::json raw;  // as the harness wrote it
  };
  // The control runs among the mutant runs (report["controls"], docs/VERIFIER.md, "Control
  // runs").
  struct Controls {
    struct Run {
      std::string kind, at, result;
      std::int64_t duration_ms = 0;
      std::optional<std::string> by;  // the failed test: "name: exception[: message]"
    };
    std::vector<Run> runs;
    // failed: a control run failed; voided: no mutant run's result stands (the harness marked
    // them void: after a failed control, or for void_reason; true whenever `failed` is).
    bool failed = false, voided = false;
    // Why every result is void when no control failed: the real run's mutants_void, which the
    // pool passed on in the mutant runs' request, or the run that ran out of GPU memory.
    std::optional<std::string> void_reason;
    // A run after the real one (a control, the skip-launch run, a mutant run) failed because the
    // device ran out of memory (controls.py): every result is void as the verifier's failure,
    // not the test's; the pool flags the sample `infrastructure`, never unstable_test.
    bool infrastructure = false;
    nlohmann::json raw;  // as the harness wrote it
  };
  // What the device's lock saw of the process (report["gpu_lock"], gpulock.py): the exclusive
  // sections it timed and the stalls of the other samples it caused (one per burst).
  struct GpuLock {
    std::optional<std::int64_t> timed_sections, stalls;
  };

  // The pool's fields of a stored report (report_fields.txt's writer "pool"; read only from
  // ReportOrigin::stored): what the mutant runs' process found (report["mutant"]), the mutation
  // score (report["mutation"]), the guard's lines and the targets the run requires.
  struct MutantRuns {
    std::optional<Integrity> integrity;
    std::optional<Controls> controls;
    std::vector<std::string> guard;
    // How each attempt of its process that wrote no report of them ended (report.mutant.lost:
    // the sample is flagged unstable_test when its last attempt did too).
    std::vector<std::string> lost;
    std::optional<std::int64_t> duration_ms, compiles;      // its wall time; Triton compiles in it
    nlohmann::json phase_times = nlohmann::json::object();  // as HarnessReport::phase_times
  };
  struct Mutation {
    std::int64_t killed = 0, applicable = 0;  // output mutants
    std::vector<std::string> survived;        // the output mutants the test let through
    std::vector<std::string> not_applicable;
    // The kernel battery's score (mutation.kernel), when it ran.
    struct KernelScore {
      std::int64_t killed = 0, applicable = 0, equivalent = 0;
    };
    std::optional<KernelScore> kernel;
    std::vector<KernelSurvivor> kernel_survived;
    nlohmann::json raw;  // as the pool wrote it (MutationScore::to_json)
  };
  // What the pool knew of the run (report["pool"], Pool::Impl::run_facts_json): the parts C++
  // reads (the others are diagnostics, let through by the declaration's object+).
  struct PoolFacts {
    std::optional<std::int64_t> queue_ms, cpu_ms;
    std::optional<std::int64_t> dispatched_ms;  // from the pool's creation to the dispatch
  };

  int version = 0;
  Verdict verdict = Verdict::error;
  std::string detail, phase;
  std::optional<std::string> environment;  // the module the verifier's Python lacks
  std::optional<std::string> script;
  std::optional<std::int64_t> import_ms;
  std::optional<std::vector<Test>> tests;
  // Each section of the script that ran (preamble, code, kernel_wrapper, unitest_code): its
  // first and last line.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> sections;
  std::optional<Triton> triton;
  std::vector<std::string> code_kernels;
  std::optional<Prestart> prestart;
  std::optional<Coverage> coverage;
  std::optional<Bounds> bounds;
  // The real run's decision that no mutant run's result of the sample counts, and why (its
  // kernel faulted in the bounds replay): the pool passes it on to the mutant runs' request.
  std::optional<std::string> mutants_void;
  std::optional<Differential> differential;
  std::optional<Origin> origin;
  std::optional<SpeedLabel> speed;
  std::optional<std::vector<TargetResult>> cross_compile;  // in the order of the target names
  std::optional<Battery> battery;
  std::optional<KernelBattery> kernel_battery;
  std::optional<nlohmann::json> poisoned_bytes;  // bytes, or why poisoning failed
  bool mutant_phase = false;                     // the mutant run's report follows
  std::optional<Integrity> integrity;            // once the guard was armed
  std::optional<Controls> controls;              // the mutant report's
  std::optional<GpuLock> gpu_lock;
  // The phases' own facts (docs/VERIFIER.md, "Phases"), as the schema declares them: phase ->
  // {wall_ms, cpu_ms[, compile_ms, compile_cpu_ms]}, phase -> what broke, phase -> what it left
  // behind in the process. Objects (empty when the harness wrote none).
  nlohmann::json phase_times = nlohmann::json::object();
  nlohmann::json phase_errors = nlohmann::json::object();
  nlohmann::json phase_state = nlohmann::json::object();
  // The pool's (stored reports only).
  std::optional<PoolFacts> pool;
  std::vector<std::string> guard;  // the real run's guard lines
  std::optional<MutantRuns> mutant;
  std::optional<Mutation> mutation;
  std::vector<std::string> required_targets;  // cross_compile.required
};

// Whose report: the harness's own line (a field the pool writes is then unknown), or one the
// pool stored (the pool's fields allowed; the script taken out).
enum class ReportOrigin { harness, stored };

// The report, checked against report_fields.txt. Errors: kind "parse", "harness report: field
// \"tests[0].status\" is missing" and the like.
Result<HarnessReport> parse_harness_report(const nlohmann::json& report, ReportOrigin origin);

// A stored report (VerifyResult::report): nullopt when the harness wrote none (the pool made the
// result: a deadline, a lost worker, a job it could not run), else parse_harness_report's.
Result<std::optional<HarnessReport>> parse_stored_report(const nlohmann::json& report);

}  // namespace kforge::verify
