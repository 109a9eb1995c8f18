#pragma once
// Internal to kforge_dedup: the tokenizer signature.cpp and ops.cpp share, and the operations of
// one kernel (ops.cpp).

#include <string>
#include <string_view>
#include <vector>

namespace kforge::dedup::detail {

// Python tokens without comments and whitespace. Literals become "S" / "N" unless keep_literals.
void tokenize(std::string_view code, bool keep_literals, std::vector<std::string_view>& out);

// Makes tokens formatting neutral, as a round trip through Python's `ast` is: grouping
// parentheses (a `(` that does not call or subscript: after an operator, a keyword, `,`, `=` or
// at the start) are dropped with their `)`, so are commas before a closing bracket (`f(a, b,)`),
// and `else : if` reads `elif`. So `(a + b)`, `return (x, y)` and `return x, y`, a trailing
// comma or a line broken inside parentheses give the same tokens. Precedence is lost (`(a + b) *
// c` reads `a + b * c`): these tokens are for similarity and hashes, never for parsing (ops.cpp
// reads the tokens as written).
void formatting_neutral(std::vector<std::string_view>& toks);

// Appends the operations one kernel (its source, from `def` to its last line) computes on values
// (signature.hpp, Signature::ops): a small data-flow pass over its statements tells value
// arithmetic (what flows into a stored value, an atomic's value, a returned value) from index
// arithmetic (what flows only into pointers, masks, offsets, loop bounds and conditions).
void value_ops(std::string_view kernel, std::vector<std::string>& ops);

// How many code lines a kernel (its source, from `def`) has: its logical lines (a statement
// broken over several lines is one, `;` separates two, `if c: x = 1` is two), the `def` line
// included, without blank lines, comments, docstrings and bare `else:`, `try:` and `finally:`
// lines. Formatting neutral as tokens are (Python's `ast` writes `else: if` as `elif`).
int code_lines(std::string_view kernel);

}  // namespace kforge::dedup::detail
