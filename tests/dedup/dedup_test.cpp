#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/evalset.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/lsh.hpp"
#include "kforge/dedup/signature.hpp"
#include "testutil.hpp"

namespace kforge::dedup {
namespace {

using test::TempDir;
using test::write_text;

const char* kAdd = R"(import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)

def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
)";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

TEST(Tokens, CommentsWhitespaceAndLiteralsAreNormalisedIdentifiersKept) {
  auto t = normalised_tokens(
      "x = foo(1.5e-3, 'a#b')  # note\n\ny  +=  0x1F\ns = r\"\"\"doc\nstring\"\"\"");
  std::vector<std::string> got(t.begin(), t.end());
  EXPECT_EQ(got, (std::vector<std::string>{"x", "=", "foo", "(", "N", ",", "S", ")", "y", "+=", "N",
                                           "s", "=", "S"}));
  // An unterminated string ends at its line; nothing throws or loops.
  auto u = normalised_tokens("a = 'oops\nb = 2");
  EXPECT_EQ(std::vector<std::string>(u.begin(), u.end()),
            (std::vector<std::string>{"a", "=", "S", "b", "=", "N"}));
}

TEST(Signature, EditsThatChangeNoTokenKeepTheSignatureRenamesLowerIt) {
  Signature a = compute_signature(kAdd);
  std::string recommented =
      "# Copyright someone\n" +
      replace_all(kAdd, "    mask = offs < n\n", "    # bounds\n    mask = offs < n  # tail\n");
  std::string reblocked = replace_all(kAdd, "1024", "4096");
  std::string renamed = replace_all(replace_all(kAdd, "add_kernel", "_vec_add"), "offs", "idx");
  EXPECT_DOUBLE_EQ(similarity(a, compute_signature(recommented)), 1.0);
  EXPECT_DOUBLE_EQ(similarity(a, compute_signature(reblocked)), 1.0);
  double r = similarity(a, compute_signature(renamed));
  EXPECT_LT(r, 0.9);
  EXPECT_GT(r, 0.2);
  // Comments leave the exact kernel hash alone; a changed literal in the kernel changes it.
  EXPECT_EQ(a.kernels_sha, compute_signature(recommented).kernels_sha);
  EXPECT_EQ(a.bodies.size(), 1u);
  std::string rebody = replace_all(kAdd, "tl.program_id(0)", "tl.program_id(1)");
  EXPECT_NE(a.kernels_sha, compute_signature(rebody).kernels_sha);
  // The same kernel in another file with other host code: the same kernels_sha.
  std::string repackaged = std::string(kAdd).substr(0, std::string(kAdd).find("def add(")) +
                           "class Adder:\n    def __call__(self, a, b):\n        return a + b\n";
  EXPECT_EQ(a.kernels_sha, compute_signature(repackaged).kernels_sha);
  // Blob round trip.
  Signature back;
  ASSERT_TRUE(minhash_from_blob(minhash_blob(a), back));
  EXPECT_EQ(back.minhash, a.minhash);
  EXPECT_FALSE(minhash_from_blob("short", back));
  // Empty code: no shingles, similar to nothing.
  Signature e = compute_signature("   # only a comment\n");
  EXPECT_EQ(e.shingles, 0);
  EXPECT_EQ(similarity(e, e), 0.0);
}

TEST(Lsh, FindsTheCopiesAmongUnrelatedCode) {
  std::vector<LshItem> items;
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  std::int64_t id = 1;
  for (const auto& r : corpus)
    items.push_back({id++, compute_signature(r["output"].get<std::string>())});
  std::int64_t base = id;
  items.push_back({id++, compute_signature(kAdd)});
  items.push_back({id++, compute_signature(replace_all(
                             kAdd, "1024", "256"))});  // exact body? no: literal in host code only
  items.push_back({id++, compute_signature("# fork\n" + replace_all(kAdd, "offs", "offsets"))});
  LshResult r = find_pairs(items, kPairFloor);
  auto has = [&](std::int64_t a, std::int64_t b) {
    for (const auto& p : r.pairs)
      if (p.a == a && p.b == b) return true;
    return false;
  };
  EXPECT_TRUE(has(base, base + 1));
  EXPECT_TRUE(has(base, base + 2));
  for (const auto& p : r.pairs) {
    EXPECT_LT(p.a, p.b);
    EXPECT_GE(p.similarity, kPairFloor);
  }
  EXPECT_GT(r.candidates, 0);
}

class DedupStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "k.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(db).value();
  }
  void import(const nlohmann::json& records, bool update = false) {
    write_text(dir_ / "c.json", records.dump());
    corpus::ImportOptions opts;
    opts.map.key = "key";
    opts.update = update;
    auto r = corpus::import_file(*db_, dir_ / "c.json", opts, clock_);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  TempDir dir_;
  std::unique_ptr<store::Db> db_;
  ManualClock clock_;
};

TEST_F(DedupStore, GroupsAreStoredRecomputedOnlyWhenNeededAndFollowTheThreshold) {
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "a"}, {"code", kAdd}});
  recs.push_back({{"key", "b"}, {"code", "# copy\n" + replace_all(kAdd, "1024", "2048")}});
  recs.push_back({{"key", "c"}, {"code", replace_all(kAdd, "x + y", "x * y")}});
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  for (int i = 0; i < 10; ++i)
    recs.push_back({{"key", "tb" + std::to_string(i)},
                    {"code", corpus[static_cast<std::size_t>(i)]["output"]}});
  import(recs);
  EXPECT_FALSE(state(*db_)->has_value());

  UpdateOptions opts;
  opts.threads = 2;
  auto s = update(*db_, opts, clock_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->samples, 13);
  EXPECT_EQ(s->computed, 13);
  EXPECT_TRUE(s->recomputed);
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  // a and b are copies (same tokens after normalisation); c differs by one operator.
  bool found = false;
  for (const auto& grp : *g) {
    std::set<std::string> keys;
    for (const auto& m : grp.members) keys.insert(m.key);
    if (keys.count("a") && keys.count("b")) {
      found = true;
      EXPECT_EQ(grp.members.front().key, "a");
      for (const auto& m : grp.members)
        if (m.key == "b") {
          EXPECT_EQ(m.linked_to, "a");
          EXPECT_DOUBLE_EQ(m.similarity, 1.0);
        }
      EXPECT_EQ(representative(grp, Choice::first).key, "a");
      EXPECT_EQ(representative(grp, Choice::largest).key, "b");  // the comment makes it longer
    }
  }
  EXPECT_TRUE(found);
  auto st = state(*db_);
  ASSERT_TRUE(st.ok() && st->has_value());
  EXPECT_EQ((*st)->stale, 0);
  EXPECT_EQ((*st)->groups, static_cast<std::int64_t>(g->size()));

  // Nothing changed: nothing recomputed.
  s = update(*db_, opts, clock_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->computed, 0);
  EXPECT_FALSE(s->recomputed);

  // A changed code is recomputed, and the groups follow it.
  recs[1]["code"] = corpus[20]["output"];
  import(recs, /*update=*/true);
  EXPECT_EQ((*state(*db_))->stale, 1);
  s = update(*db_, opts, clock_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->computed, 1);
  g = groups_at(*db_, kDefaultThreshold);
  for (const auto& grp : *g)
    for (const auto& m : grp.members) EXPECT_NE(m.key, "b") << "b is no copy of a any more";

  // Thresholds outside [0.5, 1] are refused with the reason.
  EXPECT_EQ(groups_at(*db_, 0.3).error().kind, "usage");
  opts.threshold = 1.5;
  EXPECT_NE(update(*db_, opts, clock_).error().message.find("outside [0.5, 1]"), std::string::npos);
}

TEST(EvalIndex, FindsNearKernelsAndNamesBadRecords) {
  TempDir dir;
  nlohmann::json evals = {{{"name", "e1"}, {"src", kAdd}},
                          {{"name", "e2"}, {"src", "def unrelated():\n    return 42\n"}}};
  std::string jsonl;
  for (const auto& e : evals) jsonl += e.dump() + "\n";
  write_text(dir / "eval.jsonl", jsonl);
  corpus::FieldMap map;
  map.code = "src";
  map.key = "name";
  auto ix = EvalIndex::load({dir / "eval.jsonl"}, map, corpus::Format::automatic);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  EXPECT_EQ(ix->size(), 2u);
  auto m = ix->nearest(compute_signature("# ours\n" + std::string(kAdd) + "\nprint('x')\n"), 0.7);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->key, "e1");
  EXPECT_TRUE(m->exact);
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  EXPECT_FALSE(ix->nearest(compute_signature(corpus[0]["output"].get<std::string>()), 0.7));

  write_text(dir / "bad.jsonl", evals[0].dump() + "\n{\"name\": \"x\"}\n");
  auto bad = EvalIndex::load({dir / "bad.jsonl"}, map, corpus::Format::automatic);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.jsonl: record 1 (line 2): field 'src'"),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace kforge::dedup
