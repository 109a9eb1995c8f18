// Links through kernels (signature.hpp kernel_link): files whose kernels are within another's or
// aligned one to one with another's are near whatever their file similarity; LSH finds them and
// corpus groups take them, one way for a file within another. Real-shaped files: a softmax kernel
// carried by a test module, a two-kernel layer norm and its revision, code generators.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/lsh.hpp"
#include "kforge/dedup/signature.hpp"
#include "testutil.hpp"

namespace kforge::dedup {
namespace {

std::string edit_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

const char* kSoftmax = R"(import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf'))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols,
                              BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y
)";

// A test module that carries the softmax kernel (renamed, reformatted) beside a kernel of its own
// and much host code: the softmax file's one kernel is within it.
std::string test_module(const std::string& own_kernel, const std::string& flavour) {
  std::string k = std::string(kSoftmax).substr(std::string(kSoftmax).find("@triton.jit"));
  k = k.substr(0, k.find("\ndef softmax("));
  k = edit_all(k, "softmax_kernel", "_kernel");
  k = edit_all(k, "row_minus_max", "shifted");
  k = edit_all(k, "numerator", "num");
  std::string code =
      "import pytest\nimport torch\nimport triton\nimport triton.language as tl\n\n" + k + "\n" +
      own_kernel + "\n";
  for (int i = 0; i < 12; ++i) {
    std::string n = std::to_string(i);
    code +=
        "@pytest.mark.parametrize('shape', [(" + n + ", 1024), (4, " + n + ")])\n" + "def test_" +
        flavour + "_" + n + "(shape):\n    x = torch.randn(shape, device='cuda')\n" +
        "    y = torch.empty_like(x)\n    _kernel[(shape[0],)](y, x, x.stride(0), y.stride(0), " +
        "shape[1], BLOCK_SIZE=1024)\n    torch.testing.assert_close(y, torch." + flavour +
        "(x, dim=" + n + "))\n\n";
  }
  return code;
}

const char* kScale = R"(@triton.jit
def scale_rows_kernel(x_ptr, s_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + row)
    y = x * s + tl.sqrt(s)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)
)";

const char* kCumsum = R"(@triton.jit
def row_cumsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    acc = tl.cumsum(x, axis=0)
    tl.store(out_ptr + row * stride + cols, acc, mask=mask)
)";

const char* kLayerNorm = R"(import torch
import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, stride, N, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    tl.store(DW + row * N + cols, partial_dw, mask=mask)
    tl.store(DB + row * N + cols, partial_db, mask=mask)


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps):
        y = torch.empty_like(x)
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
        _layer_norm_fwd[(M, )](x_arg, y, weight, bias, mean, rstd, x_arg.stride(0), N, eps,
                               BLOCK_SIZE=1024, num_warps=8)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return y
)";

// kLayerNorm's later revision: int64 row offsets, pointer arithmetic without moving the base
// pointers, an eps clamp, a mask kept in a variable; the host code rewritten.
std::string layer_norm_revision() {
  std::string r = kLayerNorm;
  r = edit_all(r, "row = tl.program_id(0)\n", "row = tl.program_id(0).to(tl.int64)\n");
  r = edit_all(r, "    Y += row * stride\n    X += row * stride\n",
               "    y_row = Y + row * stride\n    x_row = X + row * stride\n");
  r = edit_all(r, "tl.load(X + cols, mask=cols < N, other=0.)",
               "tl.load(x_row + cols, mask=cols < N, other=0.)");
  r = edit_all(r, "tl.load(X + cols, mask=mask, other=0.)",
               "tl.load(x_row + cols, mask=mask, other=0.)");
  r = edit_all(r, "tl.store(Y + cols, y, mask=mask)", "tl.store(y_row + cols, y, mask=mask)");
  r = edit_all(r, "rstd = 1 / tl.sqrt(var + eps)", "rstd = 1 / tl.sqrt(tl.maximum(var, 0.) + eps)");
  r = edit_all(r, "    X += row * stride\n    DY += row * stride\n    DX += row * stride\n",
               "    offs = row * stride + cols\n");
  r = edit_all(r, "tl.load(X + cols, mask=mask, other=0)", "tl.load(X + offs, mask=mask, other=0)");
  r = edit_all(r, "tl.load(DY + cols, mask=mask, other=0)",
               "tl.load(DY + offs, mask=mask, other=0)");
  r = edit_all(r, "tl.store(DX + cols, dx, mask=mask)", "tl.store(DX + offs, dx, mask=mask)");
  // Its variables renamed (file signatures keep identifiers, kernel sketches do not).
  for (auto [from, to] :
       {std::pair{"cols", "col_offs"}, std::pair{"mask", "col_mask"}, std::pair{"mean", "mu"},
        std::pair{"rstd", "inv_std"}, std::pair{"_var", "acc_sq"}, std::pair{"_mean", "acc"}})
    r = edit_all(r, from, to);
  r = r.substr(0, r.find("class LayerNorm"));
  r += R"(def layer_norm_fwd(x, weight, bias, eps, residual=None, out_dtype=None):
    M, N = x.shape
    assert x.stride(-1) == 1
    if residual is not None:
        x = x + residual
    y = torch.empty_like(x, dtype=out_dtype or x.dtype)
    mean = torch.empty((M,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    BLOCK = min(65536 // x.element_size(), triton.next_power_of_2(N))
    with torch.cuda.device(x.device.index):
        _layer_norm_fwd[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=BLOCK)
    return y, mean, rstd
)";
  return r;
}

TEST(KernelLinks, AFileWhoseKernelsAreAllInAnotherIsWithinItWhateverTheHostCode) {
  Signature small = compute_signature(kSoftmax);
  Signature test = compute_signature(test_module(kScale, "softmax"));
  ASSERT_EQ(small.kernels.size(), 1u);
  ASSERT_EQ(test.kernels.size(), 2u);
  std::printf("softmax file vs the test module that carries its kernel: %.2f\n",
              similarity(small, test));
  EXPECT_LT(similarity(small, test), kDefaultThreshold);
  EXPECT_TRUE(kernels_within(small, test));
  EXPECT_FALSE(kernels_within(test, small));  // the test module's own kernel is not in it
  EXPECT_EQ(kernel_link(small, test), KernelLink::a_within_b);
  EXPECT_EQ(kernel_link(test, small), KernelLink::b_within_a);
  // Links through kernels do not depend on the file threshold.
  EXPECT_TRUE(near(small, test, kDefaultThreshold));
  EXPECT_TRUE(near(test, small, 0.95));
  // Another file with another kernel around the same host code is not within.
  Signature other = compute_signature(
      edit_all(kSoftmax, "    row_minus_max = row - tl.max(row, axis=0)\n",
               "    row_minus_max = row - tl.max(row, axis=0)\n    row_minus_max = row_minus_max * "
               "tl.sigmoid(row_minus_max) + tl.log(tl.abs(row) + 1.0) - tl.sqrt(tl.abs(row))\n"));
  EXPECT_FALSE(kernels_within(other, test));
  // One template around another operation: the softmax kernel with tl.exp swapped for
  // tl.sigmoid may be within a module as a kernel, but the operations conflict, so not near.
  Signature sig = compute_signature(edit_all(kSoftmax, "tl.exp(", "tl.sigmoid("));
  Signature test2 = compute_signature(test_module(kCumsum, "softmax"));
  EXPECT_TRUE(ops_conflict(sig.ops, test2.ops));
  EXPECT_FALSE(near(sig, test2, kDefaultThreshold));
  // The same math rewritten: exp(x) as exp2(x * log2(e)) is no conflict.
  Signature exp2 = compute_signature(
      edit_all(kSoftmax, "tl.exp(row_minus_max)", "tl.exp2(row_minus_max * 1.4426950408889634)"));
  Signature plain = compute_signature(kSoftmax);
  EXPECT_NE(exp2.ops.find("exp"), std::string::npos);
  EXPECT_FALSE(ops_conflict(exp2.ops, plain.ops)) << exp2.ops << " vs " << plain.ops;
  EXPECT_TRUE(near(exp2, plain, kDefaultThreshold));
}

TEST(KernelLinks, ARevisionThatEditsEveryKernelIsAlignedWithIt) {
  Signature old_rev = compute_signature(kLayerNorm);
  Signature new_rev = compute_signature(layer_norm_revision());
  ASSERT_EQ(old_rev.kernels.size(), 2u);
  ASSERT_EQ(new_rev.kernels.size(), 2u);
  std::printf("layer norm revisions: files %.2f, kernels %.2f and %.2f\n",
              similarity(old_rev, new_rev),
              sketch_similarity(old_rev.kernels[0], new_rev.kernels[0]),
              sketch_similarity(old_rev.kernels[1], new_rev.kernels[1]));
  EXPECT_LT(similarity(old_rev, new_rev), kDefaultThreshold);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_GE(sketch_similarity(old_rev.kernels[i], new_rev.kernels[i]), kAlignThreshold);
  EXPECT_FALSE(kernels_within(old_rev, new_rev));  // an edited kernel is below 0.9
  EXPECT_FALSE(kernels_within(new_rev, old_rev));
  EXPECT_EQ(kernel_link(old_rev, new_rev), KernelLink::aligned);
  EXPECT_TRUE(near(old_rev, new_rev, kDefaultThreshold));
  // Without the backward kernel the counts differ: the edited forward kernel (0.84) is not within
  // the other's (0.9), but its name is among the original's and their code overlaps (a copy that
  // drops a kernel: named within).
  std::string fwd_only = layer_norm_revision();
  fwd_only = fwd_only.substr(0, fwd_only.find("@triton.jit\ndef _layer_norm_bwd_dx"));
  Signature fwd = compute_signature(fwd_only);
  ASSERT_EQ(fwd.kernels.size(), 1u);
  EXPECT_FALSE(kernels_within(fwd, old_rev));
  EXPECT_EQ(kernel_link(fwd, old_rev), KernelLink::named_within);
  // Two kernels of which one is unrelated: not aligned (its counterpart is below 0.6).
  std::string swapped = layer_norm_revision();
  swapped = swapped.substr(0, swapped.find("@triton.jit\ndef _layer_norm_bwd_dx")) + kScale;
  EXPECT_EQ(kernel_link(compute_signature(swapped), old_rev), KernelLink::none);
}

// Issue 55, third pass: a backend copy or vendored port that keeps its kernels' names, edits one,
// and adds a kernel of its own (aiter's copy of FlagGems' bitonic top-k, Liger's NPU sparsemax):
// neither within (an edited kernel is below 0.9), aligned nor named alike (the counts differ),
// but every kernel name of one is among the other's and their code overlaps.
TEST(KernelLinks, APortThatKeepsItsKernelNamesAndAddsAKernelIsNamedWithin) {
  std::string port = layer_norm_revision();
  port = port.substr(0, port.find("def layer_norm_fwd("));
  std::string bwd = kLayerNorm;
  bwd = bwd.substr(bwd.find("@triton.jit\ndef _layer_norm_bwd_dx"));
  bwd = bwd.substr(0, bwd.find("class LayerNorm"));
  // The revision's backward kernel is edited too; the port keeps the original one.
  port = port.substr(0, port.find("@triton.jit\ndef _layer_norm_bwd_dx")) + bwd + kScale;
  Signature a = compute_signature(kLayerNorm), b = compute_signature(port);
  ASSERT_EQ(a.kernels.size(), 2u);
  ASSERT_EQ(b.kernels.size(), 3u);
  EXPECT_GT(b.kernels[2].tokens, 60);  // stored with the sketch: the weight of each kernel
  EXPECT_EQ(b.kernel_names.substr(0, b.kernel_names.find(',')),
            "_layer_norm_fwd/10/" + std::to_string(b.kernels[0].tokens));
  std::printf("port with a kernel more: files %.2f, forward kernels %.2f\n", similarity(a, b),
              sketch_similarity(a.kernels[0], b.kernels[0]));
  EXPECT_LT(sketch_similarity(a.kernels[0], b.kernels[0]), kContainThreshold);
  EXPECT_FALSE(kernels_within(a, b));
  EXPECT_FALSE(kernels_aligned(a, b));
  EXPECT_FALSE(kernels_named(a, b));
  EXPECT_TRUE(kernels_named_within(a, b));
  EXPECT_EQ(kernel_link(a, b), KernelLink::named_within);
  EXPECT_EQ(kernel_link(b, a), KernelLink::named_within);
  EXPECT_TRUE(near(a, b, 0.95));  // whatever the file threshold
  // The kernels renamed: a sibling of one template takes other names.
  std::string renamed = edit_all(port, "_layer_norm_", "_rms_norm_");
  EXPECT_FALSE(kernels_named_within(a, compute_signature(renamed)));
  // The names kept, the code another's: the scale and cumsum kernels under the layer norm's names.
  std::string other = edit_all(std::string(kScale), "scale_rows_kernel", "_layer_norm_fwd") + "\n" +
                      edit_all(std::string(kCumsum), "row_cumsum_kernel", "_layer_norm_bwd_dx");
  Signature c = compute_signature("import triton\nimport triton.language as tl\n\n" + other);
  ASSERT_EQ(c.kernels.size(), 2u);
  EXPECT_FALSE(kernels_named_within(a, c));
  EXPECT_EQ(kernel_link(a, c), KernelLink::none);
}

TEST(KernelLinks, FilesWithoutKernelsNeedMoreSimilarity) {
  // Two code generators that write their kernels as strings: no @jit function, the same host
  // code around another operation.
  std::string gen = "import triton\n\ndef generate(op, rank, dtype):\n";
  for (int i = 0; i < 8; ++i) {
    std::string n = std::to_string(i);
    gen += "    idx" + n + " = make_index(rank, " + n + ", stride_" + n + ")\n" +
           "    code.writeline(f'x" + n + " = tl.load(in" + n + " + {idx" + n + "})')\n";
  }
  gen += "    code.writeline(OP_LINE)\n    return code.finish(dtype)\n";
  Signature a = compute_signature(edit_all(gen, "OP_LINE", "emit_put(code, rank, dtype)"));
  Signature b = compute_signature(edit_all(edit_all(gen, "OP_LINE", "emit_select(code, rank)"),
                                           "make_index(rank", "make_index(rank + 1"));
  ASSERT_TRUE(a.kernelless);
  ASSERT_TRUE(b.kernelless);
  double s = similarity(a, b);
  std::printf("two kernel-less generators: %.2f\n", s);
  ASSERT_GE(s, kDefaultThreshold);
  ASSERT_LT(s, kKernellessThreshold);
  EXPECT_FALSE(near(a, b, kDefaultThreshold));
  // The same generator with a comment and another constant is still near.
  EXPECT_TRUE(near(
      a,
      compute_signature("# generated\n" + edit_all(gen, "OP_LINE", "emit_put(code, rank, dtype)")),
      kDefaultThreshold));
  EXPECT_FALSE(compute_signature(kSoftmax).kernelless);
}

TEST(KernelLinks, CrlfFilesGluonAndTritonDistKernelsAreReadLibdeviceDivisionIsDivision) {
  // Windows line ends: the kernels end where they do with '\n' (a blank line inside a kernel
  // used to end it).
  Signature lf = compute_signature(kLayerNorm);
  Signature crlf = compute_signature(edit_all(kLayerNorm, "\n", "\r\n"));
  EXPECT_EQ(lf.kernels_sha, crlf.kernels_sha);
  EXPECT_EQ(lf.bodies, crlf.bodies);
  EXPECT_EQ(lf.kernels.size(), crlf.kernels.size());
  EXPECT_EQ(kernel_link(lf, crlf), KernelLink::same);
  // Kernels under Triton-distributed's and Gluon's decorators are kernels.
  for (const char* deco : {"@triton_dist.jit", "@gluon.jit"}) {
    Signature s = compute_signature(edit_all(kSoftmax, "@triton.jit", deco));
    EXPECT_FALSE(s.kernelless) << deco;
    EXPECT_EQ(s.kernels_sha, compute_signature(kSoftmax).kernels_sha) << deco;
  }
  // Division written as libdevice's fdiv is division: no conflict with `/`.
  Signature fdiv = compute_signature(
      edit_all(kSoftmax, "numerator / denominator", "tl.math.fdiv(numerator, denominator)"));
  EXPECT_FALSE(ops_conflict(fdiv.ops, compute_signature(kSoftmax).ops));
}

TEST(KernelLinks, LshFindsPairsLinkedThroughKernelsAtAnyFileSimilarity) {
  std::vector<LshItem> items;
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  std::int64_t id = 1;
  for (const auto& r : corpus)
    items.push_back({id++, compute_signature(r["output"].get<std::string>()), 0});
  std::int64_t s = id, t = id + 1, o = id + 2, n = id + 3;
  items.push_back({id++, compute_signature(kSoftmax), 11});
  items.push_back({id++, compute_signature(test_module(kScale, "softmax")), 12});
  items.push_back({id++, compute_signature(kLayerNorm), 13});
  items.push_back({id++, compute_signature(layer_norm_revision()), 14});
  LshResult r = find_pairs(items, kPairFloor);
  std::map<std::pair<std::int64_t, std::int64_t>, LshPair> got;
  for (const auto& p : r.pairs) got[{p.a, p.b}] = p;
  // The test module is linked to the softmax file, or to the file that stands for the softmax
  // file's class (TritonBench-G has the same kernel: an exact pair), its kernels within.
  std::int64_t stand_in = s;
  for (const auto& p : r.pairs)
    if (p.b == s && (p.exact || p.link == static_cast<int>(KernelLink::same))) stand_in = p.a;
  const std::pair<std::int64_t, std::int64_t> within{stand_in, t}, aligned{o, n};
  ASSERT_EQ(got.count(within), 1u);
  EXPECT_LT(got[within].similarity, kPairFloor);
  EXPECT_EQ(got[within].link, static_cast<int>(KernelLink::a_within_b));
  ASSERT_EQ(got.count(aligned), 1u);
  EXPECT_EQ(got[aligned].link, static_cast<int>(KernelLink::aligned));
  // Every stored pair is at or above the floor or linked, and carries the link kernel_link gives.
  std::map<std::int64_t, const Signature*> by_id;
  for (const auto& it : items) by_id[it.id] = &it.sig;
  for (const auto& p : r.pairs) {
    EXPECT_TRUE(p.similarity >= kPairFloor || p.link != 0) << p.a << " " << p.b;
    if (!p.exact) {
      EXPECT_EQ(p.link, static_cast<int>(kernel_link(*by_id[p.a], *by_id[p.b])));
    }
  }
  EXPECT_GT(r.kernel_candidates, 0);
}

class KernelLinkStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "k.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(db).value();
  }
  void import(const nlohmann::json& records) {
    test::write_text(dir_ / "c.json", records.dump());
    corpus::ImportOptions opts;
    opts.map.key = "key";
    auto r = corpus::import_file(*db_, dir_ / "c.json", opts, clock_);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  test::TempDir dir_;
  std::unique_ptr<store::Db> db_;
  ManualClock clock_;
};

TEST_F(KernelLinkStore, AFileWithinTwoOthersJoinsOneOfThemAndNeverMakesThemOneGroup) {
  // The softmax file's kernel is carried by two test modules that are not near each other
  // (their own kernels differ, each within neither): the small file may join one of them, the two
  // modules never share a group through it. The layer norm and its revision are one group.
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "softmax.py"}, {"code", kSoftmax}});
  recs.push_back({{"key", "test_scale.py"}, {"code", test_module(kScale, "softmax")}});
  recs.push_back({{"key", "test_cumsum.py"}, {"code", test_module(kCumsum, "log_softmax")}});
  recs.push_back({{"key", "layer_norm.py"}, {"code", kLayerNorm}});
  recs.push_back({{"key", "layer_norm_v2.py"}, {"code", layer_norm_revision()}});
  import(recs);
  ASSERT_FALSE(near(compute_signature(test_module(kScale, "softmax")),
                    compute_signature(test_module(kCumsum, "log_softmax")), kDefaultThreshold));
  UpdateOptions u;
  u.threads = 2;
  ASSERT_TRUE(update(*db_, u, clock_).ok());
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::map<std::string, const Group*> group_of;
  std::map<std::string, Member> member;
  for (const auto& grp : *g)
    for (const auto& m : grp.members) group_of[m.key] = &grp, member[m.key] = m;
  ASSERT_EQ(group_of.count("softmax.py"), 1u);
  const Group* sg = group_of["softmax.py"];
  EXPECT_NE(group_of["test_scale.py"] == sg, group_of["test_cumsum.py"] == sg)
      << "the small file joins exactly one of the modules that carry its kernel";
  EXPECT_TRUE(group_of.count("test_scale.py") == 0 || group_of.count("test_cumsum.py") == 0 ||
              group_of["test_scale.py"] != group_of["test_cumsum.py"]);
  // The module holding the kernel is the representative; the small file is linked "within".
  EXPECT_NE(sg->center, member["softmax.py"].sample_id);
  EXPECT_EQ(member["softmax.py"].via, Via::within);
  EXPECT_LT(member["softmax.py"].similarity, kDefaultThreshold);
  ASSERT_EQ(group_of.count("layer_norm.py"), 1u);
  EXPECT_EQ(group_of["layer_norm.py"], group_of["layer_norm_v2.py"]);
  const Group* lg = group_of["layer_norm.py"];
  EXPECT_EQ(lg->members.size(), 2u);
  EXPECT_EQ(lg->through_kernels, 1);
  for (const auto& m : lg->members)
    if (m.sample_id != lg->center) {
      EXPECT_EQ(m.via, Via::aligned);
    }
  // The same at a stricter threshold: links through kernels do not depend on it.
  auto strict = groups_at(*db_, 0.95);
  ASSERT_TRUE(strict.ok());
  std::set<std::string> grouped;
  for (const auto& grp : *strict)
    for (const auto& m : grp.members) grouped.insert(m.key);
  EXPECT_EQ(grouped.count("softmax.py"), 1u);
  EXPECT_EQ(grouped.count("layer_norm_v2.py"), 1u);
}

}  // namespace
}  // namespace kforge::dedup

namespace kforge::dedup {
namespace {

// A five-line helper file and the library that holds its helpers among kernels of its own; a
// file whose only @jit function is trivial (`return x`) and another module with the same.
const char* kHelperFile = R"(import triton
import triton.language as tl

@triton.jit
def prev_multiple_of(a, b):
    return tl.cdiv(a, b) * b - b

@triton.jit
def exp_f32(x):
    return tl.exp(x.to(tl.float32))
)";

std::string helper_library() {
  return std::string(kSoftmax) + R"(

@triton.jit
def prev_multiple_of(value, step):
    return tl.cdiv(value, step) * step - step

@triton.jit
def fast_exp(v):
    return tl.exp(v.to(tl.float32))

@triton.jit
def log_f32(x):
    return tl.log(x.to(tl.float32))
)";
}

const char* kTrivialA = R"(import triton
import torch

@triton.jit
def copy_func(x):
    return x

def cat(tensors, dim=0):
    return torch.cat(tensors, dim)
)";

TEST(SmallKernelsWithin, AHelperFileInsideALibraryIsWithinItWhateverTheirSizes) {
  Signature helpers = compute_signature(kHelperFile), library = compute_signature(helper_library());
  ASSERT_TRUE(helpers.kernels.empty());  // every function below the sketch floor
  ASSERT_EQ(helpers.body_ids.size(), 2u);
  std::printf("helper file vs library: files %.2f\n", similarity(helpers, library));
  EXPECT_LT(similarity(helpers, library), kDefaultThreshold);
  EXPECT_TRUE(kernels_within(helpers, library));
  EXPECT_FALSE(kernels_within(library, helpers));
  EXPECT_EQ(kernel_link(helpers, library), KernelLink::a_bodies_in_b);
  EXPECT_EQ(kernel_link(library, helpers), KernelLink::b_bodies_in_a);
  EXPECT_TRUE(near(helpers, library, kDefaultThreshold));
  // One helper missing from the library: not within.
  std::string partial = helper_library();
  partial.replace(partial.find("tl.exp(v.to"), 6, "tl.log(");
  EXPECT_FALSE(kernels_within(helpers, compute_signature(partial)));
  // A trivial body (below kMinBodyTokens) links nothing.
  Signature trivial = compute_signature(kTrivialA);
  EXPECT_TRUE(trivial.body_ids.empty());
  std::string other = helper_library() + "\n@triton.jit\ndef copy_func(x):\n    return x\n";
  EXPECT_EQ(kernel_link(trivial, compute_signature(other)), KernelLink::none);
}

TEST_F(KernelLinkStore, AHelperFileIsGroupedWithTheLibraryThatHoldsItsKernels) {
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "helpers.py"}, {"code", kHelperFile}});
  recs.push_back({{"key", "library.py"}, {"code", helper_library()}});
  recs.push_back({{"key", "cat.py"}, {"code", kTrivialA}});
  recs.push_back({{"key", "hstack.py"},
                  {"code", helper_library() + "\n@triton.jit\ndef copy_func(x):\n    return x\n"}});
  import(recs);
  UpdateOptions u;
  u.threads = 2;
  ASSERT_TRUE(update(*db_, u, clock_).ok());
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::map<std::string, const Group*> group_of;
  std::map<std::string, Member> member;
  for (const auto& grp : *g)
    for (const auto& m : grp.members) group_of[m.key] = &grp, member[m.key] = m;
  ASSERT_EQ(group_of.count("helpers.py"), 1u);
  EXPECT_EQ(member["helpers.py"].via, Via::within);
  EXPECT_NE(group_of["helpers.py"]->center, member["helpers.py"].sample_id);
  EXPECT_EQ(group_of.count("cat.py"), 0u);  // `return x` says nothing
}

// Nearly all (issue 55): a file of three or more small kernels whose bodies the library holds but
// one of its own (aiter's chunk_delta_attn_utils.py holds four of fla's op.py helpers and a
// softplus). Its own kernel applies an operation the library does not, and the library applies
// its own: a conflict of operations, which a link through the same bodies is not vetoed by.
std::string nearly_all_file() {
  return std::string(kHelperFile) +
         "\n@triton.jit\ndef soft_norm(x):\n    return tl.sqrt(x * x + 1.0) / (tl.abs(x) + 1.0)\n";
}

TEST(SmallKernelsWithin, AFileOfThreeSmallKernelsIsWithinOneThatHoldsAllButOne) {
  Signature three = compute_signature(nearly_all_file());
  Signature library = compute_signature(helper_library());
  ASSERT_TRUE(three.kernels.empty());
  ASSERT_EQ(three.body_ids.size(), 3u);
  EXPECT_TRUE(ops_conflict(three.ops, library.ops)) << three.ops << " | " << library.ops;
  EXPECT_TRUE(kernels_within(three, library));
  EXPECT_EQ(kernel_link(three, library), KernelLink::a_bodies_in_b);
  EXPECT_EQ(kernel_link(library, three), KernelLink::b_bodies_in_a);
  EXPECT_TRUE(near(three, library, kDefaultThreshold));
  // Two of its three bodies missing: not within, and the conflict stands.
  std::string partial = helper_library();
  partial.replace(partial.find("tl.exp(v.to"), 6, "tl.log(");
  Signature other = compute_signature(partial);
  EXPECT_FALSE(kernels_within(three, other));
  EXPECT_FALSE(near(three, other, kDefaultThreshold));
  // A file of two small kernels needs both (all but one of two is half of it).
  EXPECT_FALSE(kernels_within(compute_signature(kHelperFile), other));
}

TEST_F(KernelLinkStore, AFileWithAllButOneOfItsSmallKernelsInALibraryIsGroupedWithIt) {
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "three.py"}, {"code", nearly_all_file()}});
  recs.push_back({{"key", "library.py"}, {"code", helper_library()}});
  import(recs);
  UpdateOptions u;
  u.threads = 2;
  ASSERT_TRUE(update(*db_, u, clock_).ok());
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_EQ(g->size(), 1u);
  std::map<std::string, Member> member;
  for (const auto& m : g->front().members) member[m.key] = m;
  ASSERT_EQ(member.count("three.py"), 1u);
  EXPECT_EQ(member["three.py"].via, Via::within);
  // The library is the representative: it holds the small file's kernels, not the other way.
  EXPECT_EQ(g->front().center, member["library.py"].sample_id);
}

}  // namespace
}  // namespace kforge::dedup
