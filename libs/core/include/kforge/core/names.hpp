#pragma once
// "Did you mean ...?" for a mistyped name: a command, an environment variable, a field.

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// The names in `known` closest to `word` by edit distance (at most a third of its length, and at
// least 2 edits allowed), nearest first; empty if none is close.
std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& known);

}  // namespace kforge
