// Formatting is neutral (redundant parentheses, trailing commas, line breaks), and decontamination
// ignores kernels too small to identify an eval kernel unless they match one exactly.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/evalset.hpp"
#include "kforge/dedup/signature.hpp"
#include "testutil.hpp"

namespace kforge::dedup {
namespace {

using nlohmann::json;

const char* kFormatted = R"(import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = x * alpha + 1.0
    tl.store(out_ptr + offs, y, mask=mask)
    return y, x
)";

// The same kernel with the parentheses, trailing commas and line breaks a hand or a formatter adds.
const char* kParenthesised = R"(import triton
import triton.language as tl

@triton.jit
def scale_kernel(
    x_ptr,
    out_ptr,
    n,
    alpha,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0,)
    offs = (pid * BLOCK) + tl.arange(
        0, BLOCK
    )
    mask = (offs < n)
    x = tl.load((x_ptr + offs), mask=(mask), other=0.0,)
    y = ((x * alpha) + 1.0)
    tl.store(out_ptr + offs,
             y,
             mask=mask,)
    return (y, x)
)";

TEST(DedupFormatting, RedundantParenthesesTrailingCommasAndLineBreaksChangeNothing) {
  auto a = kernel_signatures(kFormatted, 10), b = kernel_signatures(kParenthesised, 10);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].body, b[0].body);
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_EQ(a[0].lines, b[0].lines);
  EXPECT_DOUBLE_EQ(similarity(a[0].sig, b[0].sig), 1.0);
  Signature fa = compute_signature(kFormatted), fb = compute_signature(kParenthesised);
  EXPECT_EQ(fa.kernels_sha, fb.kernels_sha);
  EXPECT_DOUBLE_EQ(similarity(fa, fb), 1.0);
  EXPECT_EQ(fa.ops, fb.ops);
  auto t = normalised_tokens("f((a + b), [c, d,], (e,))\nelse:\n    if x: pass");
  EXPECT_EQ(std::vector<std::string>(t.begin(), t.end()),
            (std::vector<std::string>{"f", "(", "a", "+", "b", ",", "[", "c", ",", "d", "]", ",",
                                      "e", ")", "elif", "x", ":", "pass"}));
  // Parentheses that matter to Python still matter to operations (ops.cpp reads the tokens as
  // written): a kernel that stores (x + 1) * 2 computes the same operations as one storing
  // x + 1 * 2, and other ones than x * 2.
  std::string other = kFormatted;
  other.replace(other.find("x * alpha + 1.0"), 15, "x - alpha");
  EXPECT_NE(compute_signature(other).ops, fa.ops);
}

// Every kernel of TritonBench-G rewritten through Python's ast (tests/dedup/unparse.py: names
// kept, redundant parentheses and trailing commas dropped, tuples parenthesised, lines joined)
// keeps its kernel signature: the same body up to renames, similarity 1, a match with itself.
TEST(DedupFormatting, AstRoundTripOfTritonBenchKeepsEveryKernelSignature) {
  auto corpus = test::source_dir() / "tests" / "data" / "tritonbench_g_code.json";
  auto script = test::source_dir() / "tests" / "dedup" / "unparse.py";
  auto r = test::run_process({"/usr/bin/python3", script.string(), corpus.string(), "output"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json records = json::parse(test::read_text(corpus));
  std::istringstream lines(r.out);
  std::string line;
  int files = 0, kernels = 0, lowest_file_pct = 100;
  while (std::getline(lines, line)) {
    json rec = json::parse(line);
    std::size_t i = rec["index"];
    std::string before = records[i]["output"], after = rec["code"];
    SCOPED_TRACE(records[i]["file"].get<std::string>());
    auto a = kernel_signatures(before), b = kernel_signatures(after);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      SCOPED_TRACE(a[k].name);
      EXPECT_EQ(a[k].body, b[k].body);
      EXPECT_DOUBLE_EQ(similarity(a[k].sig, b[k].sig), 1.0);
      EXPECT_EQ(a[k].lines, b[k].lines);
      EXPECT_DOUBLE_EQ(kernel_match(b[k], a[k]), a[k].helper ? 0.0 : 1.0);
      ++kernels;
    }
    // Files: their kernels' signatures (what groups compare) are the same too.
    Signature fa = compute_signature(before), fb = compute_signature(after);
    if (!fa.kernels.empty()) {
      lowest_file_pct = std::min(lowest_file_pct, static_cast<int>(100 * similarity(fa, fb)));
      EXPECT_EQ(fa.ops, fb.ops);
    }
    ++files;
  }
  EXPECT_EQ(files, 184);
  EXPECT_GE(kernels, 270);  // 287 kernels, those of 60 tokens or more
  EXPECT_EQ(lowest_file_pct, 100);
}

// A kernel of ten code lines or fewer identifies no eval kernel by similarity: a six-line
// fp16-to-fp8 copy shares its template with an `add` and a fill (0.8 or more similar,
// identifiers normalised) and computes something else. It still matches an eval kernel that is
// the same up to renames, formatting, literals and casts.
const char* kEvalSmall = R"(import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, mask=mask)
    y = tl.load(y_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, mask=mask)
    tl.store(out_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, x + y, mask=mask)

@triton.jit
def fill_kernel(out_ptr, value, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    val = tl.full((BLOCK_M, BLOCK_N), value, tl.float16)
    tl.store(out_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, val, mask=mask)
)";

const char* kFp8Copy = R"(import triton
import triton.language as tl

@triton.jit
def _fp16_to_fp8_kernel(src_ptr, dst_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(src_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, mask=mask)
    y = x.to(tl.float8e4nv)
    tl.store(dst_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, y, mask=mask)
)";

TEST(DedupEvalIndex, KernelsOfTenLinesOrFewerMatchOnlyExactly) {
  test::TempDir dir;
  test::write_text(dir / "eval.jsonl", json({{"name", "tiny"}, {"src", kEvalSmall}}).dump() + "\n");
  corpus::FieldMap map;
  map.code = "src";
  map.key = "name";
  auto ix = EvalIndex::load({dir / "eval.jsonl"}, map, corpus::Format::automatic);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  ASSERT_EQ(ix->size(), 2u);

  auto copy = kernel_signatures(kFp8Copy);
  auto eval = kernel_signatures(kEvalSmall);
  ASSERT_EQ(copy.size(), 1u);
  ASSERT_EQ(eval.size(), 2u);
  EXPECT_EQ(copy[0].lines, 7);  // the def and six statements
  EXPECT_LE(eval[0].lines, kSmallKernelLines);
  // Without the size bound these would match: similar templates.
  double to_add = similarity(copy[0].sig, eval[0].sig),
         to_fill = similarity(copy[0].sig, eval[1].sig);
  EXPECT_GE(std::max(to_add, to_fill), kDefaultKernelThreshold) << to_add << " " << to_fill;
  EXPECT_EQ(kernel_match(copy[0], eval[0]), 0.0);
  EXPECT_EQ(kernel_match(copy[0], eval[1]), 0.0);
  EXPECT_FALSE(ix->nearest(kFp8Copy, kDefaultKernelThreshold).has_value());
  EXPECT_FALSE(ix->nearest(kFp8Copy, 0.5).has_value());

  // The fill renamed, reformatted and with a cast added: the same small kernel, found exactly.
  std::string fill =
      std::string(kEvalSmall).substr(std::string(kEvalSmall).find("@triton.jit\ndef fill"));
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"fill_kernel", "_const_fill"},
        {"out_ptr", "dst"},
        {"out_ptr + offs_m", "(out_ptr + offs_m)"},
        {"tl.float16)", "tl.float16).to(tl.float32)"},
        {"offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
         "offs_m = (tl.program_id(0) * BLOCK_M) + tl.arange(\n        0, BLOCK_M,\n    )"}})
    fill.replace(fill.find(from), from.size(), to);
  auto m = ix->nearest("import triton\nimport triton.language as tl\n\n" + fill,
                       kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->exact);
  EXPECT_EQ(m->kernel, "_const_fill");
  EXPECT_EQ(m->eval_kernel, "fill_kernel");
}

}  // namespace
}  // namespace kforge::dedup
