#include "kforge/pipeline/facts.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "python_scan.hpp"

namespace kforge::pipeline {
namespace {

using py::is_name;
using py::is_op;
using py::LogicalLine;
using py::Tok;
using py::Token;

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

// String keys at the top level of the dict opening at t[open] ('{').
void dict_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out) {
  std::size_t close = py::matching(t, open);
  int depth = 0;
  for (std::size_t i = open; i < close && i < t.size(); ++i) {
    const auto& tok = t[i];
    if (tok.kind == Tok::op && tok.text.size() == 1) {
      char c = tok.text[0];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      continue;
    }
    if (depth == 1 && tok.kind == Tok::string && i + 1 < close && is_op(t[i + 1], ":"))
      out.insert(py::string_value(tok));
  }
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
    std::size_t eq = b;
    int d = 0;
    for (std::size_t k = i; k < b; ++k) {
      if (t[k].kind == Tok::op && t[k].text.size() == 1) {
        char c = t[k].text[0];
        if (c == '(' || c == '[' || c == '{') ++d;
        if (c == ')' || c == ']' || c == '}') --d;
        if (c == '=' && d == 0) {
          eq = k;
          break;
        }
      }
    }
    if (i < eq && is_op(t[i], ":")) p.annotation = py::text_of(src, t, i + 1, eq);
    if (eq < b) p.default_value = py::text_of(src, t, eq + 1, b);
    // A string annotation ("tl.constexpr") means what its text says.
    std::string plain =
        i + 2 == eq && t[i + 1].kind == Tok::string ? py::string_value(t[i + 1]) : p.annotation;
    p.is_constexpr = plain.size() >= 9 && plain.substr(plain.size() - 9) == "constexpr";
    params.push_back(std::move(p));
  };
  for (std::size_t i = open + 1; i < close; ++i) {
    const auto& tok = t[i];
    if (tok.kind == Tok::op && tok.text.size() == 1) {
      char c = tok.text[0];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (c == ',' && depth == 0) {
        finish(seg, i);
        seg = i + 1;
      }
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
  std::size_t colon = h.size();
  int depth = 0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h[i].kind != Tok::op || h[i].text.size() != 1) continue;
    char c = h[i].text[0];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ':' && depth == 0) {
      colon = i;
      break;
    }
  }
  collect(h, colon + 1);
  for (std::size_t l = d.header + 1; l < d.body_end; ++l) collect(lines[l].tokens, 0);
  return out;
}

// What the names a module binds by import stand for, as dotted names: `import triton.language
// as tl` binds tl to "triton.language", `from triton.experimental import gluon` binds gluon to
// "triton.experimental.gluon". Every import statement counts, nested ones too, in source order
// (a later binding wins). `triton` or `gluon` imported from any module is Triton's (packages
// such as vllm.triton_utils re-export it). A relative `from .M import jit` whose module M ends in
// jit, runtime or _runtime is Triton's jit re-exported inside a Triton-derived package (Triton's
// own `from ..runtime.jit import jit`, Gluon's `from ._runtime import jit`): it binds "triton.jit".
class Imports {
 public:
  explicit Imports(const std::vector<LogicalLine>& lines) {
    for (const auto& l : lines) {
      const auto& t = l.tokens;
      std::size_t a = 0;
      for (std::size_t i = 0; i <= t.size(); ++i) {
        if (i == t.size() || is_op(t[i], ";")) {
          statement(t, a, i);
          a = i + 1;
        }
      }
    }
  }

  // The dotted name `name` stands for: its first part replaced by what it is bound to. An
  // unbound `gluon` is Triton's (snippets often leave the import out); other unbound names
  // stand for themselves.
  std::string resolve(const std::string& name) const {
    auto dot = name.find('.');
    std::string head = name.substr(0, dot);
    std::string rest = dot == std::string::npos ? "" : name.substr(dot);
    auto it = bound_.find(head);
    if (it != bound_.end()) return it->second + rest;
    if (head == "gluon") return "triton.experimental.gluon" + rest;
    return name;
  }

 private:
  // A dotted name starting at t[i], up to b; i is left after it.
  static std::string dotted(const std::vector<Token>& t, std::size_t& i, std::size_t b) {
    std::string out;
    while (i < b && t[i].kind == Tok::name) {
      out.append(t[i].text);
      if (i + 2 < b && is_op(t[i + 1], ".") && t[i + 2].kind == Tok::name) {
        out.push_back('.');
        i += 2;
      } else {
        ++i;
        break;
      }
    }
    return out;
  }

  void statement(const std::vector<Token>& t, std::size_t a, std::size_t b) {
    if (a >= b) return;
    if (is_name(t[a], "import")) {
      for (std::size_t i = a + 1; i < b;) {
        std::string module = dotted(t, i, b);
        if (module.empty()) return;
        if (i + 1 < b && is_name(t[i], "as") && t[i + 1].kind == Tok::name) {
          bound_[std::string(t[i + 1].text)] = module;
          i += 2;
        } else {
          std::string head = module.substr(0, module.find('.'));
          bound_[head] = head;
        }
        if (i < b && is_op(t[i], ","))
          ++i;
        else
          break;
      }
      return;
    }
    if (!is_name(t[a], "from")) return;
    std::size_t i = a + 1;
    std::size_t dots = 0;
    while (i < b && t[i].kind == Tok::op && t[i].text.find_first_not_of('.') == std::string::npos)
      dots += t[i++].text.size();
    std::string module = dotted(t, i, b);
    if (i >= b || !is_name(t[i], "import")) return;
    std::string last = module.substr(module.rfind('.') + 1);
    bool triton_runtime = last == "jit" || last == "runtime" || last == "_runtime";
    for (++i; i < b; ++i) {
      if (t[i].kind != Tok::name) continue;  // '(', ')', ',', '*'
      std::string name(t[i].text);
      std::string alias = name;
      if (i + 2 < b && is_name(t[i + 1], "as") && t[i + 2].kind == Tok::name) {
        alias = std::string(t[i + 2].text);
        i += 2;
      }
      if (name == "triton")  // a package re-exporting Triton (vllm.triton_utils)
        bound_[alias] = "triton";
      else if (name == "gluon")
        bound_[alias] = "triton.experimental.gluon";
      else if (dots == 0)
        bound_[alias] = module.empty() ? name : module + "." + name;
      else if (name == "jit" && triton_runtime)
        bound_[alias] = "triton.jit";
      else
        bound_[alias] = std::string(dots, '.') + module + "." + name;  // resolves to nothing
    }
  }

  std::map<std::string, std::string, std::less<>> bound_;
};

// What a decorator (or a call's callee) is, by the dotted name it resolves to.
class Decorators {
 public:
  explicit Decorators(const FactsOptions& opts) {
    roots_.push_back("triton.jit");
    for (const auto& d : opts.jit_decorators) roots_.push_back(d);
  }
  // Triton's jit or a configured one: the name itself, or its package's `...<sub>.jit` (so
  // "triton.jit" covers triton.runtime.jit.jit and triton.experimental.gluon.jit).
  bool jit(const std::string& resolved) const {
    for (const auto& r : roots_) {
      if (resolved == r) return true;
      auto dot = r.rfind('.');
      if (dot == std::string::npos) continue;
      std::string_view leaf = std::string_view(r).substr(dot);  // ".jit"
      if (resolved.size() > r.size() && resolved.compare(0, dot + 1, r, 0, dot + 1) == 0 &&
          std::string_view(resolved).substr(resolved.size() - leaf.size()) == leaf)
        return true;
    }
    return false;
  }
  // `triton.autotune`, `triton.runtime.autotuner.autotune`, ... (leaf "autotune" or
  // "heuristics") in Triton or a configured jit's package.
  bool in_package(const std::string& resolved, std::string_view leaf) const {
    if (resolved.size() <= leaf.size() + 1 ||
        std::string_view(resolved).substr(resolved.size() - leaf.size()) != leaf ||
        resolved[resolved.size() - leaf.size() - 1] != '.')
      return false;
    for (const auto& r : roots_) {
      auto dot = r.rfind('.');
      if (dot != std::string::npos && resolved.compare(0, dot + 1, r, 0, dot + 1) == 0) return true;
    }
    return false;
  }

 private:
  std::vector<std::string> roots_;
};

// A call-style wrapping `name = callee(args...)(fn)` or `name = callee(fn, ...)`, read from a
// logical line: callee's dotted name, the index of its '(' and the wrapped function's name.
struct Wrapping {
  std::string target;    // the assigned name
  std::string callee;    // dotted, as written
  std::size_t open = 0;  // its '('
  std::string wrapped;   // fn
};

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

std::string param_text(const KernelParam& p) {
  std::string s = p.star + p.name;
  if (!p.annotation.empty()) s += ": " + p.annotation;
  if (!p.default_value.empty()) s += (p.annotation.empty() ? "=" : " = ") + p.default_value;
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

bool KernelFacts::defines(std::string_view kernel_name) const {
  return std::any_of(kernels.begin(), kernels.end(),
                     [&](const Kernel& k) { return k.name == kernel_name; });
}

std::vector<std::string> KernelFacts::kernel_names() const {
  std::vector<std::string> v;
  for (const auto& k : kernels) v.push_back(k.name);
  return v;
}

std::string KernelFacts::signatures_text() const {
  if (kernels.empty()) return "(none: the code defines no @triton.jit function)";
  std::string out;
  for (const auto& k : kernels) {
    std::vector<std::string> ps;
    std::vector<std::string> tuned, heur;
    for (const auto& p : k.params) {
      ps.push_back(param_text(p));
      if (p.set_by_autotune) tuned.push_back(p.name);
      if (p.set_by_heuristics) heur.push_back(p.name);
    }
    std::string name = k.qualifier.empty() ? k.name : k.qualifier + "." + k.name;
    out += "- `" + name + "(" + join(ps) + ")` (line " + std::to_string(k.line) + ")";
    std::vector<std::string> notes;
    if (k.autotuned)
      notes.push_back(tuned.empty() ? "@triton.autotune chooses its configs"
                                    : "@triton.autotune sets " + join(tuned));
    if (k.heuristics)
      notes.push_back(heur.empty() ? "@triton.heuristics sets some meta-parameters"
                                   : "@triton.heuristics sets " + join(heur));
    if (!notes.empty()) out += ": " + join(notes, "; ");
    out += "\n";
  }
  if (!launchers.empty()) {
    out += "\nLaunch sites already in the code:\n";
    for (const auto& l : launchers)
      out += "- `" + l.name + "` (line " + std::to_string(l.line) + ") launches `" +
             join(l.kernels, "`, `") + "`\n";
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

nlohmann::json KernelFacts::to_json() const {
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : kernels) {
    nlohmann::json ps = nlohmann::json::array();
    for (const auto& p : k.params)
      ps.push_back({{"name", p.name},
                    {"annotation", p.annotation},
                    {"default", p.default_value},
                    {"constexpr", p.is_constexpr},
                    {"autotune", p.set_by_autotune},
                    {"heuristics", p.set_by_heuristics},
                    {"star", p.star}});
    ks.push_back({{"name", k.name},
                  {"line", k.line},
                  {"qualifier", k.qualifier},
                  {"autotuned", k.autotuned},
                  {"heuristics", k.heuristics},
                  {"params", ps}});
  }
  nlohmann::json ls = nlohmann::json::array();
  for (const auto& l : launchers)
    ls.push_back({{"name", l.name}, {"line", l.line}, {"kernels", l.kernels}});
  return {{"kernels", ks}, {"launchers", ls}};
}

Result<KernelFacts> extract_facts(std::string_view code, const FactsOptions& opts) {
  KF_TRY(auto lines, py::scan(code));
  const Imports imports(lines);
  const Decorators decorators(opts);
  auto defs = py::find_defs(lines);
  KernelFacts facts;
  std::set<std::size_t> kernel_headers;
  auto make_kernel = [&](const py::Def& d, Kernel k, const std::set<std::string>& tuned,
                         const std::set<std::string>& heur) {
    const auto& h = lines[d.header].tokens;
    std::size_t name_at = is_name(h[0], "async") ? 2 : 1;
    if (k.name.empty()) k.name = d.name;
    k.line = d.line;
    k.params = parse_params(code, h, name_at);
    for (auto& p : k.params) {
      p.set_by_autotune = tuned.count(p.name) > 0;
      p.set_by_heuristics = heur.count(p.name) > 0;
    }
    for (const auto& outer : defs) {
      if (outer.is_class && outer.header < d.header && d.header < outer.body_end &&
          outer.indent < d.indent)
        k.qualifier = outer.name;
    }
    kernel_headers.insert(d.header);
    facts.kernels.push_back(std::move(k));
  };
  for (const auto& d : defs) {
    if (d.is_class) continue;
    bool jit = false;
    Kernel k;
    std::set<std::string> tuned, heur;
    for (std::size_t di : d.decorators) {
      const auto& t = lines[di].tokens;
      std::size_t after = 0;
      std::string dn = imports.resolve(decorator_name(t, after));
      if (decorators.jit(dn)) jit = true;
      if (decorators.in_package(dn, "autotune")) {
        k.autotuned = true;
        if (after < t.size() && is_op(t[after], "(")) tuned_keys(t, after, tuned);
      }
      if (decorators.in_package(dn, "heuristics")) {
        k.heuristics = true;
        if (after < t.size() && is_op(t[after], "(")) heuristic_keys(t, after, heur);
      }
    }
    if (jit) make_kernel(d, std::move(k), tuned, heur);
  }
  // Call-style: `name = triton.jit(fn)`, then `name = triton.heuristics({...})(name)` and the
  // like, in source order. fn is the last def of that name before the line.
  for (std::size_t l = 0; l < lines.size(); ++l) {
    auto w = wrapping(lines[l].tokens);
    if (!w) continue;
    std::string callee = imports.resolve(w->callee);
    if (decorators.jit(callee)) {
      const py::Def* fn = nullptr;
      for (const auto& d : defs)
        if (!d.is_class && d.name == w->wrapped && d.line < lines[l].line) fn = &d;
      if (fn == nullptr || kernel_headers.count(fn->header) > 0) continue;
      Kernel k;
      k.name = w->target;
      make_kernel(*fn, std::move(k), {}, {});
      continue;
    }
    bool autotune = decorators.in_package(callee, "autotune");
    bool heuristics = decorators.in_package(callee, "heuristics");
    if (!autotune && !heuristics) continue;
    for (auto& k : facts.kernels) {
      if (k.name != w->wrapped) continue;
      std::set<std::string> keys;
      if (autotune) tuned_keys(lines[l].tokens, w->open, keys);
      if (heuristics) heuristic_keys(lines[l].tokens, w->open, keys);
      (autotune ? k.autotuned : k.heuristics) = true;
      for (auto& p : k.params) {
        if (keys.count(p.name) == 0) continue;
        (autotune ? p.set_by_autotune : p.set_by_heuristics) = true;
      }
    }
  }
  std::stable_sort(facts.kernels.begin(), facts.kernels.end(),
                   [](const Kernel& a, const Kernel& b) { return a.line < b.line; });
  std::set<std::string, std::less<>> names;
  for (const auto& k : facts.kernels) names.insert(k.name);
  if (!names.empty()) {
    for (const auto& d : defs) {
      if (d.is_class || kernel_headers.count(d.header) > 0) continue;
      auto found = launches_in(lines, d.header, d.body_end, names);
      if (found.empty()) continue;
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      std::string name = d.name;
      for (const auto& outer : defs)
        if (outer.is_class && outer.header < d.header && d.header < outer.body_end &&
            outer.indent < d.indent)
          name = outer.name + "." + d.name;
      facts.launchers.push_back(Launcher{name, d.line, found});
    }
  }
  return facts;
}

std::optional<Rejection> check_generation(const KernelFacts& facts, std::string_view wrapper,
                                          std::string_view test) {
  if (facts.kernels.empty())
    return Rejection{"no_kernel_launch", "the code defines no @triton.jit kernel to launch"};
  auto w = py::scan(wrapper);
  if (!w.ok()) return Rejection{"python_syntax", "kernel_wrapper: " + w.error().message};
  auto t = py::scan(test);
  if (!t.ok()) return Rejection{"python_syntax", "unitest_code: " + t.error().message};
  std::set<std::string, std::less<>> kernel_names;
  for (const auto& k : facts.kernels) kernel_names.insert(k.name);
  const std::string expected = join(facts.kernel_names());

  auto wdefs = py::find_defs(*w);
  for (const auto& d : wdefs) {
    if (!d.is_class && kernel_names.count(d.name) > 0)
      return Rejection{"kernel_redefined",
                       "kernel_wrapper line " + std::to_string(d.line) + " redefines `" + d.name +
                           "`, a kernel of the code: the wrapper must launch the code's kernel, "
                           "not a copy"};
  }
  if (launches_in(*w, 0, w->size(), kernel_names).empty())
    return Rejection{"no_kernel_launch",
                     "kernel_wrapper launches none of the code's kernels with "
                     "`kernel[grid](...)` (kernels: " +
                         expected + ")"};

  std::set<std::string> wrapper_names;
  for (const auto& d : wdefs)
    if (d.indent == 0) wrapper_names.insert(d.name);
  for (const auto& l : *w) {
    const auto& tk = l.tokens;
    if (l.indent == 0 && tk.size() >= 3 && tk[0].kind == Tok::name && is_op(tk[1], "="))
      wrapper_names.emplace(tk[0].text);
  }
  if (wrapper_names.empty())
    return Rejection{"test_does_not_call_wrapper",
                     "kernel_wrapper defines no top-level function for the test to call"};

  auto tdefs = py::find_defs(*t);
  std::map<std::string, std::set<std::string>> refs;  // top-level test-code functions
  std::vector<std::string> tests;
  for (const auto& d : tdefs) {
    if (d.indent != 0 || d.is_class) continue;
    refs[d.name] = references(*t, d);
    if (d.name.rfind("test_", 0) == 0) tests.push_back(d.name);
  }
  if (tests.empty())
    return Rejection{"no_test_function",
                     "unitest_code defines no top-level `def test_...():` function"};
  for (const auto& name : tests) {
    std::set<std::string> seen{name};
    std::vector<std::string> todo{name};
    while (!todo.empty()) {
      std::string f = todo.back();
      todo.pop_back();
      for (const auto& r : refs[f]) {
        if (wrapper_names.count(r) > 0 && refs.count(r) == 0) return std::nullopt;
        if (refs.count(r) > 0 && seen.insert(r).second) todo.push_back(r);
      }
    }
  }
  return Rejection{"test_does_not_call_wrapper",
                   "no test_ function of unitest_code (" + join(tests) + ") calls the wrapper (" +
                       join(std::vector<std::string>(wrapper_names.begin(), wrapper_names.end())) +
                       ")"};
}

std::optional<Rejection> check_analysis(const KernelFacts& facts, const nlohmann::json& analysis) {
  const nlohmann::json* launches = nullptr;
  if (analysis.is_object() && analysis.contains("analysis") && analysis["analysis"].is_object() &&
      analysis["analysis"].contains("kernel_launches"))
    launches = &analysis["analysis"]["kernel_launches"];
  if (launches == nullptr || !launches->is_array()) return std::nullopt;  // the schema's business
  for (const auto& item : *launches) {
    if (!item.is_object() || !item.contains("kernel") || !item["kernel"].is_string()) continue;
    std::string name = item["kernel"].get<std::string>();
    auto cut = name.find_first_of("[(");
    if (cut != std::string::npos) name.resize(cut);
    while (!name.empty() && (name.back() == ' ' || name.back() == '`')) name.pop_back();
    while (!name.empty() && (name.front() == ' ' || name.front() == '`')) name.erase(0, 1);
    if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
    if (!facts.defines(name))
      return Rejection{
          "unknown_kernel",
          "analysis.kernel_launches names `" + item["kernel"].get<std::string>() +
              "`, which the code does not define (kernels: " + join(facts.kernel_names()) + ")"};
  }
  return std::nullopt;
}

}  // namespace kforge::pipeline
