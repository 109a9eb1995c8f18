#pragma once
// Taking the JSON object out of a model's reply, and checking it against a stage's schema.
//
// Models wrap JSON in all sorts of ways whatever response_format says: bare, in ```json fences,
// after a sentence of prose, or as several fenced blocks (a draft, then the answer). extract_json
// tries, in order: the whole text; each fenced block (```json, ```JSON, ``` ...); each balanced
// {...} span in the text. It returns the first candidate that parses as an object and validates
// against the schema (when given). When none does, the error (kind "parse") says what was found
// and why each candidate failed.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::llm {

// Validates `value` against a JSON-schema subset: type (string, number, integer, boolean,
// object, array, null, or a list of these), required, properties, additionalProperties (false
// only), items, enum, minLength, minItems. Returns "" when valid, else the first problem with its
// JSON path, e.g. "$.analysis.key_parameters[2]: expected string, got number".
std::string validate_schema(const nlohmann::json& value, const nlohmann::json& schema);

// Extracts the JSON object from a reply. schema: optional; when given the result validates.
Result<nlohmann::json> extract_json(std::string_view text,
                                    const std::optional<nlohmann::json>& schema = std::nullopt);

}  // namespace kforge::llm
