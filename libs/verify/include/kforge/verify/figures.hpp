#pragma once
// Per-sample figures read from a verifier result: where its time went, for `kforge verify
// --json`, the slowest-samples list and the real-kernel benchmark.

#include <nlohmann/json.hpp>
#include <string>

#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

// {"duration_ms", "cpu_ms", "device", "phases": {...}, "phase_times": {...}, "autotune": [...]}
// where phases holds (ms; absent when the report does not say): queue (submitted to handed over),
// context (the CUDA context and Triton driver set-up of the sample's process) and context_waited
// (how long that ready process then waited for the sample: > 0 means the set-up was off the
// sample's path), import (the script's module body), tests (the test functions), compile (Triton's
// compile() calls inside both, cache hits included), compile_cpu and compile_child_cpu (their CPU
// time in the process and in the tools it ran, ptxas among them), compiles (calls), launcher and
// launcher_builds (the C launchers Triton built with the C compiler for new kernel signatures),
// run (import + tests - compile - launcher), mutant (the mutant run) and mutant_compiles. autotune:
// the config each autotuned kernel ran with. phase_times: the harness's phases (prepare, test,
// speed, cross_compile, bounds, skip_launch, output_mutants, kernel_battery; mutant_prepare when
// the mutant run had a process of its own), each {wall_ms, cpu_ms[, compile_ms, compile_cpu_ms]}
// (docs/VERIFIER.md, "Phases").
nlohmann::json sample_figures(const VerifyResult& r);

// sample_figures' phase_times as one line, in the order the phases run: "prepare 12/10  test
// 900/850 (compile 400/380)  ..." (wall/CPU ms; compile: the part in Triton's compiles); ""
// when there are none.
std::string phase_times_line(const nlohmann::json& phase_times);

}  // namespace kforge::verify
