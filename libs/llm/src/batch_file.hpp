#pragma once
// Internal: batch mode's JSON Lines. The input file's lines (custom_id = the request's
// identity), written to disk as they are built, and the provider's result files read back line
// by line into each request's outcome.

#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch.hpp"
#include "batch_ledger.hpp"
#include "kforge/llm/batch_file.hpp"  // input_line

namespace kforge::llm {

// A batch status after which nothing changes: completed, failed, expired, cancelled.
bool terminal(const std::string& status);
// The size of input_line for a body of `body_bytes`.
std::size_t input_line_size(const std::string& sha, const std::string& endpoint,
                            std::size_t body_bytes);
// Writes the input file of `lines` to path (one input_line each, its body from body_of, one in
// memory at a time): its size in bytes.
Result<std::size_t> write_input_file(
    const std::string& path, const std::string& endpoint, std::span<const Pending> lines,
    const std::function<Result<std::string>(const Pending&)>& body_of);
// Reads a downloaded output or error file at path line by line, one line in memory, calling
// `each` with each result line; false, and *why, when a line is not a result line (the file
// arrived cut or in parts) or the file cannot be read.
bool for_each_result_line(const std::string& path, const std::string& file_id, std::string* why,
                          const std::function<void(const nlohmann::json&)>& each);
// The batch object's errors.data, joined: "code: message; ...".
std::string batch_errors(const nlohmann::json& batch);
// The outcome a result line gives its request: answered (HTTP 200) or failed with the line's
// error (the provider's {code, message}, vLLM's text, or the status and body); error texts go
// through redact.
LineOutcome line_outcome(const nlohmann::json& line, const std::string& batch_key,
                         const std::string& batch_id,
                         const std::function<std::string(std::string)>& redact);
// The outcome of a request missing from a batch that ended with `status`.
LineOutcome missing_outcome(const std::string& sha, const std::string& batch_key,
                            const std::string& batch_id, const std::string& status,
                            const std::string& batch_error,
                            const std::function<std::string(std::string)>& redact);

}  // namespace kforge::llm
