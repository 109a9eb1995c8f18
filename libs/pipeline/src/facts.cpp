#include "kforge/pipeline/facts.hpp"

#include <algorithm>
#include <map>
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
    std::string_view a_view = p.annotation;
    p.is_constexpr = a_view.size() >= 9 && a_view.substr(a_view.size() - 9) == "constexpr";
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

bool imports_bare(const std::vector<LogicalLine>& lines, std::string_view what) {
  for (const auto& l : lines) {
    const auto& t = l.tokens;
    if (t.size() < 4 || !is_name(t[0], "from") || !is_name(t[1], "triton") ||
        !is_name(t[2], "import"))
      continue;
    for (std::size_t i = 3; i < t.size(); ++i)
      if (is_name(t[i], what)) return true;
  }
  return false;
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

Result<KernelFacts> extract_facts(std::string_view code) {
  KF_TRY(auto lines, py::scan(code));
  bool bare_jit = imports_bare(lines, "jit");
  bool bare_autotune = imports_bare(lines, "autotune");
  bool bare_heuristics = imports_bare(lines, "heuristics");
  auto defs = py::find_defs(lines);
  KernelFacts facts;
  std::set<std::size_t> kernel_headers;
  for (const auto& d : defs) {
    if (d.is_class) continue;
    bool jit = false;
    Kernel k;
    std::set<std::string> tuned, heur;
    for (std::size_t di : d.decorators) {
      const auto& t = lines[di].tokens;
      std::size_t after = 0;
      std::string dn = decorator_name(t, after);
      if (dn == "triton.jit" || (dn == "jit" && bare_jit)) jit = true;
      if (dn == "triton.autotune" || (dn == "autotune" && bare_autotune)) {
        k.autotuned = true;
        for (std::size_t i = after; i + 2 < t.size(); ++i)
          if (is_name(t[i], "Config") && is_op(t[i + 1], "(") && is_op(t[i + 2], "{"))
            dict_keys(t, i + 2, tuned);
      }
      if (dn == "triton.heuristics" || (dn == "heuristics" && bare_heuristics)) {
        k.heuristics = true;
        for (std::size_t i = after; i < t.size(); ++i)
          if (is_op(t[i], "{")) {
            dict_keys(t, i, heur);
            break;
          }
      }
    }
    if (!jit) continue;
    const auto& h = lines[d.header].tokens;
    std::size_t name_at = is_name(h[0], "async") ? 2 : 1;
    k.name = d.name;
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
  }
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
