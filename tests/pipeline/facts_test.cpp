// Kernel facts: extraction checked against Python's own parser over the whole TritonBench-G
// corpus, and the stage-output checks on hand-written cases.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "kforge/pipeline/facts.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

using nlohmann::json;

// Every record of `corpus` (code in field "output"); counts the records and kernels checked.
void check_corpus(const std::filesystem::path& corpus, int& checked, int& kernels,
                  const FactsOptions& opts = {}) {
  SCOPED_TRACE(corpus.string());
  auto script = test::source_dir() / "tests" / "pipeline" / "jit_facts.py";
  std::vector<std::string> argv = {"/usr/bin/python3", script.string(), corpus.string(), "output"};
  for (const auto& d : opts.jit_decorators) {
    argv.push_back("--jit-decorator");
    argv.push_back(d);
  }
  auto r = test::run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json records = json::parse(test::read_text(corpus));
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    json ref = json::parse(line);
    int i = ref["index"];
    ASSERT_FALSE(ref.contains("error")) << ref.dump();
    std::string code = records[static_cast<std::size_t>(i)]["output"];
    auto facts = extract_facts(code, opts);
    ASSERT_TRUE(facts.ok()) << "record " << i << ": " << facts.error().message;
    ASSERT_EQ(facts->kernels.size(), ref["kernels"].size()) << "record " << i;
    for (std::size_t k = 0; k < facts->kernels.size(); ++k) {
      const Kernel& got = facts->kernels[k];
      const json& want = ref["kernels"][k];
      SCOPED_TRACE("record " + std::to_string(i) + " kernel " + got.name);
      EXPECT_EQ(got.name, want["name"].get<std::string>());
      EXPECT_EQ(got.line, want["line"].get<int>());
      ASSERT_EQ(got.params.size(), want["params"].size());
      std::set<std::string> tuned, heur;
      for (std::size_t p = 0; p < got.params.size(); ++p) {
        EXPECT_EQ(got.params[p].name, want["params"][p][0].get<std::string>());
        EXPECT_EQ(got.params[p].is_constexpr, want["params"][p][1].get<bool>())
            << got.params[p].name << ": " << got.params[p].annotation;
        if (got.params[p].set_by_autotune) tuned.insert(got.params[p].name);
        if (got.params[p].set_by_heuristics) heur.insert(got.params[p].name);
      }
      std::set<std::string> want_tuned, want_heur;
      for (const auto& n : want["autotune"]) want_tuned.insert(n.get<std::string>());
      for (const auto& n : want["heuristics"]) want_heur.insert(n.get<std::string>());
      // Only keys that are parameters count (a Config may set num_warps-like extras).
      std::set<std::string> params;
      for (const auto& p : got.params) params.insert(p.name);
      std::set<std::string> want_tuned_params, want_heur_params;
      for (const auto& n : want_tuned)
        if (params.count(n)) want_tuned_params.insert(n);
      for (const auto& n : want_heur)
        if (params.count(n)) want_heur_params.insert(n);
      EXPECT_EQ(tuned, want_tuned_params);
      EXPECT_EQ(heur, want_heur_params);
      ++kernels;
    }
    ++checked;
  }
}

TEST(Facts, MatchPythonsParserOnEveryCorpusRecord) {
  int checked = 0, kernels = 0;
  check_corpus(test::small_corpus(), checked, kernels);
  EXPECT_EQ(checked, test::kSmallCorpusRecords);
  EXPECT_EQ(kernels, 44);
  // And every record of TritonBench-G (its code, vendored under tests/data).
  checked = kernels = 0;
  check_corpus(test::tritonbench_g_code(), checked, kernels);
  EXPECT_EQ(checked, test::kTritonBenchGRecords);
  EXPECT_EQ(kernels, 287);
}

constexpr const char* kTricky = R"PY(
import triton
import triton.language as tl
from triton import jit

DOC = """
@triton.jit
def not_a_kernel(x):  # inside a string
    pass
"""

# @triton.jit
# def commented_out(x): pass

@triton.autotune(
    configs=[triton.Config({'BLOCK_M': 64, "BLOCK_N": 32}, num_warps=4),
             triton.Config({'BLOCK_M': 128, 'BLOCK_N': 64}, num_warps=8)],
    key=['M', 'N'],
)
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am: int,  # a comment with a (paren
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr = 32,
                  EVEN_K: tl.constexpr = True):
    s = 'a string with ) and ] in it'
    pass

class Ops:
    @staticmethod
    @triton.jit
    def scale(x_ptr, n, alpha=1.0, *, BLOCK: tl.constexpr):
        pass

@jit
def bare(x, \
         y):
    pass

def launch(a, b, c):
    grid = lambda meta: (triton.cdiv(a.shape[0], meta['BLOCK_M']),)
    matmul_kernel[grid](a, b, c, 1, 2, 3, 4)
    Ops.scale[(1,)](a, 1, BLOCK=16)
)PY";

TEST(Facts, ReadsDecoratorsParametersAndLaunchSitesWithoutBeingFooled) {
  auto f = extract_facts(kTricky);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->kernel_names(), (std::vector<std::string>{"matmul_kernel", "scale", "bare"}));
  const Kernel& mm = f->kernels[0];
  EXPECT_TRUE(mm.autotuned);
  EXPECT_TRUE(mm.heuristics);
  ASSERT_EQ(mm.params.size(), 11u);
  EXPECT_EQ(mm.params[6].name, "stride_am");
  EXPECT_EQ(mm.params[6].annotation, "int");
  EXPECT_FALSE(mm.params[6].is_constexpr);
  EXPECT_TRUE(mm.params[7].is_constexpr);
  EXPECT_TRUE(mm.params[7].set_by_autotune);   // BLOCK_M
  EXPECT_TRUE(mm.params[8].set_by_autotune);   // BLOCK_N
  EXPECT_FALSE(mm.params[9].set_by_autotune);  // BLOCK_K
  EXPECT_EQ(mm.params[9].default_value, "32");
  EXPECT_TRUE(mm.params[10].set_by_heuristics);  // EVEN_K
  const Kernel& scale = f->kernels[1];
  EXPECT_EQ(scale.qualifier, "Ops");
  ASSERT_EQ(scale.params.size(), 4u);
  EXPECT_EQ(scale.params[2].default_value, "1.0");
  EXPECT_EQ(scale.params[3].name, "BLOCK");
  EXPECT_TRUE(scale.params[3].is_constexpr);
  EXPECT_EQ(f->kernels[2].params.size(), 2u);
  ASSERT_EQ(f->launchers.size(), 1u);
  EXPECT_EQ(f->launchers[0].name, "launch");
  EXPECT_EQ(f->launchers[0].kernels, (std::vector<std::string>{"matmul_kernel", "scale"}));

  std::string text = f->signatures_text();
  EXPECT_NE(text.find("- `matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am: int, "
                      "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr = 32, "
                      "EVEN_K: tl.constexpr = True)` (line "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("@triton.autotune sets BLOCK_M, BLOCK_N; @triton.heuristics sets EVEN_K"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- `Ops.scale(x_ptr, n, alpha=1.0, BLOCK: tl.constexpr)`"), std::string::npos)
      << text;
  EXPECT_NE(text.find("`launch` (line 40) launches `matmul_kernel`, `scale`"), std::string::npos)
      << text;
}

TEST(Facts, BrokenSourceIsAnErrorWithItsLine) {
  auto f = extract_facts("import triton\n\ns = '''never closed\n\n");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, "python_syntax");
  EXPECT_EQ(f.error().message, "line 3: unterminated string");
  auto g = extract_facts("def f(x:\n    pass\n]\n");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("line 3: unbalanced ']'"), std::string::npos);
  auto none = extract_facts("import torch\n\ndef f(x):\n    return x\n");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->kernels.empty());
  EXPECT_EQ(none->signatures_text(), "(none: the code defines no @triton.jit function)");
}

// One snippet per way a Triton kernel is written in the wild, and near misses that are not
// kernels. Each must give the same facts as Python's own parser (jit_facts.py) and what the
// comment says.
struct Form {
  const char* what;
  const char* code;
  std::vector<std::string> kernels;  // with no configuration
};

const std::vector<Form>& forms() {
  static const std::vector<Form> f = {
      {"gluon.jit from triton.experimental",
       "from triton.experimental import gluon\n"
       "from triton.experimental.gluon import language as gl\n\n"
       "@gluon.jit\ndef g(x_ptr, BLOCK: gl.constexpr):\n    pass\n",
       {"g"}},
      {"gluon.jit with arguments, module imported whole",
       "import triton.experimental.gluon as glu\n\n"
       "@glu.jit(repr=lambda meta: 'g')\ndef g(x_ptr, N):\n    pass\n",
       {"g"}},
      {"jit imported from gluon",
       "from triton.experimental.gluon import jit\n\n@jit\ndef g(x_ptr):\n    pass\n",
       {"g"}},
      {"gluon imported from a package that re-exports it",
       "from aiter.ops.triton.utils import gluon\n\n@gluon.jit\ndef g(x_ptr):\n    pass\n",
       {"g"}},
      {"jit imported from triton.runtime.jit, aliased",
       "from triton.runtime.jit import jit as tjit\n\n@tjit\ndef k(x_ptr):\n    pass\n",
       {"k"}},
      {"relative jit inside Triton itself",
       "from ..runtime.jit import jit\nfrom . import core\n\n@jit\ndef k(x):\n    pass\n",
       {"k"}},
      {"relative jit inside Gluon",
       "from ._runtime import jit, constexpr_function\n\n"
       "@constexpr_function\ndef helper(x):\n    return x\n\n@jit\ndef k(x):\n    pass\n",
       {"k"}},
      {"relative jit from an unrelated module is not Triton's",
       "from .compiler import jit\n\n@jit\ndef f(x):\n    pass\n",
       {}},
      {"triton re-exported by another package",
       "from vllm.triton_utils import tl, triton\n\n@triton.jit\ndef k(x, B: tl.constexpr):\n"
       "    pass\n",
       {"k"}},
      {"triton_dist.jit, with arguments",
       "import triton_dist\nimport triton.language as tl\n\n"
       "@triton_dist.jit(do_not_specialize=['rank'])\ndef k(x, rank, B: tl.constexpr):\n"
       "    pass\n",
       {"k"}},
      {"jit imported from triton_dist's submodule",
       "from triton_dist.jit import jit\n\n@jit\ndef k(x):\n    pass\n",
       {"k"}},
      {"triton_dist.jit bare, the package imported whole",
       "import triton_dist\n\n@triton_dist.jit\ndef k(x):\n    pass\n",
       {"k"}},
      // The shape of Triton-distributed's language/tma/tensormap.py: a bare @jit from
      // triton_dist.jit beside imports from other triton_dist modules, a def header over many
      // lines with constexpr parameters, and a docstring that names @jit.
      {"triton_dist's bare jit over a multi-line header",
       "\"\"\"Helpers built with ``@jit`` in-kernel.\"\"\"\n"
       "import triton.language as tl\n\n"
       "from triton_dist.jit import jit\n"
       "from triton_dist.language.extra.cuda.language_extra import __syncthreads, tid\n"
       "from triton_dist.language.extra.cuda.tma_language import (\n"
       "    fence_proxy_tensormap,\n    tensormap_cp_fenceproxy,\n)\n\n\n"
       "@jit\ndef _build(\n    tmap_smem_u32,\n    data_ptr,\n    N,\n"
       "    elemtype: tl.constexpr,\n    swizzle: tl.constexpr,\n):\n"
       "    \"\"\"Build a tensormap.\"\"\"\n    pass\n\n\n"
       "@jit\ndef update(smem_tmap, tmap_global_ptr, new_data_ptr):\n    pass\n",
       {"_build", "update"}},
      // The shape of Triton-distributed's test/nvidia/test_cga_cluster_size.py: kernels defined
      // with a bare @jit inside test functions, jit imported beside a private helper.
      {"triton_dist's jit on kernels nested in test functions",
       "import os\nimport torch\nimport triton\nimport triton.language as tl\n\n"
       "# Import directly from triton_dist.jit to avoid language module issues\n"
       "from triton_dist.jit import jit, _parse_cga_cluster_size\n\n\n"
       "def test_parse():\n    assert _parse_cga_cluster_size('2,1,1') == (2, 1, 1)\n\n\n"
       "def test_env():\n    os.environ['X'] = '2,1,1'\n\n"
       "    @jit\n    def simple_kernel(output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
       "        pid = tl.program_id(axis=0)\n\n"
       "    out = torch.zeros(16)\n    simple_kernel[(1, )](out, 16, BLOCK_SIZE=16)\n\n\n"
       "def test_override():\n\n    @jit(do_not_specialize=['n'])\n"
       "    def kernel_with_dims(output_ptr, n):\n        pass\n",
       {"simple_kernel", "kernel_with_dims"}},
      {"call-style, then call-style heuristics",
       "import triton\nimport triton.language as tl\n\n"
       "def _fwd(x, DO: tl.constexpr, B: tl.constexpr):\n    pass\n\n"
       "_fwd = triton.jit(_fwd)\n"
       "_fwd = triton.heuristics({\"DO\": lambda args: bool(args[\"DO\"])})(_fwd)\n\n"
       "def _impl(x):\n    pass\n\nkernel = triton.jit(_impl)\n",
       {"_fwd", "kernel"}},
      {"string annotations and arguments, stacked",
       "import triton\nimport triton.language as tl\n\n"
       "@triton.autotune(configs=[triton.Config({'B': 64})], key=['n'])\n"
       "@triton.heuristics(values={'EVEN': lambda a: a['n'] % a['B'] == 0})\n"
       "@triton.jit(do_not_specialize=['n'])\n"
       "def k(x, n, B: \"tl.constexpr\", EVEN: 'tl.constexpr' = False):\n    pass\n",
       {"k"}},
      {"jits of other libraries are not kernels",
       "import numba\nimport torch\nfrom jax import jit\n\n@numba.jit\ndef a(x):\n    pass\n\n"
       "@torch.jit.script\ndef b(x):\n    pass\n\n@jit\ndef c(x):\n    pass\n\n"
       "d = numba.jit(a)\n",
       {}},
  };
  return f;
}

const Form& form(std::string_view what) {
  for (const auto& f : forms())
    if (what == f.what) return f;
  throw std::runtime_error("no form " + std::string(what));
}

TEST(Facts, FindsEveryFormOfJitAsPythonsParserDoes) {
  FactsOptions opts;
  nlohmann::json records = nlohmann::json::array();
  for (const auto& f : forms()) {
    SCOPED_TRACE(f.what);
    records.push_back({{"output", f.code}});
    auto got = extract_facts(f.code, opts);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->kernel_names(), f.kernels);
  }
  test::TempDir dir;
  auto corpus = dir.path() / "forms.json";
  test::write_text(corpus, records.dump());
  int checked = 0, kernels = 0;
  check_corpus(corpus, checked, kernels, opts);
  EXPECT_EQ(checked, static_cast<int>(forms().size()));
  EXPECT_EQ(kernels, 18);
}

TEST(Facts, ConfiguredDecoratorsCountOnlyWhenConfigured) {
  const char* code = "import mylib\n\n@mylib.jit\ndef k(x):\n    pass\n";
  auto plain = extract_facts(code);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->kernels.empty());
  auto configured = extract_facts(code, FactsOptions{{"mylib.jit"}});
  ASSERT_TRUE(configured.ok());
  EXPECT_EQ(configured->kernel_names(), std::vector<std::string>{"k"});
}

TEST(Facts, CallStyleKernelsTakeTheirParametersFromTheDefAndAreLaunchedByTheirName) {
  auto f = extract_facts(form("call-style, then call-style heuristics").code);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->kernels.size(), 2u);
  const Kernel& fwd = f->kernels[0];
  EXPECT_EQ(fwd.line, 4);
  EXPECT_TRUE(fwd.heuristics);
  ASSERT_EQ(fwd.params.size(), 3u);
  EXPECT_TRUE(fwd.params[1].set_by_heuristics);  // DO
  EXPECT_FALSE(fwd.params[2].set_by_heuristics);
  EXPECT_TRUE(fwd.params[2].is_constexpr);
  EXPECT_EQ(f->kernels[1].name, "kernel");  // the name it is launched by, the def's line
  EXPECT_EQ(f->kernels[1].line, 10);
}

TEST(Facts, StringAnnotationsAreConstexprAndDecoratorArgumentsAreRead) {
  auto f = extract_facts(form("string annotations and arguments, stacked").code);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->kernels.size(), 1u);
  const Kernel& k = f->kernels[0];
  EXPECT_TRUE(k.autotuned);
  EXPECT_TRUE(k.heuristics);
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_FALSE(k.params[1].is_constexpr);
  EXPECT_TRUE(k.params[2].is_constexpr);
  EXPECT_EQ(k.params[2].annotation, "\"tl.constexpr\"");
  EXPECT_TRUE(k.params[2].set_by_autotune);
  EXPECT_TRUE(k.params[3].is_constexpr);
  EXPECT_TRUE(k.params[3].set_by_heuristics);
}

// CRLF line ends everywhere, a lone CR, and continuations inside strings and f-strings: FlagGems'
// hstack.py is a CRLF file with a backslash continuation inside an f-string.
TEST(Facts, LineBreaksOfEveryKindInsideAndOutsideStrings) {
  std::string crlf =
      "import triton\r\n"
      "\r\n"
      "def check(dim, i):\r\n"
      "    raise RuntimeError(\r\n"
      "        f\"Sizes must match except in dimension {dim}. \\\r\n"
      "            Expected size {i} but got {i + 1}\"\r\n"
      "    )\r\n"
      "s = 'one \\\r\ntwo'\r\n"
      "t = \"\"\"a\r\nb\"\"\" + \\\r\n    'c'  # comment\r\n"
      "@triton.jit\r\n"
      "def k(x,\r\n      y):\r\n"
      "    pass\r\n";
  auto f = extract_facts(crlf);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->kernel_names(), std::vector<std::string>{"k"});
  EXPECT_EQ(f->kernels[0].line, 14);
  EXPECT_EQ(f->kernels[0].params.size(), 2u);

  auto cr = extract_facts("import triton\r@triton.jit\rdef k(x):\r    s = 'a\\\rb'\r");
  ASSERT_TRUE(cr.ok()) << cr.error().message;
  ASSERT_EQ(cr->kernel_names(), std::vector<std::string>{"k"});
  EXPECT_EQ(cr->kernels[0].line, 3);

  auto open = extract_facts("x = f'never closed\r\ny = 1\r\n");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().message, "line 1: unterminated string");
}

// Python 3.12's grammar (PEP 701 f-strings, type statements and type parameters); the local
// Python (3.11) cannot parse these, so the expectations are written out.
TEST(Facts, ReadsThePython312Grammar) {
  const char* code = R"PY(import triton
import triton.language as tl

type Shape = tuple[int, ...]
type Pair[T] = tuple[T, T]
names = {"a": 1}
s1 = f"{names["a"]} and {'\n'.join(["x", "y"])}"
s2 = f"{f"{f"{1}"}"}" + f'{names['a']:>{10}}' + f"{names!r:}" + f"{1 != 2}"
s3 = f"""{
    names["a"]  # a comment inside the field, and a quote: "
} {{literal}} \N{BULLET}"""
s4 = rf"{names["a"]}\d" + t"{names}"

@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    pass

def generic[T](x: T) -> T:
    return x
)PY";
  auto f = extract_facts(code);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->kernel_names(), std::vector<std::string>{"k"});
  EXPECT_EQ(f->kernels[0].line, 15);
  EXPECT_TRUE(f->kernels[0].params[1].is_constexpr);

  auto typed = extract_facts("import triton\n@triton.jit\ndef k[T](x: T, n):\n    pass\n");
  ASSERT_TRUE(typed.ok()) << typed.error().message;
  ASSERT_EQ(typed->kernels.size(), 1u);
  EXPECT_EQ(typed->kernels[0].params.size(), 2u);

  auto field = extract_facts("x = f\"{names['a'\"\n");
  ASSERT_FALSE(field.ok());
  EXPECT_EQ(field.error().kind, "python_syntax");
}

constexpr const char* kCode = R"PY(
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass

def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
)PY";

constexpr const char* kWrapper = R"PY(
import torch
import triton

def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    if n == 0:
        return out
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](x, y, out, n, BLOCK=1024)
    return out
)PY";

constexpr const char* kTest = R"PY(
import torch

def _check(n):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    torch.testing.assert_close(vector_add(x, y), x + y, rtol=1e-5, atol=1e-6)

def test_sizes():
    for n in (1, 1000, 4096):
        _check(n)
)PY";

KernelFacts code_facts() {
  auto f = extract_facts(kCode);
  EXPECT_TRUE(f.ok());
  return *f;
}

TEST(CheckGeneration, AcceptsAWrapperThatLaunchesAndATestThatCallsItThroughAHelper) {
  EXPECT_FALSE(check_generation(code_facts(), kWrapper, kTest).has_value());
}

TEST(CheckGeneration, RejectsAWrapperThatOnlyCallsTheCodesLauncher) {
  auto r = check_generation(code_facts(), "def vector_add(x, y):\n    return add(x, y)\n", kTest);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "no_kernel_launch");
  EXPECT_NE(r->message.find("kernels: add_kernel"), std::string::npos) << r->message;
}

TEST(CheckGeneration, ALaunchInsideAStringOrCommentDoesNotCount) {
  auto r = check_generation(code_facts(),
                            "def vector_add(x, y):\n"
                            "    # add_kernel[grid](x, y)\n"
                            "    s = 'add_kernel[grid](x, y)'\n"
                            "    return x + y\n",
                            kTest);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "no_kernel_launch");
}

TEST(CheckGeneration, RejectsAWrapperThatRedefinesTheKernel) {
  std::string w = std::string(
                      "@triton.jit\ndef add_kernel(x, y, o, n, BLOCK: tl.constexpr):\n"
                      "    pass\n") +
                  kWrapper;
  auto r = check_generation(code_facts(), w, kTest);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "kernel_redefined");
  EXPECT_NE(r->message.find("line 2"), std::string::npos) << r->message;
}

TEST(CheckGeneration, RejectsATestWithoutTestFunctionOrNotCallingTheWrapper) {
  auto none =
      check_generation(code_facts(), kWrapper, "def check():\n    vector_add(1, 2)\n\ncheck()\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->kind, "no_test_function");
  auto nested = check_generation(code_facts(), kWrapper,
                                 "class TestAdd:\n    def test_add(self):\n"
                                 "        vector_add(1, 2)\n");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->kind, "no_test_function");
  auto vacuous = check_generation(code_facts(), kWrapper,
                                  "import torch\n\ndef test_add():\n"
                                  "    x = torch.ones(4)\n    assert (x + x == 2).all()\n");
  ASSERT_TRUE(vacuous);
  EXPECT_EQ(vacuous->kind, "test_does_not_call_wrapper");
  EXPECT_NE(vacuous->message.find("(test_add)"), std::string::npos) << vacuous->message;
  auto attribute =
      check_generation(code_facts(), kWrapper, "def test_add():\n    m.vector_add(1, 2)\n");
  ASSERT_TRUE(attribute);
  EXPECT_EQ(attribute->kind, "test_does_not_call_wrapper");
}

TEST(CheckGeneration, RejectsPythonThatCannotParse) {
  auto r = check_generation(code_facts(), kWrapper, "def test_x():\n    s = 'open\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "python_syntax");
  EXPECT_EQ(r->message, "unitest_code: line 2: unterminated string");
}

TEST(CheckAnalysis, EveryNamedKernelMustBeOneTheCodeDefines) {
  json ok = {
      {"analysis",
       {{"kernel_launches",
         {{{"kernel", "add_kernel[grid]"}, {"grid", "(n,)"}, {"constexpr_arguments", ""}}}}}}};
  EXPECT_FALSE(check_analysis(code_facts(), ok).has_value());
  json qualified = ok;
  qualified["analysis"]["kernel_launches"][0]["kernel"] = "module.add_kernel";
  EXPECT_FALSE(check_analysis(code_facts(), qualified).has_value());
  json bad = ok;
  bad["analysis"]["kernel_launches"][0]["kernel"] = "copy_kernel";
  auto r = check_analysis(code_facts(), bad);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "unknown_kernel");
  EXPECT_NE(r->message.find("`copy_kernel`"), std::string::npos) << r->message;
}

}  // namespace
}  // namespace kforge::pipeline
