#pragma once
// Internal: the parts of kernel-fact extraction (facts.hpp), split by what they do:
//   facts_imports.cpp   what a decorator or callee resolves to through the file's imports
//                       (Imports) and whether that is a jit, autotune or heuristics (Decorators)
//   facts_tokens.cpp    reading pieces of a def from its tokens: decorator names, parameters,
//                       autotune and heuristics keys, call-style wrappings, launches, references
//   facts.cpp           extract_facts, and the facts as prompt text and JSON
//   facts_checks.cpp    the checks on stage outputs (check_generation, check_analysis)

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/pipeline/facts.hpp"
#include "python_scan.hpp"

namespace kforge::pipeline::facts_impl {

using py::is_name;
using py::is_op;
using py::LogicalLine;
using py::Tok;
using py::Token;

// What the names a module binds by import stand for, as dotted names: `import triton.language
// as tl` binds tl to "triton.language", `from triton.experimental import gluon` binds gluon to
// "triton.experimental.gluon". Every import statement counts, nested ones too, in source order
// (a later binding wins). `triton` or `gluon` imported from any module is Triton's (packages
// such as vllm.triton_utils re-export it). A relative `from .M import jit` whose module M ends in
// jit, runtime or _runtime is Triton's jit re-exported inside a Triton-derived package (Triton's
// own `from ..runtime.jit import jit`, Gluon's `from ._runtime import jit`): it binds "triton.jit".
class Imports {
 public:
  explicit Imports(const std::vector<LogicalLine>& lines);

  // The dotted name `name` stands for: its first part replaced by what it is bound to. An
  // unbound `gluon` is Triton's (snippets often leave the import out); other unbound names
  // stand for themselves.
  std::string resolve(const std::string& name) const;

 private:
  // A dotted name starting at t[i], up to b; i is left after it.
  static std::string dotted(const std::vector<Token>& t, std::size_t& i, std::size_t b);
  void statement(const std::vector<Token>& t, std::size_t a, std::size_t b);

  std::map<std::string, std::string, std::less<>> bound_;
};

// What a decorator (or a call's callee) is, by the dotted name it resolves to.
// The jits known without configuration: Triton's own, and Triton-distributed's (ByteDance-Seed),
// whose `@triton_dist.jit`, `@triton_dist.jit(...)` and `from triton_dist.jit import jit` wrap
// Triton's and make kernels like it.
inline constexpr std::string_view kBuiltinJits[] = {"triton.jit", "triton_dist.jit"};

class Decorators {
 public:
  explicit Decorators(const FactsOptions& opts);
  // Triton's jit or a configured one: the name itself, or its package's `...<sub>.jit` (so
  // "triton.jit" covers triton.runtime.jit.jit and triton.experimental.gluon.jit).
  bool jit(const std::string& resolved) const;
  // `triton.autotune`, `triton.runtime.autotuner.autotune`, ... (leaf "autotune" or
  // "heuristics") in Triton or a configured jit's package.
  bool in_package(const std::string& resolved, std::string_view leaf) const;

 private:
  std::vector<std::string> roots_;
};

// The dotted name after '@' on a decorator line ("triton.jit"), and the index after it.
std::string decorator_name(const std::vector<Token>& t, std::size_t& after);

// The parameters of the def whose name is t[name_at].
std::vector<KernelParam> parse_params(std::string_view src, const std::vector<Token>& t,
                                      std::size_t name_at);

// Kernel launches `name[...](` in lines [a, b).
std::vector<std::string> launches_in(const std::vector<LogicalLine>& lines, std::size_t a,
                                     std::size_t b,
                                     const std::set<std::string, std::less<>>& names);

// Names referenced (not as attributes) in a def's body, the header's one-line body included.
std::set<std::string> references(const std::vector<LogicalLine>& lines, const py::Def& d);

// A call-style wrapping `name = callee(args...)(fn)` or `name = callee(fn, ...)`, read from a
// logical line: callee's dotted name, the index of its '(' and the wrapped function's name.
struct Wrapping {
  std::string target;    // the assigned name
  std::string callee;    // dotted, as written
  std::size_t open = 0;  // its '('
  std::string wrapped;   // fn
};

std::optional<Wrapping> wrapping(const std::vector<Token>& t);

// Autotune configs' and heuristics' keys from the call whose '(' is t[open].
void tuned_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out);
void heuristic_keys(const std::vector<Token>& t, std::size_t open, std::set<std::string>& out);

// The items of v separated by sep.
std::string join(const std::vector<std::string>& v, const char* sep = ", ");

}  // namespace kforge::pipeline::facts_impl
