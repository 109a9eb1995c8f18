#pragma once
// The verdict line: what a Slurm array task writes per sample (`kforge verify SHARD --json RESULT
// --full`, one JSON object per line) and the Slurm backend reads back on the daemon's host. One
// pair, so a field renamed on one side is an error on the other, never a silent default.
//
// The line holds exactly: index (the record's position in the shard), key, verdict, detail,
// flags, report, script, stderr_tail, duration_ms, device. Reading refuses a line with a field
// missing, a field of the wrong type, an unknown verdict or a field it does not know, naming it.

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

struct VerdictLine {
  std::int64_t index = 0;  // the record's position in its shard (0-based)
  VerifyResult result;     // stdout_text is not carried
};

nlohmann::ordered_json to_json(const VerdictLine& line);
// Errors: "parse" (not a JSON object, a field missing, unknown or of the wrong type, a verdict
// that is not one), the message naming the field.
Result<VerdictLine> verdict_line_from_json(std::string_view text);

}  // namespace kforge::verify
