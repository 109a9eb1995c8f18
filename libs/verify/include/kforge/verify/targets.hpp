#pragma once
// Cross-compilation targets (verifier.cross_compile, `kforge verify --cross-compile`, `kforge
// run create --require-target`): after a sample's real run passed, the harness compiles every
// kernel the test launched, with the specialisation it was launched with, for each target
// (kforge_harness/crosscompile.py). Nothing runs there: the result says whether it compiles.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

// Flag on a passing sample of a run that requires a target (`--require-target`) whose compile
// for that target failed: the sample is not verified, and the repair prompt carries the error.
inline constexpr const char* kCrossCompileFailed = store::flag_name(Flag::cross_compile_failed);

// Why `text` is not a target the harness can compile for ("hip:gfx942", "hip:gfx90a"), or
// nullopt when it is one. Targets are BACKEND:ARCH; the backend is hip, the arch one that
// Triton's AMD backend compiles for (gfx908, gfx90a, gfx940-gfx942, gfx950, RDNA 2 to 4). The
// error lists the accepted targets.
std::optional<std::string> target_error(const std::string& text);

// Splits "a,b" items (each may be a comma list) into targets, checking each one. The error names
// `where` (a flag or a configuration key) and the bad target.
std::optional<std::string> parse_targets(const std::vector<std::string>& items,
                                         const std::string& where, std::vector<std::string>& out);

// TargetResult, one target's result, is declared with the report it is read from
// (harness_report.hpp).

// The per-target results of a result (its HarnessReport's report["cross_compile"]["targets"]),
// in the order of the target names.
std::vector<TargetResult> cross_compile_results(const VerifyResult& r);
// The same from a stored report (VerifyResult::report), parsed through parse_stored_report:
// empty too when it does not parse.
std::vector<TargetResult> cross_compile_results(const nlohmann::json& stored_report);

// {"hip:gfx942": "ok", ...}: the short form for `kforge verify --json` and export.
nlohmann::json cross_compile_summary(const std::vector<TargetResult>& results);

// For a run that requires targets: a passing result whose compile for one of them failed
// ("error"; "unavailable" and "not_run" do not count against the sample) gets the flag
// kCrossCompileFailed, its detail names the targets and their errors, and the report records
// report["cross_compile"]["required"]. Returns whether it was flagged.
bool require_targets(VerifyResult& r, const std::vector<std::string>& required);

}  // namespace kforge::verify
