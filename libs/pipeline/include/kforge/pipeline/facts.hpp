#pragma once
// Kernel facts: what a sample's code defines, read from its Python source without running it.
//
// Before any LLM call the pipeline extracts the kernels, the functions a Triton jit makes, and
// their parameters (constexpr marked, and which ones @triton.autotune configs or
// @triton.heuristics set) and puts them into the prompts. A kernel is a def decorated with, or
// wrapped call-style (`name = triton.jit(fn)`) by, a decorator that resolves through the file's
// imports to Triton's jit: `triton.jit`, `gluon.jit` (triton.experimental.gluon), `jit` imported
// from any Triton module or relatively from a Triton-derived package's jit/runtime/_runtime
// module, with or without arguments, stacked with autotune and heuristics; to Triton-distributed's
// `triton_dist.jit` (the same forms); or to one of FactsOptions::jit_decorators. The same facts
// reject a stage's output before any GPU time is spent: an analysis naming kernels the code does
// not define, a wrapper that launches none of the code's kernels, a test without a test_ function
// calling the wrapper.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::pipeline {

struct KernelParam {
  std::string name;
  std::string annotation;     // as written, e.g. "tl.constexpr"; empty if none
  std::string default_value;  // as written; empty if none
  bool is_constexpr = false;
  bool set_by_autotune = false;    // a key of a literal triton.Config({...}) of its autotuner
  bool set_by_heuristics = false;  // a key of its @triton.heuristics({...})
  std::string star;                // "", "*" or "**"
};

struct Kernel {
  std::string name;
  int line = 0;  // 1-based line of the def
  std::vector<KernelParam> params;
  bool autotuned = false;
  bool heuristics = false;
  std::string qualifier;  // the enclosing class, if the kernel is a method (e.g. a staticmethod)
};

// A Python function of the code that launches one of its kernels.
struct Launcher {
  std::string name;
  int line = 0;
  std::vector<std::string> kernels;
};

struct KernelFacts {
  std::vector<Kernel> kernels;
  std::vector<Launcher> launchers;

  bool defines(std::string_view kernel_name) const;
  std::vector<std::string> kernel_names() const;
  // The text given to prompts as {{kernel_signatures}}: one bullet per kernel, then the launch
  // sites the code already has.
  std::string signatures_text() const;
  nlohmann::json to_json() const;
  // The facts the answer checks read (check_analysis, check_generation: the kernels' names),
  // without parameters and launchers: what a call waiting for its answer keeps.
  KernelFacts names_only() const;
};

struct FactsOptions {
  // Jit decorators of other packages built on Triton (pipeline.jit_decorators), as dotted names,
  // e.g. "mylib.jit". Like "triton.jit", each also covers `jit` of its package's submodules
  // ("mylib.jit" covers `from mylib.jit import jit`). triton_dist.jit needs no configuration.
  std::vector<std::string> jit_decorators;
};

// Errors: kind "python_syntax" (an unterminated string or unbalanced bracket), with the line.
// A source without kernels is not an error: kernels is empty. Kernels are in source order of
// their defs.
Result<KernelFacts> extract_facts(std::string_view code, const FactsOptions& opts = {});

// Why a stage output was rejected. `kind` is stable, for counting; `message` says what and where.
struct Rejection {
  std::string kind;  // no_kernel_launch, kernel_redefined, no_test_function,
                     // test_does_not_call_wrapper, unknown_kernel, python_syntax
  std::string message;
};

// The checks on a stage-2 output (kernel_wrapper and unitest_code). nullopt: accepted.
std::optional<Rejection> check_generation(const KernelFacts& facts, std::string_view wrapper,
                                          std::string_view test);

// The check on a v2 analysis ({"analysis": {...}}): every kernel it lists in kernel_launches
// must be one the code defines. nullopt: accepted.
std::optional<Rejection> check_analysis(const KernelFacts& facts, const nlohmann::json& analysis);

}  // namespace kforge::pipeline
