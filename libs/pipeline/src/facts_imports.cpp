#include "facts_internal.hpp"

namespace kforge::pipeline::facts_impl {

Imports::Imports(const std::vector<LogicalLine>& lines) {
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

std::string Imports::resolve(const std::string& name) const {
  auto dot = name.find('.');
  std::string head = name.substr(0, dot);
  std::string rest = dot == std::string::npos ? "" : name.substr(dot);
  auto it = bound_.find(head);
  if (it != bound_.end()) return it->second + rest;
  if (head == "gluon") return "triton.experimental.gluon" + rest;
  return name;
}

std::string Imports::dotted(const std::vector<Token>& t, std::size_t& i, std::size_t b) {
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

void Imports::statement(const std::vector<Token>& t, std::size_t a, std::size_t b) {
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

Decorators::Decorators(const FactsOptions& opts) {
  for (const auto& d : kBuiltinJits) roots_.emplace_back(d);
  for (const auto& d : opts.jit_decorators) roots_.push_back(d);
}

bool Decorators::jit(const std::string& resolved) const {
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

bool Decorators::in_package(const std::string& resolved, std::string_view leaf) const {
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

}  // namespace kforge::pipeline::facts_impl
