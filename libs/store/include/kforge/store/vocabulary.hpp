#pragma once
// The verifier's words, one table each: verdicts, quality flags, and what a cross-compile target
// came to (stage kinds are states.hpp's StageKind). The names live in one file per vocabulary,
// libs/verify/harness/kforge_harness/vocabulary/*.txt, beside the harness that reads them
// (listed.py); store compiles the same files in (vocabulary_lines), SQL seeds a table of each
// from them (migrations/0024_vocabulary.sql: verdict_names, flag_names, target_result_names,
// stage_kind_names), and tests/store/vocabulary_test.cpp holds each C++ table, each file and each
// SQL table to the same names in the same order.
//
// C++ spells a name only in its table here: every other place says Verdict::passed or
// to_string(Flag::weak_test). Adding a flag: its line in flags.txt, its value and name here, its
// row in a new migration's INSERT into flag_names, and what sets it (docs/VERIFIER.md).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/enum_names.hpp"
#include "kforge/core/result.hpp"

namespace kforge::store {

// Exactly the verdicts of the `verifications` table.
enum class Verdict { passed, failed, error, timeout, crashed, invalid, skipped };
inline constexpr EnumName<Verdict> kVerdictNames[] = {
    {Verdict::passed, "passed"},   {Verdict::failed, "failed"},   {Verdict::error, "error"},
    {Verdict::timeout, "timeout"}, {Verdict::crashed, "crashed"}, {Verdict::invalid, "invalid"},
    {Verdict::skipped, "skipped"}};

// The quality flags a verdict may carry (verify/verdict.hpp says when each is set).
enum class Flag {
  no_kernel_launch,
  mutant_survived,
  weak_test,
  weak_inputs,
  constant_output,
  out_of_bounds,
  infrastructure,
  environment,
  slow,
  cross_compile_failed,
  tampered,
  unstable_test,
  kernel_not_used,
};
inline constexpr EnumName<Flag> kFlagNames[] = {
    {Flag::no_kernel_launch, "no_kernel_launch"},
    {Flag::mutant_survived, "mutant_survived"},
    {Flag::weak_test, "weak_test"},
    {Flag::weak_inputs, "weak_inputs"},
    {Flag::constant_output, "constant_output"},
    {Flag::out_of_bounds, "out_of_bounds"},
    {Flag::infrastructure, "infrastructure"},
    {Flag::environment, "environment"},
    {Flag::slow, "slow"},
    {Flag::cross_compile_failed, "cross_compile_failed"},
    {Flag::tampered, "tampered"},
    {Flag::unstable_test, "unstable_test"},
    {Flag::kernel_not_used, "kernel_not_used"}};

// One cross-compile target's result (verify/targets.hpp).
enum class TargetResultKind { ok, error, unavailable, not_run };
inline constexpr EnumName<TargetResultKind> kTargetResultNames[] = {
    {TargetResultKind::ok, "ok"},
    {TargetResultKind::error, "error"},
    {TargetResultKind::unavailable, "unavailable"},
    {TargetResultKind::not_run, "not_run"}};

// (verify says to_string(Verdict) for the same name, as a C string.)
constexpr std::string_view verdict_name(Verdict v) {
  return name_of(kVerdictNames, v);
}
constexpr std::string_view to_string(Flag v) {
  return name_of(kFlagNames, v);
}
// The same as a C string (the table's names are string literals).
constexpr const char* flag_name(Flag v) {
  return name_of(kFlagNames, v).data();
}
constexpr std::string_view to_string(TargetResultKind v) {
  return name_of(kTargetResultNames, v);
}

Result<Verdict> parse_verdict(std::string_view stored);
Result<Flag> parse_flag(std::string_view stored);
Result<TargetResultKind> parse_target_result(std::string_view stored);

// The names of the vocabulary file `file` ("verdicts.txt", "flags.txt", "target_results.txt",
// "stage_kinds.txt") as compiled in, in order; empty for a file that is not one.
std::vector<std::string> vocabulary_lines(std::string_view file);

}  // namespace kforge::store
