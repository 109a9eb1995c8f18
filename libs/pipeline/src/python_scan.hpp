#pragma once
// A small Python tokenizer: enough structure to find functions, decorators, parameters and
// launches without running Python. It understands comments, every string form (prefixes,
// triple quotes, escapes), bracket nesting, backslash continuations and indentation, and groups
// tokens into logical lines.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/result.hpp"

namespace kforge::pipeline::py {

enum class Tok { name, number, string, op };

struct Token {
  Tok kind;
  std::string_view text;  // a view into the scanned source
  int line;               // 1-based
  std::size_t offset;     // byte offset in the source
};

struct LogicalLine {
  int indent = 0;  // columns of leading whitespace (tabs to multiples of 8)
  int line = 0;    // 1-based line of the first token
  std::vector<Token> tokens;
};

// Errors (kind "python_syntax"): an unterminated string, an unbalanced bracket, with the line.
Result<std::vector<LogicalLine>> scan(std::string_view source);

// A def or class statement and the logical lines its body spans.
struct Def {
  std::string name;
  bool is_class = false;
  int indent = 0;
  int line = 0;
  std::size_t header = 0;               // index of the def/class line
  std::size_t body_end = 0;             // one past the last line of its body
  std::vector<std::size_t> decorators;  // indexes of its decorator lines, in order
};

// Every def and class, nested ones included, in source order.
std::vector<Def> find_defs(const std::vector<LogicalLine>& lines);

// The index of the token closing the bracket at tokens[open], or tokens.size().
std::size_t matching(const std::vector<Token>& tokens, std::size_t open);

// What a token does to the bracket depth: +1 opens ( [ {, -1 closes ) ] }, 0 otherwise.
int nesting(const Token& t);

// The first operator `op` outside every bracket opened within tokens[from, to), or `to`.
std::size_t find_top_level(const std::vector<Token>& tokens, std::size_t from, std::size_t to,
                           std::string_view op);

// The source text from tokens[a] to tokens[b - 1], whitespace runs collapsed to one space.
std::string text_of(std::string_view source, const std::vector<Token>& tokens, std::size_t a,
                    std::size_t b);

inline bool is_op(const Token& t, std::string_view op) {
  return t.kind == Tok::op && t.text == op;
}
inline bool is_name(const Token& t, std::string_view n) {
  return t.kind == Tok::name && t.text == n;
}

// The value of a simple string literal token ('x', "x", r'x'); empty for others.
std::string string_value(const Token& t);

}  // namespace kforge::pipeline::py
