// Decontamination past the clear cases (EvalIndex::nearest): an edited eval kernel that keeps its
// name and interface, a one-line body an eval kernel calls, and a small kernel that calls its
// math functions through another module. Each shaped after a crawl pair that the rules before
// missed (docs/BENCHMARKS.md, "Issue 55, decontamination recall").
#include <gtest/gtest.h>

#include <string>

#include "kforge/dedup/evalset.hpp"
#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {
namespace {

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// TritonBench-G's bmm_optimized.py, shortened: FlagGems' batched GEMM.
const char* kEvalBmm = R"(import triton
import triton.language as tl

@triton.jit
def bmm_kernel(A, B, O, M, N, K, TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_K: tl.constexpr, GROUP_M: tl.constexpr, DIVISIBLE_M: tl.constexpr, DIVISIBLE_N: tl.constexpr, DIVISIBLE_K: tl.constexpr):
    pid_b = tl.program_id(2)
    A += pid_b * M * K
    B += pid_b * K * N
    O += pid_b * M * N
    pidx = tl.program_id(0)
    pidy = tl.program_id(1)
    if GROUP_M == 1:
        pid_m, pid_n = pidx, pidy
    else:
        gridx = tl.num_programs(0)
        gridy = tl.num_programs(1)
        pid = pidx + pidy * gridx
        num_CTA_per_group = gridy * GROUP_M
        group_id = pid // num_CTA_per_group
        inner_group_id = pid % num_CTA_per_group
        GROUP_SIZE = tl.where((group_id * GROUP_M + GROUP_M) > gridx, gridx % GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + inner_group_id % GROUP_SIZE
        pid_n = inner_group_id // GROUP_SIZE
    offs_m = pid_m * TILE_M + tl.arange(0, TILE_M)
    offs_n = pid_n * TILE_N + tl.arange(0, TILE_N)
    offs_k = tl.arange(0, TILE_K)
    if not DIVISIBLE_M:
        mask_m = offs_m < M
    if not DIVISIBLE_N:
        mask_n = offs_n < N
    a_ptrs = A + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + offs_k[:, None] * N + offs_n[None, :]
    o_ptrs = O + offs_m[:, None] * N + offs_n[None, :]
    num_iters = tl.cdiv(K, TILE_K)
    o = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for _ in range(num_iters):
        if DIVISIBLE_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            mask_k = offs_k < K
            a = tl.load(a_ptrs, mask=mask_k[None, :])
            b = tl.load(b_ptrs, mask=mask_k[:, None])
        offs_k += TILE_K
        a_ptrs += TILE_K
        b_ptrs += TILE_K * N
        o += tl.dot(a, b, allow_tf32=False)
    mask = mask_m[:, None] & mask_n[None, :]
    o = o.to(O.dtype.element_ty)
    tl.store(o_ptrs, o, mask=mask)
)";

// FlagGems' own revision of it: block pointers for the loads, int64 batch offsets, the group
// size computed with tl.minimum, the masks written out; the same name and parameters.
std::string edited_bmm(const std::string& eval) {
  std::string s = eval;
  s = replaced(s, "    A += pid_b * M * K\n    B += pid_b * K * N\n    O += pid_b * M * N\n",
               "    batch = pid_b.to(tl.int64)\n    A = A + batch * M * K\n"
               "    B = B + batch * K * N\n    O = O + batch * M * N\n");
  s = replaced(s,
               "GROUP_SIZE = tl.where((group_id * GROUP_M + GROUP_M) > gridx, gridx % GROUP_M, "
               "GROUP_M)",
               "GROUP_SIZE = tl.minimum(gridx - group_id * GROUP_M, GROUP_M)");
  s = replaced(s,
               "    if not DIVISIBLE_M:\n        mask_m = offs_m < M\n"
               "    if not DIVISIBLE_N:\n        mask_n = offs_n < N\n",
               "    mask_m = offs_m < M\n    mask_n = offs_n < N\n");
  s = replaced(s,
               "        if DIVISIBLE_K:\n            a = tl.load(a_ptrs)\n            b = "
               "tl.load(b_ptrs)\n        else:\n            mask_k = offs_k < K\n            a = "
               "tl.load(a_ptrs, mask=mask_k[None, :])\n            b = tl.load(b_ptrs, "
               "mask=mask_k[:, None])\n",
               "        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < K), "
               "other=0.0)\n        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K) & mask_n[None, "
               ":], other=0.0)\n");
  return s;
}

TEST(DedupDecontamination, AnEditedKernelNamedAlikeMatchesBelowTheThreshold) {
  EvalIndex ix;
  ix.add_record("TritonBench_G_v1.json", "bmm_optimized.py", kEvalBmm);
  std::string sample = edited_bmm(kEvalBmm);
  auto mine = kernel_signatures(sample), eval = kernel_signatures(kEvalBmm);
  ASSERT_EQ(mine.size(), 1u);
  ASSERT_EQ(eval.size(), 1u);
  double sim = similarity(mine[0].sig, eval[0].sig);
  // What the rule is for: an edited copy below the similarity threshold, above kAlignThreshold.
  ASSERT_LT(sim, kDefaultKernelThreshold);
  ASSERT_GE(sim, kAlignThreshold);
  EXPECT_EQ(mine[0].params, 13);
  EXPECT_EQ(mine[0].params, eval[0].params);
  EXPECT_TRUE(kernel_named_match(mine[0], eval[0]));
  auto m = ix.nearest(sample, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->named);
  EXPECT_FALSE(m->exact);
  EXPECT_EQ(m->kernel, "bmm_kernel");
  EXPECT_EQ(m->key, "bmm_optimized.py");
  EXPECT_NEAR(m->similarity, sim, 1e-9);

  // A template sibling that keeps the name takes another parameter (an activation): not near.
  std::string sibling = replaced(
      sample, "DIVISIBLE_K: tl.constexpr):", "DIVISIBLE_K: tl.constexpr, ACT: tl.constexpr):");
  EXPECT_FALSE(ix.nearest(sibling, kDefaultKernelThreshold).has_value());
  // Another name: similarity alone decides, and it is below the threshold.
  std::string renamed = replaced(sample, "def bmm_kernel(", "def batched_gemm_kernel(");
  EXPECT_FALSE(ix.nearest(renamed, kDefaultKernelThreshold).has_value());
  // The same name and parameters computing something else (a max-plus product for the dot
  // product): the operations conflict.
  std::string other = replaced(sample, "o += tl.dot(a, b, allow_tf32=False)",
                               "o = tl.maximum(o, tl.max(a[:, :, None] + b[None, :, :], 1))");
  EXPECT_TRUE(ops_conflict(kernel_signatures(other)[0].ops, eval[0].ops));
  EXPECT_FALSE(ix.nearest(other, kDefaultKernelThreshold).has_value());
  // A helper of the sample (another kernel of its file calls it) matches nothing.
  std::string as_helper =
      sample +
      "\n@triton.jit\ndef caller(A, B, O, M, N, K):\n    bmm_kernel(A, B, O, M, N, K, "
      "16, 16, 16, 1, True, True, True)\n";
  EXPECT_FALSE(ix.nearest(as_helper, kDefaultKernelThreshold).has_value());
}

// TritonBench-G's pow_scalar_tensor.py: FlagGems' one-line body and the kernel its code
// generator writes around it (shortened); `_unused` is defined and no kernel calls it.
const char* kEvalPow = R"(import triton
import triton.language as tl
from flag_gems.utils import tl_extra_shim
_pow = tl_extra_shim.pow

@triton.jit
def _unused(a, b):
    return tl.cdiv(a, b) * b + a * 0 - b * 0

@triton.jit
def pow_func_scalar_tensor(x, exponent):
    return _pow(x.to(tl.float32), exponent)

@triton.jit(do_not_specialize=['val0'])
def pow_func_scalar_tensor_kernel_rank_1(val0, in0_ptr: tl.tensor, out0_ptr: tl.tensor, in0_stride0: int, out0_stride0: int, s0: int, num_tasks: int, tiles_per_cta: int, tile_size0: tl.constexpr, one_tile_per_cta: tl.constexpr):
    pid = tl.program_id(0)
    num_tiles0 = tl.cdiv(s0, tile_size0)
    if one_tile_per_cta:
        tile_id = pid
        tile_id0 = tile_id
        offsets0 = tile_id0 * tile_size0 + tl.arange(0, tile_size0)
        mask0 = offsets0 < s0
        in0 = tl.load(in0_ptr + offsets0 * in0_stride0, mask=mask0)
        out0 = pow_func_scalar_tensor(val0, in0)
        tl.store(out0_ptr + offsets0 * out0_stride0, out0, mask=mask0)
    else:
        num_ctas = tl.num_programs(0)
        for j in range(0, tiles_per_cta):
            tile_id = pid + j * num_ctas
            offsets0 = tile_id * tile_size0 + tl.arange(0, tile_size0)
            mask0 = offsets0 < s0
            in0 = tl.load(in0_ptr + offsets0 * in0_stride0, mask=mask0)
            out0 = pow_func_scalar_tensor(val0, in0)
            tl.store(out0_ptr + offsets0 * out0_stride0, out0, mask=mask0)
)";

// FlagGems' pow.py: the one-line bodies its pointwise_dynamic decorator turns into kernels.
const char* kGemsPow = R"(import logging
import triton
import triton.language as tl
from flag_gems.utils import pointwise_dynamic, tl_extra_shim
_pow = tl_extra_shim.pow

@pointwise_dynamic(promotion_methods=[(0, 1, "BOOL_TO_LONG")])
@triton.jit
def pow_func(x, exponent):
    return _pow(x.to(tl.float32), exponent)

@pointwise_dynamic(is_tensor=[False, True], promotion_methods=[(0, 1, "BOOL_TO_LONG")])
@triton.jit
def pow_func_scalar_tensor(x, exponent):
    # the scalar first
    return _pow(
        x.to(tl.float32),
        exponent,
    )

def pow_scalar(A, exponent):
    logging.debug("GEMS POW_SCALAR")
    return pow_func_scalar_tensor(A, exponent)
)";

TEST(DedupDecontamination, AOneLineBodyAnEvalKernelCallsMatchesAsWritten) {
  EvalIndex ix;
  ix.add_record("TritonBench_G_v1.json", "pow_scalar_tensor.py", kEvalPow);
  auto small = small_functions(kGemsPow);
  ASSERT_EQ(small.size(), 2u);
  EXPECT_FALSE(small[1].helper);
  EXPECT_GE(small[1].tokens, kMinBodyTokens);
  auto eval = small_functions(kEvalPow);
  ASSERT_EQ(eval.size(), 2u);
  EXPECT_FALSE(eval[0].called);  // _unused
  EXPECT_TRUE(eval[1].called);   // pow_func_scalar_tensor, by the generated kernel
  EXPECT_TRUE(eval[1].helper);
  EXPECT_EQ(small[1].written, eval[1].written);  // formatting and comments aside

  auto m = ix.nearest(kGemsPow, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->exact);
  EXPECT_EQ(m->kernel, "pow_func_scalar_tensor");
  EXPECT_EQ(m->eval_kernel, "pow_func_scalar_tensor");

  // As written: another function called on the same shape (`_atan2` for `_pow`) is not it, as
  // it would be with identifiers normalised.
  std::string other = kGemsPow;
  while (other.find("_pow(") != std::string::npos) other = replaced(other, "_pow(", "_atan2(");
  EXPECT_FALSE(ix.nearest(other, kDefaultKernelThreshold).has_value());
  // The sample's body as a helper of its own kernel (a prev_multiple_of) matches nothing.
  std::string helper = std::string(kGemsPow) +
                       "\n@triton.jit\ndef pow_kernel(x_ptr, e, o_ptr, n, BLOCK: tl.constexpr):\n"
                       "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                       "    x = tl.load(x_ptr + offs, mask=offs < n)\n"
                       "    y = pow_func_scalar_tensor(x, e)\n"
                       "    y = pow_func(y, e)\n"
                       "    tl.store(o_ptr + offs, y, mask=offs < n)\n";
  EXPECT_FALSE(ix.nearest(helper, kDefaultKernelThreshold).has_value());
  // A function the eval file defines and no eval kernel calls matches nothing.
  std::string unused =
      "import triton\nimport triton.language as tl\n\n@triton.jit\ndef _unused(a, "
      "b):\n    return tl.cdiv(a, b) * b + a * 0 - b * 0\n";
  EXPECT_FALSE(ix.nearest(unused, kDefaultKernelThreshold).has_value());
}

// TritonBench-G's logsumexp_fwd.py kernel (ten code lines) and fla's, which calls the `exp` and
// `log` of its own utils module.
const char* kEvalLogsumexp = R"(import triton
import triton.language as tl

@triton.jit
def logsumexp_fwd_kernel(x, z, scale, D: tl.constexpr, B: tl.constexpr, HAS_SCALE: tl.constexpr):
    i_n, i_d = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64)
    o_d = i_d * B + tl.arange(0, B)
    m_d = o_d < D
    b_x = tl.load(x + i_n * D + o_d, mask=m_d, other=-float('inf'))
    if HAS_SCALE:
        b_x = b_x * scale
    b_m = tl.max(b_x, 0)
    b_z = tl.log(tl.sum(tl.exp(b_x - b_m), 0)) + b_m
    tl.store(z + i_n * tl.cdiv(D, B) + i_d, b_z)
)";

TEST(DedupDecontamination, ASmallKernelMatchesWhateverModuleItsMathComesFrom) {
  EvalIndex ix;
  ix.add_record("TritonBench_G_v1.json", "logsumexp_fwd.py", kEvalLogsumexp);
  auto eval = kernel_signatures(kEvalLogsumexp);
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_LE(eval[0].lines, kSmallKernelLines);

  std::string fla = replaced(kEvalLogsumexp, "tl.log(tl.sum(tl.exp(", "log(tl.sum(exp(");
  fla = replaced(fla, "import triton.language as tl\n",
                 "import triton.language as tl\nfrom fla.ops.utils.op import exp, log\n");
  std::string libdevice =
      replaced(kEvalLogsumexp, "tl.log(tl.sum(tl.exp(", "tl.math.log(tl.sum(libdevice.exp(");
  for (const auto& sample : {fla, libdevice}) {
    auto mine = kernel_signatures(sample);
    ASSERT_EQ(mine.size(), 1u);
    EXPECT_NE(mine[0].body, eval[0].body);
    EXPECT_EQ(kernel_match(mine[0], eval[0]), 1.0);
    auto m = ix.nearest(sample, kDefaultKernelThreshold);
    ASSERT_TRUE(m.has_value()) << sample;
    EXPECT_TRUE(m->exact);
  }
  // Another function is another kernel: exp for log, or a name of its own that is no math
  // function.
  for (const auto& sample : {replaced(fla, "log(tl.sum(exp(", "exp(tl.sum(exp("),
                             replaced(fla, "log(tl.sum(exp(", "softplus(tl.sum(exp(")}) {
    EXPECT_EQ(kernel_match(kernel_signatures(sample)[0], eval[0]), 0.0) << sample;
    EXPECT_FALSE(ix.nearest(sample, kDefaultKernelThreshold).has_value()) << sample;
  }
}

}  // namespace
}  // namespace kforge::dedup
