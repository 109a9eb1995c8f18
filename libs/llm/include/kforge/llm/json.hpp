#pragma once
// Taking the answer out of a model's reply, and checking it against a stage's schema.
//
// Models wrap their answer in all sorts of ways whatever response_format says. extract_answer
// takes every usable answer and never a draft:
//   1. Reasoning is set apart first and never searched: <think>...</think> (and <thinking>,
//      <reasoning>) blocks, a reply that opens with reasoning closed by a bare </think>, and a
//      <think> never closed (the reply was cut while thinking: the answer is empty). A
//      provider's separate reasoning field (reasoning_content) never reaches this function.
//   2. Candidates in the answer, in this order; the first that parses as an object and validates
//      against the schema (when given) wins:
//        a. the whole answer;
//        b. each fenced block (```json, ```JSON, ``` ...), in order;
//        c. each balanced {...} span, outermost first, in order;
//        d. the schema's required string fields as fenced code blocks labelled with their names
//           (the fence's info word, or the line just above the fence, names the field).
//   3. Each candidate is read as strict JSON first; when that fails, leniently, recording what
//      was mended (Extraction::mended):
//        bom              a leading byte-order mark
//        raw_newlines     raw newlines, tabs or other control characters inside strings
//        python_literal   a Python dict: 'single-quoted' strings, True/False/None, adjacent
//                         string literals
//        triple_quotes    Python """triple-quoted""" (or ''') strings
//        trailing_comma   a comma before } or ]
//        invalid_escape   a backslash before a character JSON does not escape (kept, as Python
//                         does: "\d" stays \d)
//      and after parsing:
//        extra_keys       keys the schema does not allow (additionalProperties false) dropped;
//                         the raw answer keeps them
//        fenced_value     a string value that is one fenced code block is unwrapped to its code
//        labelled_blocks  the object was built from labelled fenced blocks (2d)
// When none is usable, the error (kind "parse") says what was found and why each candidate
// failed.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::llm {

// Validates `value` against a JSON-schema subset: type (string, number, integer, boolean,
// object, array, null, or a list of these), required, properties, additionalProperties (false
// only), items, enum, minLength, minItems. Returns "" when valid, else the first problem with its
// JSON path, e.g. "$.analysis.key_parameters[2]: expected string, got number".
std::string validate_schema(const nlohmann::json& value, const nlohmann::json& schema);

// A reply split into its answer and its reasoning (see 1. above).
struct SplitReply {
  std::string answer;             // the text outside the reasoning blocks
  std::string reasoning;          // the reasoning blocks' text, joined by blank lines; "" when none
  bool cut_in_reasoning = false;  // a <think> was never closed
};
SplitReply split_reasoning(std::string_view text);

struct Extraction {
  nlohmann::json value;             // the object, normalised (extra keys dropped, fences off)
  std::vector<std::string> mended;  // what was mended, sorted, each once; empty: strict JSON
  std::string where;                // which candidate, e.g. "fenced block at line 3"
};

// Extracts the answer object from a reply. schema: optional; when given the result validates.
Result<Extraction> extract_answer(std::string_view text,
                                  const std::optional<nlohmann::json>& schema = std::nullopt);

// extract_answer's value alone.
Result<nlohmann::json> extract_json(std::string_view text,
                                    const std::optional<nlohmann::json>& schema = std::nullopt);

// Reads text as JSON leniently (see 3. above), recording what was mended into `mended`
// (unsorted, may repeat). Returns nullopt with `error` set ("line L column C: ...") when even
// the lenient reading fails. Exposed for tests and for the yield benchmark.
std::optional<nlohmann::json> parse_lenient(std::string_view text, std::vector<std::string>& mended,
                                            std::string& error);

}  // namespace kforge::llm
