#include "python_scan.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace kforge::pipeline::py {
namespace {

bool name_start(char c) {
  auto u = static_cast<unsigned char>(c);
  return std::isalpha(u) != 0 || c == '_' || u >= 0x80;
}
bool name_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 || c == '_' || u >= 0x80;
}
// String prefixes, any case: r u b f, and t (Python 3.14 template strings), with r paired.
bool string_prefix(std::string_view w) {
  if (w.empty() || w.size() > 2) return false;
  std::string l;
  for (char c : w) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return l == "r" || l == "u" || l == "b" || l == "f" || l == "t" || l == "br" || l == "rb" ||
         l == "fr" || l == "rf" || l == "tr" || l == "rt";
}

// The length of the line break at s[i]: 2 for CRLF, 1 for LF or a lone CR (Python reads all
// three as newlines), 0 for none.
std::size_t newline_at(std::string_view s, std::size_t i) {
  if (i >= s.size()) return 0;
  if (s[i] == '\n') return 1;
  if (s[i] == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  return 0;
}

constexpr std::array<std::string_view, 4> kOps3 = {"**=", "//=", ">>=", "<<="};
constexpr std::array<std::string_view, 20> kOps2 = {
    "**", "//", "<<", ">>", "==", "!=", "<=", ">=", "->", ":=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ".."};

Error syntax(int line, const std::string& msg) {
  return Error("python_syntax", "line " + std::to_string(line) + ": " + msg);
}

// Nested f-string replacement fields beyond this are refused (CPython's own limit is lower);
// it keeps hostile input from exhausting the stack.
constexpr int kMaxFieldDepth = 100;

Result<std::size_t> skip_string(std::string_view s, std::size_t i, int& line, int depth);

// The replacement field of an f-string whose '{' is just before s[i] (PEP 701: any expression,
// strings with the enclosing quote, comments and line breaks included). Returns the index after
// its closing '}'.
Result<std::size_t> skip_field(std::string_view s, std::size_t i, int& line, int depth) {
  if (depth > kMaxFieldDepth) return syntax(line, "f-string replacement fields nested too deeply");
  const int start_line = line;
  const std::size_t n = s.size();
  int brackets = 0;
  bool spec = false;  // in the format spec, after a top-level ':'
  while (i < n) {
    char c = s[i];
    if (std::size_t nl = newline_at(s, i)) {
      ++line;
      i += nl;
      continue;
    }
    if (spec) {
      if (c == '}') return i + 1;
      if (c == '{') {
        KF_TRY(i, skip_field(s, i + 1, line, depth + 1));
        continue;
      }
      if (c == '\\' && i + 1 < n) {
        std::size_t nl = newline_at(s, i + 1);
        if (nl > 0) ++line;
        i += 1 + (nl > 0 ? nl : 1);
        continue;
      }
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < n && newline_at(s, i) == 0) ++i;
      continue;
    }
    if (c == '\\') {
      std::size_t nl = newline_at(s, i + 1);
      if (nl > 0) ++line;
      i += 1 + (nl > 0 ? nl : 1);
      continue;
    }
    if (name_start(c)) {
      std::size_t j = i;
      while (j < n && name_char(s[j])) ++j;
      if (j < n && (s[j] == '\'' || s[j] == '"') && string_prefix(s.substr(i, j - i))) {
        KF_TRY(i, skip_string(s, i, line, depth));
      } else {
        i = j;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      KF_TRY(i, skip_string(s, i, line, depth));
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++brackets;
    if (c == ')' || c == ']') --brackets;
    if (c == '}') {
      if (brackets == 0) return i + 1;
      --brackets;
    }
    if (brackets == 0 && c == ':') spec = true;
    if (brackets == 0 && c == '!' && i + 1 < n && s[i + 1] != '=') spec = true;  // !r, !s, !a
    ++i;
  }
  return syntax(start_line, "f-string replacement field is never closed");
}

// The string literal whose prefix (or opening quote) is at s[i]; returns the index after it.
// Advances `line` over the line breaks inside it.
Result<std::size_t> skip_string(std::string_view s, std::size_t i, int& line, int depth) {
  const std::size_t n = s.size();
  const int start_line = line;
  bool fmt = false, raw = false;
  while (i < n && s[i] != '\'' && s[i] != '"') {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    fmt = fmt || l == 'f' || l == 't';
    raw = raw || l == 'r';
    ++i;
  }
  if (i >= n) return syntax(start_line, "unterminated string");
  const char q = s[i];
  const bool triple = i + 2 < n && s[i + 1] == q && s[i + 2] == q;
  i += triple ? 3 : 1;
  while (i < n) {
    char d = s[i];
    if (d == '\\') {
      if (std::size_t nl = newline_at(s, i + 1)) {  // a continuation, CRLF or not
        ++line;
        i += 1 + nl;
        continue;
      }
      if (fmt && !raw && i + 2 < n && s[i + 1] == 'N' && s[i + 2] == '{') {  // \N{NAME}
        i += 3;
        while (i < n && s[i] != '}' && s[i] != q && newline_at(s, i) == 0) ++i;
        if (i < n && s[i] == '}') ++i;
        continue;
      }
      i += 2;
      continue;
    }
    if (std::size_t nl = newline_at(s, i)) {
      if (!triple) break;
      ++line;
      i += nl;
      continue;
    }
    if (d == q) {
      if (!triple) return i + 1;
      if (i + 2 < n && s[i + 1] == q && s[i + 2] == q) return i + 3;
    }
    if (fmt && d == '{') {
      if (i + 1 < n && s[i + 1] == '{') {
        i += 2;
        continue;
      }
      KF_TRY(i, skip_field(s, i + 1, line, depth + 1));
      continue;
    }
    ++i;
  }
  return syntax(start_line, "unterminated string");
}

// Where the number starting at i ends (digits, letters, dots, an exponent's sign).
std::size_t number_end(std::string_view s, std::size_t i) {
  const std::size_t n = s.size();
  const char c = s[i];
  std::size_t j = i;
  bool hex = c == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X');
  while (j < n) {
    char d = s[j];
    if (name_char(d) || d == '.') {
      ++j;
    } else if ((d == '+' || d == '-') && !hex && (s[j - 1] == 'e' || s[j - 1] == 'E')) {
      ++j;
    } else {
      break;
    }
  }
  return j;
}

// The length of the operator at i: the longest of three, two or one characters.
std::size_t op_length(std::string_view s, std::size_t i) {
  std::size_t len = 1;
  for (auto op : kOps3)
    if (s.substr(i, 3) == op) len = 3;
  if (len == 1) {
    if (s.substr(i, 3) == "...") {
      len = 3;
    } else {
      for (auto op : kOps2)
        if (op != ".." && s.substr(i, 2) == op) len = 2;
    }
  }
  return len;
}

}  // namespace

Result<std::vector<LogicalLine>> scan(std::string_view s) {
  std::vector<LogicalLine> out;
  LogicalLine cur;
  struct Open {
    char c;
    int line;
  };
  std::vector<Open> open;
  bool line_start = true;  // at the start of a physical line that may begin a logical line
  int line = 1;
  std::size_t i = 0;
  const std::size_t n = s.size();
  auto push_token = [&](Tok k, std::size_t b, std::size_t e, int tok_line) {
    if (cur.tokens.empty()) cur.line = tok_line;
    cur.tokens.push_back(Token{k, s.substr(b, e - b), tok_line, b});
  };
  while (i < n) {
    if (line_start && open.empty() && cur.tokens.empty()) {
      int col = 0;
      while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f')) {
        if (s[i] == '\t')
          col = (col / 8 + 1) * 8;
        else if (s[i] == '\f')
          col = 0;
        else
          ++col;
        ++i;
      }
      cur.indent = col;
      line_start = false;
      continue;
    }
    line_start = false;
    char c = s[i];
    if (std::size_t nl = newline_at(s, i)) {
      ++line;
      i += nl;
      if (open.empty() && !cur.tokens.empty()) {
        out.push_back(std::move(cur));
        cur = LogicalLine{};
      }
      line_start = true;
      continue;
    }
    if (c == '\\' && newline_at(s, i + 1) > 0) {
      i += 1 + newline_at(s, i + 1);
      ++line;
      continue;
    }
    if (c == '#') {
      while (i < n && newline_at(s, i) == 0) ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\f') {
      ++i;
      continue;
    }
    std::size_t start = i;
    int start_line = line;
    bool is_string = false;
    if (name_start(c)) {
      std::size_t j = i;
      while (j < n && name_char(s[j])) ++j;
      if (j < n && (s[j] == '\'' || s[j] == '"') && string_prefix(s.substr(i, j - i))) {
        i = j;
        is_string = true;
      } else {
        push_token(Tok::name, i, j, line);
        i = j;
        continue;
      }
    }
    if (is_string || c == '\'' || c == '"') {
      KF_TRY(i, skip_string(s, start, line, 0));
      push_token(Tok::string, start, i, start_line);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0)) {
      std::size_t j = number_end(s, i);
      push_token(Tok::number, i, j, line);
      i = j;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      open.push_back(Open{c, line});
      push_token(Tok::op, i, i + 1, line);
      ++i;
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (open.empty() || open.back().c != want)
        return syntax(line, std::string("unbalanced '") + c + "'");
      open.pop_back();
      push_token(Tok::op, i, i + 1, line);
      ++i;
      continue;
    }
    std::size_t len = op_length(s, i);
    push_token(Tok::op, i, i + len, line);
    i += len;
  }
  if (!open.empty())
    return syntax(open.back().line, std::string("'") + open.back().c + "' is never closed");
  if (!cur.tokens.empty()) out.push_back(std::move(cur));
  return out;
}

std::vector<Def> find_defs(const std::vector<LogicalLine>& lines) {
  std::vector<Def> defs;
  for (std::size_t idx = 0; idx < lines.size(); ++idx) {
    const auto& t = lines[idx].tokens;
    std::size_t k = 0;
    if (k < t.size() && is_name(t[k], "async")) ++k;
    if (k + 1 >= t.size()) continue;
    bool is_def = is_name(t[k], "def");
    bool is_class = is_name(t[k], "class");
    if ((!is_def && !is_class) || t[k + 1].kind != Tok::name) continue;
    Def d;
    d.name = std::string(t[k + 1].text);
    d.is_class = is_class;
    d.indent = lines[idx].indent;
    d.line = lines[idx].line;
    d.header = idx;
    std::size_t j = idx + 1;
    while (j < lines.size() && lines[j].indent > d.indent) ++j;
    d.body_end = j;
    for (std::size_t b = idx; b > 0; --b) {
      const auto& prev = lines[b - 1];
      if (prev.indent != d.indent || prev.tokens.empty() || !is_op(prev.tokens[0], "@")) break;
      d.decorators.push_back(b - 1);
    }
    std::reverse(d.decorators.begin(), d.decorators.end());
    defs.push_back(std::move(d));
  }
  return defs;
}

int nesting(const Token& t) {
  if (t.kind != Tok::op || t.text.size() != 1) return 0;
  char c = t.text[0];
  if (c == '(' || c == '[' || c == '{') return 1;
  if (c == ')' || c == ']' || c == '}') return -1;
  return 0;
}

std::size_t matching(const std::vector<Token>& tokens, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    int n = nesting(tokens[i]);
    depth += n;
    if (n < 0 && depth == 0) return i;
  }
  return tokens.size();
}

std::size_t find_top_level(const std::vector<Token>& tokens, std::size_t from, std::size_t to,
                           std::string_view op) {
  int depth = 0;
  for (std::size_t i = from; i < to && i < tokens.size(); ++i) {
    depth += nesting(tokens[i]);
    if (depth == 0 && is_op(tokens[i], op)) return i;
  }
  return to;
}

std::string text_of(std::string_view source, const std::vector<Token>& tokens, std::size_t a,
                    std::size_t b) {
  (void)source;
  std::string out;
  for (std::size_t i = a; i < b && i < tokens.size(); ++i) {
    if (i > a) {
      const auto& p = tokens[i - 1];
      if (tokens[i].offset > p.offset + p.text.size()) out.push_back(' ');
    }
    out.append(tokens[i].text);
  }
  return out;
}

std::string string_value(const Token& t) {
  if (t.kind != Tok::string) return {};
  std::string_view v = t.text;
  while (!v.empty() && v.front() != '\'' && v.front() != '"') v.remove_prefix(1);
  if (v.size() >= 6 && (v.substr(0, 3) == "'''" || v.substr(0, 3) == "\"\"\""))
    return std::string(v.substr(3, v.size() - 6));
  if (v.size() >= 2) return std::string(v.substr(1, v.size() - 2));
  return {};
}

}  // namespace kforge::pipeline::py
