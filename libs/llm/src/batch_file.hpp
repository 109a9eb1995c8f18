#pragma once
// Internal: batch mode's JSON Lines. The input file's lines (custom_id = the request's
// identity) and the provider's result files read back into each request's outcome. Pure.

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch.hpp"

namespace kforge::llm {

// One input line: the request body POSTed to endpoint, under custom_id sha; ends in "\n".
std::string input_line(const std::string& sha, const std::string& endpoint,
                       const std::string& body);
// A batch status after which nothing changes: completed, failed, expired, cancelled.
bool terminal(const std::string& status);
// A downloaded output or error file's result lines; nullopt, and *why, when a line is not a
// result line (the file arrived cut or in parts).
std::optional<std::vector<nlohmann::json>> read_result_file(const std::string& body,
                                                            const std::string& file_id,
                                                            std::string* why);
// The batch object's errors.data, joined: "code: message; ...".
std::string batch_errors(const nlohmann::json& batch);
// The outcome of each request of a batch (shas) from its result lines: answered (HTTP 200),
// failed with the line's error, or missing from the batch that ended with `status`. Each
// sha once, lines of other requests ignored; error texts go through redact.
std::vector<LineOutcome> line_outcomes(const std::vector<nlohmann::json>& lines,
                                       const std::set<std::string>& shas,
                                       const std::string& batch_key, const std::string& batch_id,
                                       const std::string& status, const std::string& batch_error,
                                       const std::function<std::string(std::string)>& redact);

}  // namespace kforge::llm
