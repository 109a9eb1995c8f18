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
bool string_prefix(std::string_view w) {
  if (w.size() > 2) return false;
  std::string l;
  for (char c : w) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return l == "r" || l == "u" || l == "b" || l == "f" || l == "br" || l == "rb" || l == "fr" ||
         l == "rf";
}

constexpr std::array<std::string_view, 4> kOps3 = {"**=", "//=", ">>=", "<<="};
constexpr std::array<std::string_view, 20> kOps2 = {
    "**", "//", "<<", ">>", "==", "!=", "<=", ">=", "->", ":=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ".."};

Error syntax(int line, const std::string& msg) {
  return Error("python_syntax", "line " + std::to_string(line) + ": " + msg);
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
    if (c == '\n') {
      ++line;
      ++i;
      if (open.empty() && !cur.tokens.empty()) {
        out.push_back(std::move(cur));
        cur = LogicalLine{};
      }
      line_start = true;
      continue;
    }
    if (c == '\\' && i + 1 < n &&
        (s[i + 1] == '\n' || (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n'))) {
      i += s[i + 1] == '\n' ? 2 : 3;
      ++line;
      continue;
    }
    if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
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
      char q = s[i];
      bool triple = i + 2 < n && s[i + 1] == q && s[i + 2] == q;
      i += triple ? 3 : 1;
      bool closed = false;
      while (i < n) {
        char d = s[i];
        if (d == '\\') {
          if (i + 1 < n && s[i + 1] == '\n') ++line;
          i += 2;
          continue;
        }
        if (d == '\n') {
          if (!triple) break;
          ++line;
          ++i;
          continue;
        }
        if (d == q) {
          if (!triple) {
            ++i;
            closed = true;
            break;
          }
          if (i + 2 < n && s[i + 1] == q && s[i + 2] == q) {
            i += 3;
            closed = true;
            break;
          }
        }
        ++i;
      }
      if (!closed) return syntax(start_line, "unterminated string");
      push_token(Tok::string, start, std::min(i, n), start_line);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0)) {
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

std::size_t matching(const std::vector<Token>& tokens, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    if (t.kind != Tok::op || t.text.size() != 1) continue;
    char c = t.text[0];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return tokens.size();
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
