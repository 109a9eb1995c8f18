// The operations a file's kernels compute on values (signature.hpp Signature::ops, ops.cpp), told
// apart from index arithmetic, and the conflict rule corpus groups apply to them. Real-shaped
// kernels: the vendored small corpus's add, sin and mul2 files, a pointwise template around two
// functions, an attention kernel with lengths loaded through scalar pointers, a two-stage argmax,
// reductions with and/or combine functions, FlagGems' one-line pointwise bodies.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/signature.hpp"
#include "testutil.hpp"

namespace kforge::dedup {
namespace {

// The operations of Signature::ops without its data-flow edges (`>op;from`).
std::string without_edges(const std::string& ops) {
  std::string out;
  for (std::size_t at = 0; at <= ops.size();) {
    std::size_t c = ops.find(',', at);
    if (c == std::string::npos) c = ops.size();
    std::string_view o(ops.data() + at, c - at);
    if (o.find(';') == std::string_view::npos) out.append(out.empty() ? "" : ",").append(o);
    at = c + 1;
  }
  return out;
}

std::string swap_text(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

const char* kPointwise = R"(import torch
import triton
import triton.language as tl


@triton.jit
def log_kernel(x_ptr, out_ptr, n_elements, stride, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * stride, mask=mask, other=1.0)
    y = tl.log(x.to(tl.float32))
    tl.store(out_ptr + offsets, y, mask=mask)


def log(x):
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    log_kernel[grid](x, out, n, 1, BLOCK_SIZE=1024)
    return out
)";

TEST(ValueOps, IndexArithmeticIsNotAnOperation) {
  // Offsets, masks and program ids compute with `*`, `+` and `<`; the kernel computes `log`.
  EXPECT_EQ(without_edges(compute_signature(kPointwise).ops), "io:1/1,log");
  // The vendored small corpus: three kernels of one template, each around its own operation.
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  std::map<std::string, Signature> sig;
  for (const auto& r : corpus) {
    std::string file = r["file"];
    if (file == "add_example.py" || file == "sin_computation.py" || file == "triton_mul2.py")
      sig[file] = compute_signature(r["output"].get<std::string>());
  }
  ASSERT_EQ(sig.size(), 3u);
  EXPECT_EQ(without_edges(sig["add_example.py"].ops), "+,io:2/1");
  EXPECT_EQ(without_edges(sig["sin_computation.py"].ops), "io:1/1,sin");
  EXPECT_EQ(without_edges(sig["triton_mul2.py"].ops), "*");
  double most = 0;
  for (const auto& [x, a] : sig)
    for (const auto& [y, b] : sig)
      if (x < y) {
        std::printf("%s ~ %s: %.2f\n", x.c_str(), y.c_str(), similarity(a, b));
        most = std::max(most, similarity(a, b));
        EXPECT_TRUE(ops_conflict(a.ops, b.ops)) << x << " ~ " << y;
        EXPECT_FALSE(near(a, b, kDefaultThreshold)) << x << " ~ " << y;
      }
  // The template alone makes them near as files at a lower threshold.
  EXPECT_GE(most, 0.5);
  for (const auto& [x, a] : sig)
    for (const auto& [y, b] : sig)
      if (x < y) {
        EXPECT_FALSE(near(a, b, 0.5)) << x << " ~ " << y;
      }
  // A revision that rewrites the indexing (int64 offsets, another mask, a stride) computes the
  // same: no conflict, and still near.
  std::string revised = swap_text(kPointwise, "pid = tl.program_id(axis=0)",
                                  "pid = tl.program_id(axis=0).to(tl.int64)");
  revised = swap_text(revised, "mask = offsets < n_elements",
                      "mask = (offsets < n_elements) & (offsets >= 0)");
  revised =
      swap_text(revised, "x_ptr + offsets * stride", "x_ptr + (offsets % n_elements) * stride");
  Signature a = compute_signature(kPointwise), b = compute_signature(revised);
  EXPECT_EQ(without_edges(b.ops), "io:1/1,log");
  EXPECT_FALSE(ops_conflict(a.ops, b.ops));
  EXPECT_TRUE(near(a, b, kDefaultThreshold));
}

TEST(ValueOps, TheSameTemplateAroundAnotherValueOperationConflicts) {
  Signature log = compute_signature(kPointwise);
  Signature sqrt = compute_signature(swap_text(kPointwise, "tl.log(", "tl.sqrt("));
  std::printf("log ~ sqrt: %.2f\n", similarity(log, sqrt));
  EXPECT_TRUE(ops_conflict(log.ops, sqrt.ops));
  EXPECT_FALSE(near(log, sqrt, kDefaultThreshold));
  // An operator on loaded values is an operation: `x * 2` against `x + 2`.
  Signature mul = compute_signature(swap_text(kPointwise, "tl.log(x.to(tl.float32))", "x * 2.0"));
  Signature add = compute_signature(swap_text(kPointwise, "tl.log(x.to(tl.float32))", "x + 2.0"));
  EXPECT_EQ(without_edges(mul.ops), "*,io:1/1");
  EXPECT_EQ(without_edges(add.ops), "+,io:1/1");
  EXPECT_TRUE(ops_conflict(mul.ops, add.ops));
  // A negation is not a subtraction: `-x` against `x - 2`.
  Signature neg = compute_signature(swap_text(kPointwise, "tl.log(x.to(tl.float32))", "-x"));
  Signature sub = compute_signature(swap_text(kPointwise, "tl.log(x.to(tl.float32))", "x - 2.0"));
  EXPECT_EQ(without_edges(neg.ops), "io:1/1,neg");
  EXPECT_EQ(without_edges(sub.ops), "-,io:1/1");
  EXPECT_TRUE(ops_conflict(neg.ops, sub.ops));
  // Filling with 1 or with 0: the stored constant is what the kernel computes.
  const char* fill = R"(
@triton.jit
def ones_kernel(output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_jobs = tl.num_programs(axis=0)
    block_start = pid * BLOCK_SIZE
    step = num_jobs * BLOCK_SIZE
    for block_start_offset in range(block_start, n_elements, step):
        offsets = block_start_offset + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(output_ptr + offsets, 1.0, mask=mask)
)";
  Signature ones = compute_signature(fill);
  Signature zeros = compute_signature(swap_text(swap_text(fill, "1.0", "0.0"), "ones", "zeros"));
  EXPECT_EQ(without_edges(ones.ops), "=1,io:0/1");
  EXPECT_EQ(without_edges(zeros.ops), "=0,io:0/1");
  EXPECT_TRUE(ops_conflict(ones.ops, zeros.ops));
  EXPECT_FALSE(near(ones, zeros, kDefaultThreshold));
  // all and any: a reduction's combine function returns `a and b` or `a or b`; the masks combine
  // with `and` in both, which is index.
  const char* reduce = R"(
@triton.jit
def reduce_all(a, b):
    return a and b


@triton.jit
def all_kernel_dim(inp, out, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    inp = inp + rows * N
    out = out + rows
    row_mask = rows < M
    _all = tl.full([BLOCK_M, BLOCK_N], value=1, dtype=tl.int1)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)[None, :]
        col_mask = cols < N
        mask = row_mask and col_mask
        a = tl.load(inp + cols, mask, other=1.0)
        _all = _all and (a != 0)
    all = tl.reduce(_all, axis=1, combine_fn=reduce_all)
    tl.store(out, all[:, None], row_mask)
)";
  std::string any_code = swap_text(swap_text(reduce, "a and b", "a or b"), "_all and", "_all or");
  any_code = swap_text(swap_text(any_code, "_all", "_any"), "other=1.0", "other=0.0");
  Signature all = compute_signature(reduce), any = compute_signature(any_code);
  EXPECT_EQ(without_edges(all.ops), "!=,and,io:1/1,reduce");
  EXPECT_EQ(without_edges(any.ops), "!=,io:1/1,or,reduce");
  EXPECT_TRUE(ops_conflict(all.ops, any.ops));
}

// An attention kernel's inner loop: sequence lengths loaded through scalar pointers bound the
// loop and the masks; the scores are computed from loaded blocks.
const char* kAttention = R"(
@triton.jit
def _fwd_kernel(Q, K, V, Out, B_Start_Loc, B_Seqlen, Prompt_Cache_Len, sm_scale, stride_qbs,
                stride_kbs, stride_obs, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_DMODEL: tl.constexpr):
    cur_batch = tl.program_id(0)
    start_m = tl.program_id(1)
    cur_batch_seq_len = tl.load(B_Seqlen + cur_batch)
    prompt_cache_len = tl.load(Prompt_Cache_Len + cur_batch)
    cur_batch_start = tl.load(B_Start_Loc + cur_batch)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_DMODEL)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = tl.load(Q + (cur_batch_start + offs_m[:, None]) * stride_qbs + offs_d[None, :],
                mask=offs_m[:, None] < cur_batch_seq_len, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DMODEL], dtype=tl.float32)
    block_end_loc = tl.minimum((start_m + 1) * BLOCK_M + prompt_cache_len,
                               cur_batch_seq_len + prompt_cache_len)
    for start_n in range(0, block_end_loc, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K + (start_n + offs_n[None, :]) * stride_kbs + offs_d[:, None],
                    mask=(start_n + offs_n[None, :]) < block_end_loc, other=0.0)
        qk = tl.dot(q, k) * sm_scale
        qk = tl.where(offs_m[:, None] + prompt_cache_len >= start_n + offs_n[None, :], qk, -1.0e8)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + (start_n + offs_n[:, None]) * stride_kbs + offs_d[None, :],
                    mask=(start_n + offs_n[:, None]) < block_end_loc, other=0.0)
        acc += tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + (cur_batch_start + offs_m[:, None]) * stride_obs + offs_d[None, :], acc,
             mask=offs_m[:, None] < cur_batch_seq_len)
)";

TEST(ValueOps, LengthsLoadedThroughScalarPointersAreIndexGathersAreNot) {
  // The causal mask and the loop bound compute on lengths (`tl.minimum`, `>=`): index. The
  // lengths are tensors it reads all the same (`io:4/1`: Q, K, V and the lengths; Out).
  Signature a = compute_signature(kAttention);
  EXPECT_EQ(without_edges(a.ops), "*,+,-,/,dot,exp,io:4/1,max,maximum,sum");
  // A copy that adds a sliding-window mask and guards an all-masked row on values (`==`) and a
  // revision that clamps the loop bound another way: no conflict.
  std::string b =
      swap_text(kAttention, "        m_i = m_ij\n",
                "        m_ij = tl.where(m_ij == -1.0e8, 0.0, m_ij)\n        m_i = m_ij\n");
  b = swap_text(b, "tl.minimum((start_m + 1) * BLOCK_M + prompt_cache_len,",
                "min((start_m + 1) * BLOCK_M + prompt_cache_len,");
  Signature sb = compute_signature(b);
  EXPECT_EQ(without_edges(sb.ops), "*,+,-,/,==,dot,exp,io:4/1,max,maximum,sum");
  EXPECT_FALSE(ops_conflict(a.ops, sb.ops));
  EXPECT_TRUE(near(a, sb, kDefaultThreshold));
  // A value used as an address is a gather: the argmax a second stage reads through counts.
  const char* stage2 = R"(
@triton.jit
def argmax_kernel_2(mid_value, mid_index, out, mid_size, BLOCK_MID: tl.constexpr):
    offset = tl.arange(0, BLOCK_MID)
    mid_ptrs = mid_value + offset
    mask = offset < mid_size
    mid_val = tl.load(mid_ptrs, mask=mask, other=-float("inf"))
    index_val = tl.argmax(mid_val, axis=0)
    mid_index_ptrs = mid_index + index_val
    out_val = tl.load(mid_index_ptrs)
    tl.store(out, out_val)
)";
  Signature arg = compute_signature(stage2);
  EXPECT_EQ(without_edges(arg.ops), "+,argmax,io:2/1");
  EXPECT_TRUE(
      ops_conflict(arg.ops, compute_signature(swap_text(stage2, "tl.argmax(", "tl.argmin(")).ops));
}

TEST(ValueOps, OneLineBodiesAreTheirOperations) {
  // FlagGems' pointwise bodies: below the sketch floor, so the operations are all there is.
  const char* addcdiv = R"(import triton
from flag_gems.utils import pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
@triton.jit
def addcdiv_kernel(x, t1, t2, value):
    return x + value * (t1 / t2)
)";
  std::string addcmul =
      swap_text(swap_text(addcdiv, "x + value * (t1 / t2)", "x + value * t1 * t2"), "div", "mul");
  Signature d = compute_signature(addcdiv), m = compute_signature(addcmul);
  EXPECT_EQ(without_edges(d.ops), "#small,*,+,/");
  EXPECT_EQ(without_edges(m.ops), "#small,*,+");
  EXPECT_TRUE(ops_conflict(d.ops, m.ops));  // one side only, but one-line bodies
  EXPECT_FALSE(near(d, m, kDefaultThreshold));
  // A backend's copy of the same body, renamed and reformatted, is near.
  Signature copy =
      compute_signature(swap_text(addcdiv, "x + value * (t1 / t2)", "x + (t1 / t2) * value"));
  EXPECT_FALSE(ops_conflict(d.ops, copy.ops));
  EXPECT_TRUE(near(d, copy, kDefaultThreshold));
  // Full-size kernels keep the two-sided rule: an edit that only adds an operation (a clamp) is
  // no conflict.
  Signature log = compute_signature(kPointwise);
  Signature clamped = compute_signature(swap_text(kPointwise, "tl.log(x.to(tl.float32))",
                                                  "tl.log(tl.maximum(x.to(tl.float32), 1e-6))"));
  EXPECT_EQ(without_edges(clamped.ops), "io:1/1,log,maximum");
  EXPECT_FALSE(ops_conflict(log.ops, clamped.ops));
}

// Issue 55: template siblings that compute another function from one template, told apart by
// their dataflow (the tensors a kernel reads and writes, shifts that unpack another format, the
// operation stored), and rewrites of the same math kept together.
const char* kVar = R"(import triton
import triton.language as tl

@triton.jit
def var_kernel(x_ptr, var_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / N
    tl.store(var_ptr + row, var)
)";

const char* kGemm = R"(import triton
import triton.language as tl

@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
)";

const char* kSoftmaxRow = R"(import triton
import triton.language as tl

@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    tl.store(y_ptr + row * N + offs, e / tl.sum(e, axis=0), mask=offs < N)
)";

// Siblings conflict and are not near, at a threshold their files reach.
void expect_apart(const std::string& x, const std::string& y, const char* what) {
  Signature a = compute_signature(x), b = compute_signature(y);
  std::printf("%s: files %.2f, ops %s | %s\n", what, similarity(a, b), a.ops.c_str(),
              b.ops.c_str());
  EXPECT_GE(similarity(a, b), 0.5) << what;
  EXPECT_TRUE(ops_conflict(a.ops, b.ops)) << what;
  EXPECT_FALSE(near(a, b, 0.5)) << what;
}

TEST(ValueOps, TemplateSiblingsThatComputeAnotherFunctionConflict) {
  // var vs var_mean: the mean is stored too (one tensor written more).
  std::string var_mean = swap_text(kVar, "var_ptr, N", "var_ptr, mean_ptr, N");
  var_mean = swap_text(var_mean, "    tl.store(var_ptr + row, var)\n",
                       "    tl.store(var_ptr + row, var)\n    tl.store(mean_ptr + row, mean)\n");
  expect_apart(kVar, var_mean, "var vs var_mean");
  // argmin vs min: the index of the minimum or its value.
  std::string mn =
      swap_text(kVar, "    var = tl.sum(d * d, axis=0) / N\n", "    var = tl.min(x, axis=0)\n");
  expect_apart(mn, swap_text(mn, "tl.min(x", "tl.argmin(x"), "min vs argmin");
  // addmm vs gemm: a bias read and scaled in (one tensor read more).
  std::string addmm = swap_text(kGemm, "a_ptr, b_ptr, c_ptr,", "a_ptr, b_ptr, bias_ptr, c_ptr,");
  addmm = swap_text(addmm, "    c = acc.to(tl.float16)\n",
                    "    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)\n"
                    "    c = (0.5 * acc + 2.0 * bias[None, :]).to(tl.float16)\n");
  expect_apart(kGemm, addmm, "gemm vs addmm");
  // a8w4 vs a8w8: int4 weights two to a byte, unpacked with shifts.
  std::string a8w4 = swap_text(kGemm, "        acc += tl.dot(a, b)\n",
                               "        b = (b >> 4) & 15\n        acc += tl.dot(a, b)\n");
  expect_apart(kGemm, a8w4, "a8w8 vs a8w4");
  // With and without a decay: a per-head slope read through a scalar pointer scales the values.
  std::string decay = swap_text(kSoftmaxRow, "x_ptr, y_ptr, N", "x_ptr, y_ptr, slope_ptr, N");
  decay =
      swap_text(decay, "    e = tl.exp(x - m)\n",
                "    s = tl.load(slope_ptr + row)\n    e = tl.exp(x - m) * tl.exp(-s * offs)\n");
  expect_apart(kSoftmaxRow, decay, "without vs with decay");
}

TEST(ValueOps, RewritesOfTheSameMathStayTogether) {
  // exp(x) as exp2(x * log2(e)).
  Signature e = compute_signature(kSoftmaxRow);
  Signature e2 = compute_signature(
      swap_text(kSoftmaxRow, "tl.exp(x - m)", "tl.exp2((x - m) * 1.4426950408889634)"));
  EXPECT_FALSE(ops_conflict(e.ops, e2.ops)) << e.ops << " | " << e2.ops;
  EXPECT_TRUE(near(e, e2, kDefaultThreshold)) << similarity(e, e2);
  // Pointer arithmetic rewritten with block pointers: the same tensors read and written.
  std::string bp = swap_text(
      kGemm, "    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak\n",
      "    a_ptrs = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),\n"
      "                               offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, "
      "BLOCK_K),\n"
      "                               order=(1, 0))\n");
  bp = swap_text(bp, "        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)\n",
                 "        a = tl.load(a_ptrs, boundary_check=(0, 1))\n");
  bp = swap_text(bp, "        a_ptrs += BLOCK_K * stride_ak\n",
                 "        a_ptrs = tl.advance(a_ptrs, (0, BLOCK_K))\n");
  Signature g = compute_signature(kGemm), gb = compute_signature(bp);
  EXPECT_EQ(g.ops, gb.ops);
  EXPECT_FALSE(ops_conflict(g.ops, gb.ops));
}

// Issue 55, second pass: the same operations on other operands. FlagGems' metax sigmoid and tanh
// backward kernels are one template (kernels 1.00 alike with identifiers normalised, `*` and `-`
// each) around `y * x * (1 - x)` and `y * (1 - x * x)`.
const char* kBackward = R"(import triton
import triton.language as tl

@triton.jit
def sigmoid_backward_kernel(x_ptr, dy_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    dy = tl.load(dy_ptr + offs, mask=mask)
    out = dy * x * (1 - x)
    tl.store(out_ptr + offs, out, mask=mask)
)";

TEST(ValueOps, SharedOperationsOnOtherOperandsConflict) {
  std::string tanh = swap_text(kBackward, "dy * x * (1 - x)", "dy * (1 - x * x)");
  Signature sig = compute_signature(kBackward), th = compute_signature(tanh);
  // The same operations, the same tensors: only the data flow tells them apart.
  EXPECT_EQ(without_edges(sig.ops), without_edges(th.ops));
  EXPECT_NE(sig.ops.find(">*;-"), std::string::npos) << sig.ops;  // `*` of `1 - x`
  EXPECT_NE(th.ops.find(">-;*"), std::string::npos) << th.ops;    // `-` of `x * x`
  expect_apart(kBackward, tanh, "sigmoid vs tanh backward");
  // Based vs ReBased: `1 + s + s * s` against `s * s`, summed: `+` and `*` in both (the other
  // kernels of the file add them), wired otherwise.
  std::string based = swap_text(kBackward, "    out = dy * x * (1 - x)\n",
                                "    s = dy * x\n    out = tl.sum(1 + s + s * s, axis=0) + dy\n");
  std::string rebased = swap_text(kBackward, "    out = dy * x * (1 - x)\n",
                                  "    s = dy * x\n    out = tl.sum(s * s, axis=0) + dy\n");
  expect_apart(based, rebased, "based vs rebased");
}

TEST(ValueOps, EditsThatKeepTheDataFlowStayTogether) {
  // A clamp inserted between two operations both sides apply (`log(x * y)` against
  // `log(maximum(x * y, eps))`) keeps the operands of every shared operation.
  std::string plain = swap_text(kBackward, "dy * x * (1 - x)", "tl.log(dy * x) - x");
  std::string clamped =
      swap_text(kBackward, "dy * x * (1 - x)", "tl.log(tl.maximum(dy * x, 1e-6)) - x");
  Signature a = compute_signature(plain), b = compute_signature(clamped);
  EXPECT_FALSE(ops_conflict(a.ops, b.ops)) << a.ops << " | " << b.ops;
  EXPECT_TRUE(near(a, b, kDefaultThreshold)) << similarity(a, b);
  // A scale by something that is not data passes its operand through: `exp(x - m)` and
  // `exp2((x - m) * LOG2E)` both apply `exp` to `-`.
  Signature e = compute_signature(kSoftmaxRow);
  Signature e2 = compute_signature(
      swap_text(kSoftmaxRow, "tl.exp(x - m)", "tl.exp2((x - m) * 1.4426950408889634)"));
  EXPECT_NE(e2.ops.find(">exp;-"), std::string::npos) << e2.ops;
  EXPECT_EQ(e2.ops.find(">exp;*"), std::string::npos) << e2.ops;
  // Temporaries change nothing: `t = 1 - x; out = dy * x * t` is `dy * x * (1 - x)`.
  std::string temp =
      swap_text(kBackward, "    out = dy * x * (1 - x)\n", "    t = 1 - x\n    out = dy * x * t\n");
  EXPECT_EQ(compute_signature(temp).ops, compute_signature(kBackward).ops);
  // libdevice division imported by name is division, applied to what it divides.
  std::string fdiv = swap_text(kBackward, "dy * x * (1 - x)", "div_rn(dy - x, x)");
  std::string slash = swap_text(kBackward, "dy * x * (1 - x)", "(dy - x) / x");
  EXPECT_EQ(compute_signature(fdiv).ops, compute_signature(slash).ops);
}

// Issue 55, third pass: FlagGems' argmin and min are three kernels each of one template (kernels
// 0.70-0.85 alike); argmin applies `min` too (the value it compares) and stores the index, so its
// operations are a superset of min's. In a file of two kernels the tensors each reads and writes
// are not compared (`io:`): the index of an extremum against the extremum alone is the conflict.
const char* kMinRows = R"(import triton
import triton.language as tl

@triton.jit
def min_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=float("inf"))
    m = tl.min(x, axis=0)
    tl.store(out_ptr + row, m)

@triton.jit
def sigmoid_backward_kernel(x_ptr, dy_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    dy = tl.load(dy_ptr + offs, mask=mask)
    out = dy * x * (1 - x)
    tl.store(out_ptr + offs, out, mask=mask)
)";

// Sorted, comma-separated, as Signature::ops.
std::string ops_of(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  std::string out;
  for (const auto& o : v) out.append(out.empty() ? "" : ",").append(o);
  return out;
}

TEST(ValueOps, TheIndexOfAnExtremumAgainstTheExtremumConflictsAnIndexByComparisonDoesNot) {
  std::string argmin = swap_text(kMinRows, "    tl.store(out_ptr + row, m)\n",
                                 "    i = tl.argmin(x, axis=0)\n    tl.store(out_ptr + row, m)\n"
                                 "    tl.store(out_ptr + N + row, i)\n");
  argmin = swap_text(argmin, "def min_kernel", "def argmin_kernel");
  Signature mn = compute_signature(kMinRows), am = compute_signature(argmin);
  EXPECT_EQ(mn.ops.find("io:"), std::string::npos) << mn.ops;  // two kernels: no io compared
  EXPECT_NE(am.ops.find("argmin"), std::string::npos) << am.ops;
  EXPECT_NE(am.ops.find(",min"), std::string::npos) << am.ops;
  expect_apart(kMinRows, argmin, "min vs argmin, two kernels");
  EXPECT_TRUE(
      ops_conflict(ops_of({"argmax", "max", ">argmax;x", ">max;x"}), ops_of({"max", ">max;x"})));
  // An index found by comparing with the extremum (aiter's bitonic top-k, where FlagGems' takes
  // `argmin`) is the same index, whatever else tells the files apart.
  EXPECT_FALSE(ops_conflict(ops_of({"==", "argmin", "min", ">argmin;x", ">min;x", ">==;x"}),
                            ops_of({"==", "min", ">==;min", ">==;x", ">min;x"})));
  EXPECT_FALSE(ops_conflict(ops_of({"argmin", "min", ">argmin;x", ">min;x"}),
                            ops_of({"argmin", "min", ">argmin;x", ">min;x", "+", ">+;x"})));
}

}  // namespace
}  // namespace kforge::dedup
