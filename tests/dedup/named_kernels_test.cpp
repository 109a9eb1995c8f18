// Kernels named alike (signature.hpp kernel_link, link `named`): a single-kernel revision or
// backend copy that edits the body and keeps the kernel's name and parameters is linked to the
// original whatever the similarity of the two files; a variant of the kernel that changes its
// interface, or the same edits under another name, is not. Real-shaped files: lightllm's
// flash-decoding stage-2 reduction and the edits its revisions and ports make.

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/lsh.hpp"
#include "kforge/dedup/signature.hpp"
#include "testutil.hpp"

namespace kforge::dedup {
namespace {

std::string edit(std::string s, const std::string& from, const std::string& to) {
  std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

const char* kStage2 = R"(import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel_flash_decode_stage2(
    B_Seqlen,
    Mid_O,  # [batch, head, seq_block_num, head_dim]
    Mid_O_LogExpSum,  # [batch, head, seq_block_num]
    O,  # [batch, head, head_dim]
    stride_mid_ob,
    stride_mid_oh,
    stride_mid_os,
    stride_mid_od,
    stride_mid_o_eb,
    stride_mid_o_eh,
    stride_mid_o_es,
    stride_obs,
    stride_oh,
    stride_od,
    BLOCK_SEQ: tl.constexpr,
    BLOCK_DMODEL: tl.constexpr,
):
    cur_batch = tl.program_id(0)
    cur_head = tl.program_id(1)

    offs_d = tl.arange(0, BLOCK_DMODEL)
    cur_batch_seq_len = tl.load(B_Seqlen + cur_batch)

    block_n_size = tl.where(cur_batch_seq_len <= 0, 0, cur_batch_seq_len + BLOCK_SEQ - 1) // BLOCK_SEQ

    sum_exp = 0.0
    max_logic = -float("inf")
    acc = tl.zeros([BLOCK_DMODEL], dtype=tl.float32)

    offs_v = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + offs_d
    offs_logic = cur_batch * stride_mid_o_eb + cur_head * stride_mid_o_eh
    for block_seq_n in range(0, block_n_size, 1):
        tv = tl.load(Mid_O + offs_v + block_seq_n * stride_mid_os)
        tlogic = tl.load(Mid_O_LogExpSum + offs_logic + block_seq_n)
        new_max_logic = tl.maximum(tlogic, max_logic)

        old_scale = tl.exp(max_logic - new_max_logic)
        acc *= old_scale
        exp_logic = tl.exp(tlogic - new_max_logic)
        acc += exp_logic * tv
        sum_exp = sum_exp * old_scale + exp_logic
        max_logic = new_max_logic

    tl.store(O + cur_batch * stride_obs + cur_head * stride_oh + offs_d, acc / sum_exp)
    return


@torch.no_grad()
def flash_decode_stage2(mid_out, mid_out_logexpsum, B_Seqlen, O, block_seq):
    Lk = mid_out.shape[-1]
    assert Lk in {16, 32, 64, 128}
    batch, head_num = mid_out.shape[0], mid_out.shape[1]
    grid = (batch, head_num)

    _fwd_kernel_flash_decode_stage2[grid](
        B_Seqlen, mid_out, mid_out_logexpsum, O,
        mid_out.stride(0), mid_out.stride(1), mid_out.stride(2), mid_out.stride(3),
        mid_out_logexpsum.stride(0), mid_out_logexpsum.stride(1), mid_out_logexpsum.stride(2),
        O.stride(0), O.stride(1), O.stride(2),
        BLOCK_SEQ=block_seq,
        BLOCK_DMODEL=Lk,
        num_warps=4,
        num_stages=2,
    )
    return
)";

// The softmax state's variables renamed (file signatures keep identifiers, kernel sketches do
// not).
std::string rename_variables(std::string r) {
  for (auto [from, to] : {std::pair{"tlogic", "cur_logic"}, std::pair{"new_max_logic", "m_new"},
                          std::pair{"max_logic", "m_old"}, std::pair{"old_scale", "alpha"}}) {
    for (std::size_t at = r.find(from); at != std::string::npos; at = r.find(from, at))
      r.replace(at, std::string(from).size(), to);
  }
  return r;
}

// A later revision of the kernel: int64 program ids, row offsets kept in pointers, a head-dim
// mask; its variables renamed and its host code rewritten. The parameters are the same.
std::string stage2_revision(const std::string& name = "_fwd_kernel_flash_decode_stage2") {
  std::string r = kStage2;
  r = edit(r, "    cur_batch = tl.program_id(0)\n    cur_head = tl.program_id(1)\n",
           "    cur_batch = tl.program_id(0).to(tl.int64)\n"
           "    cur_head = tl.program_id(1).to(tl.int64)\n");
  r = edit(r, "    offs_d = tl.arange(0, BLOCK_DMODEL)\n",
           "    offs_d = tl.arange(0, BLOCK_DMODEL)\n    mask_d = offs_d < BLOCK_DMODEL\n");
  r = edit(r,
           "    offs_v = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + offs_d\n"
           "    offs_logic = cur_batch * stride_mid_o_eb + cur_head * stride_mid_o_eh\n",
           "    v_ptrs = Mid_O + cur_batch * stride_mid_ob + cur_head * stride_mid_oh + offs_d\n"
           "    logic_ptrs = Mid_O_LogExpSum + cur_batch * stride_mid_o_eb + cur_head * "
           "stride_mid_o_eh\n");
  r = edit(r, "tl.load(Mid_O + offs_v + block_seq_n * stride_mid_os)",
           "tl.load(v_ptrs + block_seq_n * stride_mid_os, mask=mask_d, other=0.0)");
  r = edit(r, "tl.load(Mid_O_LogExpSum + offs_logic + block_seq_n)",
           "tl.load(logic_ptrs + block_seq_n * stride_mid_o_es)");
  r = edit(r, "acc / sum_exp)", "acc / sum_exp, mask=mask_d)");
  r = rename_variables(r);
  r = r.substr(0, r.find("@torch.no_grad()"));
  r += R"(def flash_decode_stage2(mid_out, mid_out_logexpsum, B_Seqlen, out, block_seq):
    batch, head_num, _, head_dim = mid_out.shape
    _fwd_kernel_flash_decode_stage2[(batch, head_num)](
        B_Seqlen, mid_out, mid_out_logexpsum, out,
        *mid_out.stride(), *mid_out_logexpsum.stride(), *out.stride(),
        BLOCK_SEQ=block_seq, BLOCK_DMODEL=head_dim, num_warps=4, num_stages=2)
)";
  if (name != "_fwd_kernel_flash_decode_stage2") {
    for (std::size_t at = r.find("_fwd_kernel_flash_decode_stage2"); at != std::string::npos;
         at = r.find("_fwd_kernel_flash_decode_stage2", at))
      r.replace(at, std::string("_fwd_kernel_flash_decode_stage2").size(), name);
  }
  return r;
}

// A variant that changes the kernel's interface: a per-head sink logit (one parameter more),
// loaded and folded into the softmax; int64 program ids and the variables renamed as in the
// revision.
std::string stage2_with_sinks() {
  std::string r = kStage2;
  r = edit(r, "    cur_batch = tl.program_id(0)\n    cur_head = tl.program_id(1)\n",
           "    cur_batch = tl.program_id(0).to(tl.int64)\n"
           "    cur_head = tl.program_id(1).to(tl.int64)\n");
  r = edit(r, "    O,  # [batch, head, head_dim]\n",
           "    O,  # [batch, head, head_dim]\n    Sinks,  # [head]\n");
  r = edit(r, "    acc = tl.zeros([BLOCK_DMODEL], dtype=tl.float32)\n",
           "    acc = tl.zeros([BLOCK_DMODEL], dtype=tl.float32)\n"
           "    sink = tl.load(Sinks + cur_head).to(tl.float32)\n");
  r = edit(r, "acc / sum_exp)", "acc / (sum_exp + tl.exp(sink - max_logic)))");
  return rename_variables(r);
}

// FlagGems-shaped pointwise modules: a one-line @jit body (below the kernel floor) wrapped by a
// code generator's decorator, a logger and a host function. Backend copies rewrite the imports
// and the logger and keep the body.
std::string pointwise_module(const std::string& body_line, const std::string& logger_line,
                             const std::string& imports,
                             const std::string& host = "    return isinf_func(A)\n") {
  return "import logging\n\nimport triton\nimport triton.language as tl\n\n" + imports + "\n\n" +
         logger_line + "\n_isinf = tl_extra_shim.isinf\n\n\n" +
         "@pointwise_dynamic(promotion_methods=[(0, \"ALWAYS_BOOL\")])\n@triton.jit\n" +
         "def isinf_func(x):\n    " + body_line + "\n\n\ndef isinf(A):\n" +
         "    logger.debug(\"GEMS ISINF\")\n" + host;
}

std::string isinf_module() {
  return pointwise_module("return _isinf(x.to(tl.float32))", "logger = logging.getLogger(__name__)",
                          "from flag_gems.utils import pointwise_dynamic, tl_extra_shim");
}

// A backend copy: other imports and logger, the host call edited, the body the same.
std::string isinf_port() {
  return pointwise_module(
      "return _isinf(x.to(tl.float32))",
      "logger = logging.getLogger(\"flag_gems\").getChild(__name__.lstrip(\".\"))",
      "from flag_gems.utils import tl_extra_shim\n\nfrom ..utils.pointwise_dynamic import "
      "pointwise_dynamic",
      "    return isinf_func(A.contiguous(), out0=None)\n");
}

TEST(NamedKernels, ASingleKernelRevisionThatKeepsNameAndParametersIsLinked) {
  Signature old_rev = compute_signature(kStage2);
  Signature new_rev = compute_signature(stage2_revision());
  ASSERT_EQ(old_rev.kernels.size(), 1u);
  ASSERT_EQ(new_rev.kernels.size(), 1u);
  EXPECT_EQ(old_rev.kernel_names,
            "_fwd_kernel_flash_decode_stage2/16/" + std::to_string(old_rev.kernels[0].tokens));
  EXPECT_EQ(new_rev.kernel_names.substr(0, new_rev.kernel_names.rfind('/')),
            "_fwd_kernel_flash_decode_stage2/16");
  double k = sketch_similarity(old_rev.kernels[0], new_rev.kernels[0]);
  std::printf("stage-2 revisions: files %.2f, kernels %.2f\n", similarity(old_rev, new_rev), k);
  EXPECT_LT(similarity(old_rev, new_rev), kDefaultThreshold);
  EXPECT_GE(k, kAlignThreshold);
  EXPECT_LT(k, kNamedThreshold);
  // Neither within (an edited kernel is below 0.9) nor aligned (one kernel each).
  EXPECT_FALSE(kernels_within(old_rev, new_rev));
  EXPECT_FALSE(kernels_aligned(old_rev, new_rev));
  EXPECT_FALSE(ops_conflict(old_rev.ops, new_rev.ops));
  EXPECT_TRUE(kernels_named(old_rev, new_rev));
  EXPECT_EQ(kernel_link(old_rev, new_rev), KernelLink::named);
  EXPECT_EQ(kernel_link(new_rev, old_rev), KernelLink::named);
  EXPECT_TRUE(near(old_rev, new_rev, kDefaultThreshold));
  EXPECT_TRUE(near(new_rev, old_rev, 0.95));  // whatever the file threshold

  // The same edits under another kernel name: nothing says it is the same kernel.
  Signature renamed = compute_signature(stage2_revision("_reduce_partial_softmax"));
  EXPECT_EQ(kernel_link(old_rev, renamed), KernelLink::none);
  EXPECT_FALSE(near(old_rev, renamed, kDefaultThreshold));

  // A variant with one parameter more (sink logits folded into the softmax): the name is kept,
  // the interface is not, and it reads one tensor more (`io:`), so the operations conflict
  // whether or not the kernels are named alike.
  Signature sinks = compute_signature(stage2_with_sinks());
  double ks = sketch_similarity(old_rev.kernels[0], sinks.kernels[0]);
  std::printf("stage-2 with sinks: kernels %.2f, parameters %d vs %d, ops %s vs %s\n", ks,
              sinks.kernels[0].params, old_rev.kernels[0].params, sinks.ops.c_str(),
              old_rev.ops.c_str());
  EXPECT_EQ(sinks.kernels[0].params, old_rev.kernels[0].params + 1);
  EXPECT_TRUE(ops_conflict(old_rev.ops, sinks.ops));
  EXPECT_FALSE(near(old_rev, sinks, kDefaultThreshold));

  // Close enough (at or above kNamedThreshold) the parameters may differ: the original with a
  // head-dim parameter and mask added.
  std::string masked = edit(kStage2, "    stride_od,\n", "    stride_od,\n    head_dim,\n");
  masked = edit(masked, "acc / sum_exp)", "acc / sum_exp, mask=offs_d < head_dim)");
  Signature m = compute_signature(masked);
  ASSERT_GE(sketch_similarity(old_rev.kernels[0], m.kernels[0]), kNamedThreshold);
  EXPECT_NE(m.kernels[0].params, old_rev.kernels[0].params);
  EXPECT_TRUE(kernels_named(old_rev, m));
  EXPECT_TRUE(near(old_rev, m, kDefaultThreshold));
}

TEST(SmallKernels, TheSameOneLineBodiesLinkFilesAtHalfTheirSimilarity) {
  Signature ref = compute_signature(isinf_module());
  Signature port = compute_signature(isinf_port());
  ASSERT_TRUE(ref.kernels.empty());  // below the kernel floor: signed over all tokens
  ASSERT_FALSE(ref.kernelless);
  EXPECT_NE(ref.small_kernels, 0u);
  EXPECT_EQ(ref.small_kernels, port.small_kernels);
  double s = similarity(ref, port);
  std::printf("isinf and its backend copy: files %.2f\n", s);
  EXPECT_GE(s, kSmallKernelsThreshold);
  EXPECT_LT(s, kDefaultThreshold);
  EXPECT_EQ(kernel_link(ref, port), KernelLink::small);
  EXPECT_TRUE(near(ref, port, kDefaultThreshold));

  // Another operation in the same template: the bodies differ (identifiers kept).
  Signature isnan = compute_signature(
      pointwise_module("return _isnan(x.to(tl.float32))", "logger = logging.getLogger(__name__)",
                       "from flag_gems.utils import pointwise_dynamic, tl_extra_shim"));
  EXPECT_NE(isnan.small_kernels, ref.small_kernels);
  EXPECT_EQ(kernel_link(ref, isnan), KernelLink::none);

  // The same trivial body in two modules whose host code computes different things (FlagGems'
  // `copy_func` in `cat.py` and `flip.py`): below kSmallKernelsThreshold, not linked.
  std::string copy_a = pointwise_module("return x", "logger = logging.getLogger(__name__)", "");
  std::string copy_b = copy_a;
  copy_a +=
      "\n\ndef cat(tensors, dim=0):\n    out_shape = list(tensors[0].shape)\n"
      "    out_shape[dim] = sum(t.shape[dim] for t in tensors)\n"
      "    out = torch.empty(out_shape, dtype=tensors[0].dtype, device=tensors[0].device)\n"
      "    offset = 0\n    for t in tensors:\n        n = t.shape[dim]\n"
      "        isinf_func(t, out0=out.narrow(dim, offset, n))\n        offset += n\n"
      "    return out\n";
  copy_b +=
      "\n\ndef flip(A, dims):\n    strides = list(A.stride())\n    offset = 0\n"
      "    for d in dims:\n        offset += strides[d] * (A.shape[d] - 1)\n"
      "        strides[d] = -strides[d]\n"
      "    flipped = StridedBuffer(A, A.shape, strides, offset)\n"
      "    out = torch.empty_like(A)\n    return isinf_func(flipped, out0=out)\n";
  Signature ca = compute_signature(copy_a), cb = compute_signature(copy_b);
  EXPECT_EQ(ca.small_kernels, cb.small_kernels);
  std::printf("one trivial body around cat and flip: files %.2f\n", similarity(ca, cb));
  EXPECT_LT(similarity(ca, cb), kSmallKernelsThreshold);
  EXPECT_EQ(kernel_link(ca, cb), KernelLink::none);
  EXPECT_FALSE(near(ca, cb, kDefaultThreshold));

  // A file with a kernel of kMinKernelTokens or more has no small_kernels.
  EXPECT_EQ(compute_signature(kStage2).small_kernels, 0u);
}

TEST(NamedKernels, KernelNamesAreStoredAndGroupsLinkTheRevisionAndTheSmallKernels) {
  test::TempDir dir;
  store::OpenOptions o;
  o.path = (dir / "k.db").string();
  auto db = store::Db::open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "llama/flash_decoding_stage2.py"}, {"code", kStage2}});
  recs.push_back({{"key", "deepseek2/flash_decoding_stage2.py"}, {"code", stage2_revision()}});
  recs.push_back({{"key", "ops/isinf.py"}, {"code", isinf_module()}});
  recs.push_back({{"key", "_cambricon/ops/isinf.py"}, {"code", isinf_port()}});
  test::write_text(dir / "c.json", recs.dump());
  corpus::ImportOptions opts;
  opts.map.key = "key";
  ManualClock clock;
  ASSERT_TRUE(corpus::import_file(**db, dir / "c.json", opts, clock).ok());
  UpdateOptions u;
  u.threads = 2;
  auto sum = update(**db, u, clock);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  // What is stored: each kernel's name, parameter count and tokens beside its sketch.
  auto st =
      (*db)->prepare("SELECT kernel_names, small_kernels FROM dedup_signatures ORDER BY sample_id");
  ASSERT_TRUE(st.ok()) << st.error().message;
  std::vector<std::string> names, small;
  ASSERT_TRUE(st->each([&](store::Stmt& r) -> Status {
                  names.push_back(r.text(0));
                  small.push_back(r.text(1));
                  return {};
                }).ok());
  // name/parameters/tokens
  const std::string stage2 = "_fwd_kernel_flash_decode_stage2/16/";
  EXPECT_EQ(names,
            (std::vector<std::string>{
                stage2 + std::to_string(compute_signature(kStage2).kernels[0].tokens),
                stage2 + std::to_string(compute_signature(stage2_revision()).kernels[0].tokens), "",
                ""}));
  ASSERT_EQ(small.size(), 4u);
  EXPECT_EQ(small[0], "");
  EXPECT_EQ(small[2].size(), 16u);
  EXPECT_EQ(small[2], small[3]);
  auto g = groups_at(**db, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_EQ(g->size(), 2u);
  std::map<std::string, Member> member;
  std::map<std::string, const Group*> group_of;
  for (const auto& grp : *g)
    for (const auto& m : grp.members) member[m.key] = m, group_of[m.key] = &grp;
  ASSERT_EQ(member.size(), 4u);
  // Each pair is one group, the member other than the representative linked through kernels,
  // below the threshold as files.
  for (auto [x, y, via] : {std::tuple{"llama/flash_decoding_stage2.py",
                                      "deepseek2/flash_decoding_stage2.py", Via::named},
                           std::tuple{"ops/isinf.py", "_cambricon/ops/isinf.py", Via::small}}) {
    ASSERT_EQ(group_of[x], group_of[y]) << x;
    const Group& grp = *group_of[x];
    const Member& other = member[x].sample_id == grp.center ? member[y] : member[x];
    EXPECT_EQ(other.via, via) << x;
    EXPECT_LT(other.similarity, kDefaultThreshold) << x;
    EXPECT_EQ(grp.through_kernels, 1) << x;
  }
  EXPECT_STREQ(to_string(Via::named), "kernels named alike");
  EXPECT_STREQ(to_string(Via::small), "same small kernels");
}

}  // namespace
}  // namespace kforge::dedup
