#include "kforge/pipeline/facts.hpp"

#include <algorithm>
#include <set>

#include "facts_internal.hpp"

namespace kforge::pipeline {

using namespace facts_impl;

namespace {

std::string param_text(const KernelParam& p) {
  std::string s = p.star + p.name;
  if (!p.annotation.empty()) s += ": " + p.annotation;
  if (!p.default_value.empty()) s += (p.annotation.empty() ? "=" : " = ") + p.default_value;
  return s;
}

}  // namespace

bool KernelFacts::defines(std::string_view kernel_name) const {
  return std::any_of(kernels.begin(), kernels.end(),
                     [&](const Kernel& k) { return k.name == kernel_name; });
}

KernelFacts KernelFacts::names_only() const {
  KernelFacts out;
  out.kernels.reserve(kernels.size());
  for (const auto& k : kernels) {
    Kernel n;
    n.name = k.name;
    n.line = k.line;
    n.qualifier = k.qualifier;
    out.kernels.push_back(std::move(n));
  }
  return out;
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

}  // namespace kforge::pipeline
