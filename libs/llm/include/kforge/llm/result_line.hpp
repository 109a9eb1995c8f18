#pragma once
// The error of a batch result line (a provider's error file, vLLM's run-batch output), as the
// service reads it from a provider and `kforge batch import` from a file.

#include <nlohmann/json.hpp>

#include <string>

namespace kforge::llm {

// "code: message" from an error object whose code is of any JSON type (a string; a number, as
// older vLLM writes `"code": 400`; missing or null: "error"), with the message found however
// deep it is nested (newer vLLM writes {"error": {"error": {"message": ...}}}); a string error
// as it is; "" for null or nothing.
std::string result_line_error(const nlohmann::json& error);

}  // namespace kforge::llm
