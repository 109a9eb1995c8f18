#include "facts_internal.hpp"

namespace kforge::pipeline::facts_impl {
namespace {

// String keys at the top level of the dict opening at t[open] ('{').
void dict_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out) {
  std::size_t close = py::matching(t, open);
  int depth = 0;
  for (std::size_t i = open; i < close && i < t.size(); ++i) {
    const auto& tok = t[i];
    depth += py::nesting(tok);
    if (depth == 1 && tok.kind == Tok::string && i + 1 < close && is_op(t[i + 1], ":"))
      out.insert(py::string_value(tok));
  }
}

}  // namespace

// The dotted name after '@' on a decorator line ("triton.jit"), and the index after it.
std::string decorator_name(const std::vector<Token>& t, std::size_t& after) {
  std::string name;
  std::size_t i = 1;
  while (i < t.size() && t[i].kind == Tok::name) {
    name.append(t[i].text);
    if (i + 1 < t.size() && is_op(t[i + 1], ".")) {
      name.push_back('.');
      i += 2;
    } else {
      ++i;
      break;
    }
  }
  after = i;
  return name;
}

std::vector<KernelParam> parse_params(std::string_view src, const std::vector<Token>& t,
                                      std::size_t name_at) {
  std::vector<KernelParam> params;
  std::size_t open = name_at + 1;
  if (open < t.size() && is_op(t[open], "[")) open = py::matching(t, open) + 1;  // def f[T](...)
  if (open >= t.size() || !is_op(t[open], "(")) return params;
  std::size_t close = py::matching(t, open);
  std::size_t seg = open + 1;
  int depth = 0;
  auto finish = [&](std::size_t a, std::size_t b) {
    if (a >= b) return;
    KernelParam p;
    std::size_t i = a;
    if (is_op(t[i], "*") || is_op(t[i], "**")) {
      p.star = std::string(t[i].text);
      ++i;
    }
    if (i >= b || t[i].kind != Tok::name) return;  // a bare '*' or '/' marker
    p.name = std::string(t[i].text);
    ++i;
    std::size_t eq = py::find_top_level(t, i, b, "=");
    if (i < eq && is_op(t[i], ":")) p.annotation = py::text_of(src, t, i + 1, eq);
    if (eq < b) p.default_value = py::text_of(src, t, eq + 1, b);
    // A string annotation ("tl.constexpr") means what its text says.
    std::string plain =
        i + 2 == eq && t[i + 1].kind == Tok::string ? py::string_value(t[i + 1]) : p.annotation;
    p.is_constexpr = plain.size() >= 9 && plain.substr(plain.size() - 9) == "constexpr";
    params.push_back(std::move(p));
  };
  for (std::size_t i = open + 1; i < close; ++i) {
    depth += py::nesting(t[i]);
    if (depth == 0 && is_op(t[i], ",")) {
      finish(seg, i);
      seg = i + 1;
    }
  }
  finish(seg, close);
  return params;
}

// Kernel launches `name[...](` in lines [a, b).
std::vector<std::string> launches_in(const std::vector<LogicalLine>& lines, std::size_t a,
                                     std::size_t b,
                                     const std::set<std::string, std::less<>>& names) {
  std::vector<std::string> found;
  for (std::size_t l = a; l < b && l < lines.size(); ++l) {
    const auto& t = lines[l].tokens;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].kind != Tok::name || !is_op(t[i + 1], "[")) continue;
      if (names.find(t[i].text) == names.end()) continue;
      std::size_t close = py::matching(t, i + 1);
      if (close + 1 < t.size() && is_op(t[close + 1], "(")) found.emplace_back(t[i].text);
    }
  }
  return found;
}

// Names referenced (not as attributes) in a def's body, the header's one-line body included.
std::set<std::string> references(const std::vector<LogicalLine>& lines, const py::Def& d) {
  std::set<std::string> out;
  auto collect = [&](const std::vector<Token>& t, std::size_t from) {
    for (std::size_t i = from; i < t.size(); ++i) {
      if (t[i].kind != Tok::name) continue;
      if (i > 0 && is_op(t[i - 1], ".")) continue;
      out.emplace(t[i].text);
    }
  };
  const auto& h = lines[d.header].tokens;
  collect(h, py::find_top_level(h, 0, h.size(), ":") + 1);
  for (std::size_t l = d.header + 1; l < d.body_end; ++l) collect(lines[l].tokens, 0);
  return out;
}

std::optional<Wrapping> wrapping(const std::vector<Token>& t) {
  if (t.size() < 6 || t[0].kind != Tok::name || !is_op(t[1], "=")) return std::nullopt;
  Wrapping w;
  w.target = std::string(t[0].text);
  std::size_t i = 2;
  while (i < t.size() && t[i].kind == Tok::name) {
    w.callee.append(t[i].text);
    if (i + 1 < t.size() && is_op(t[i + 1], ".")) {
      w.callee.push_back('.');
      i += 2;
    } else {
      ++i;
      break;
    }
  }
  if (w.callee.empty() || i >= t.size() || !is_op(t[i], "(")) return std::nullopt;
  w.open = i;
  std::size_t close = py::matching(t, i);
  if (close >= t.size()) return std::nullopt;
  std::size_t arg = i + 1;
  if (close + 1 < t.size() && is_op(t[close + 1], "(")) {  // callee(args...)(fn)
    arg = close + 2;
    close = py::matching(t, close + 1);
    if (close + 1 != t.size()) return std::nullopt;
  } else if (close + 1 != t.size()) {
    return std::nullopt;
  }
  if (arg + 1 >= t.size() || t[arg].kind != Tok::name ||
      !(is_op(t[arg + 1], ",") || is_op(t[arg + 1], ")")))
    return std::nullopt;
  w.wrapped = std::string(t[arg].text);
  return w;
}

// Autotune configs' and heuristics' keys from the call whose '(' is t[open].
void tuned_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out) {
  std::size_t close = py::matching(t, open);
  for (std::size_t i = open; i + 2 < close; ++i)
    if (is_name(t[i], "Config") && is_op(t[i + 1], "(") && is_op(t[i + 2], "{"))
      dict_keys(t, i + 2, out);
}
void heuristic_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out) {
  std::size_t close = py::matching(t, open);
  for (std::size_t i = open; i < close; ++i)
    if (is_op(t[i], "{")) {
      dict_keys(t, i, out);
      return;
    }
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace kforge::pipeline::facts_impl
