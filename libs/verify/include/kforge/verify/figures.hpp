#pragma once
// Per-sample figures read from a verifier result: where its time went, for `kforge verify
// --json`, the slowest-samples list and the real-kernel benchmark.

#include <nlohmann/json.hpp>

#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

// {"duration_ms", "cpu_ms", "device", "phases": {...}, "autotune": [...]} where phases holds (ms;
// absent when the report does not say): queue (submitted to handed over), context (the CUDA
// context and Triton driver set-up of the sample's process) and context_waited (how long that
// ready process then waited for the sample: > 0 means the set-up was off the sample's path),
// import (the script's module body), tests (the test functions), compile (Triton's compile()
// calls inside both, cache hits included), compile_cpu and compile_child_cpu (their CPU time in
// the process and in the tools it ran, ptxas among them), compiles (calls), launcher and
// launcher_builds (the C launchers Triton built with the C compiler for new kernel signatures),
// run (import + tests - compile - launcher), mutant (the mutant run) and mutant_compiles. autotune:
// the config each autotuned kernel ran with.
nlohmann::json sample_figures(const VerifyResult& r);

}  // namespace kforge::verify
