#pragma once
// "Did you mean ...?" for a mistyped name: a command, an environment variable, a field.

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// The names in `known` closest to `word`, nearest first; empty if none is close. Closeness is
// the number of edits, where inserting, deleting or replacing a letter and swapping two
// neighbouring letters each count as one (optimal string alignment), at most a third of the
// word's length and at least 2. Equally near names are ordered by how many letters they do not
// share with the word (a swap shares all, a letter left out all but one), then by name.
std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& known);

}  // namespace kforge
