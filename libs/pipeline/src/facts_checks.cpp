#include <map>
#include <set>

#include "facts_internal.hpp"
#include "kforge/pipeline/facts.hpp"

namespace kforge::pipeline {

using namespace facts_impl;

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
