#pragma once
// Text for a terminal: what a model, a crawl or a sample wrote goes through printable() before
// the CLI prints it, so that an escape sequence in a model's answer (ESC [ 1 m, a title change,
// a cursor move) shows as text and never reaches the terminal.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace kforge {

enum class Newlines { escape, keep };

// C0 controls and DEL as \xHH (\t kept; \n kept with Newlines::keep), C1 controls (U+0080-009F)
// as \u0080..\u009f, and bytes that are not UTF-8 as \xHH; everything else as is.
std::string printable(std::string_view s, Newlines newlines = Newlines::escape);

// Every string in `j` (values and keys, at any depth) through printable(); for a document that
// is shown as text.
nlohmann::ordered_json printable_strings(const nlohmann::ordered_json& j);

}  // namespace kforge
