#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>

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
  // Pairs below the floor are kept only when linked through kernels: the corpus's
  // vector_addition.py (18) and add_example.py (31) hold one `add_kernel`, its parameters
  // renamed, in other host code (files 0.48 similar; kernels named alike).
  bool named = false;
  for (const auto& p : r.pairs) {
    EXPECT_LT(p.a, p.b);
    if (p.link == 0) {
      EXPECT_GE(p.similarity, kPairFloor);
    }
    named = named || (p.a == 18 && p.b == 31 && p.link == static_cast<int>(KernelLink::named));
  }
  EXPECT_TRUE(named);
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

  // Pairs found by an older LSH pass (import order, exact copies left out) are found again,
  // without computing a signature.
  ASSERT_TRUE(db_->exec("UPDATE dedup_state SET scheme = 'minhash128-k5-lit-v1'").ok());
  s = update(*db_, opts, clock_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->computed, 0);
  EXPECT_TRUE(s->recomputed);
  EXPECT_GT(s->candidates, 0);

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

// The groups of a corpus as sets of keys, whatever their ids.
std::set<std::set<std::string>> key_groups(store::Db& db) {
  std::set<std::set<std::string>> out;
  auto g = groups_at(db, kDefaultThreshold);
  EXPECT_TRUE(g.ok()) << g.error().message;
  if (!g.ok()) return out;
  for (const auto& grp : *g) {
    std::set<std::string> keys;
    for (const auto& m : grp.members) keys.insert(m.key);
    out.insert(keys);
  }
  return out;
}

// Files whose code shares shingles only with its neighbours: file i holds lines [6i, 6i + 30) of
// one long sequence, so neighbours are about 0.67 similar and files two apart about 0.43 (at the
// default threshold 0.6, neighbours near and files two apart not). Each line's constant differs
// too, so no two kernels are the same up to renames.
// Files of a chain: each line reads its own attribute (`w.s12`), which stays when identifiers are
// normalised, so no two files are the same kernel up to renames and kernels compare as the files
// do: neighbours near, files two apart not.
std::string chain_file(int i) {
  std::string code =
      "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p, w, n):\n";
  for (int j = 6 * i; j < 6 * i + 30; ++j) {
    std::string v = std::to_string(j);
    code +=
        "    a" + v + " = tl.load(p + o" + v + ", mask=m" + v + ") * w.s" + v + " + " + v + "\n";
  }
  return code;
}

TEST_F(DedupStore, GroupsDoNotDependOnImportOrder) {
  // T and R have the same kernel, but T's file holds much more (they are not near as files);
  // F is R with its kernel edited: near R, not T. F belongs with R whichever comes first.
  std::string kernel = std::string(kAdd).substr(0, std::string(kAdd).find("def add("));
  std::string extra;
  for (int i = 0; i < 40; ++i)
    extra += "def host_" + std::to_string(i) + "(x, y):\n    return torch.cat([x, y" +
             std::string(static_cast<std::size_t>(i % 7), '1') + "], dim=" + std::to_string(i) +
             ").view(-1, " + std::to_string(i) + ")\n";
  std::string r = kAdd;
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"key", "T"}, {"code", kernel + extra}});
  recs.push_back({{"key", "R"}, {"code", r}});
  recs.push_back(
      {{"key", "F"}, {"code", replace_all(r, "mask = offs < n", "mask = offs < n - 0")}});
  for (int i = 0; i < 6; ++i)
    recs.push_back({{"key", "chain" + std::to_string(i)}, {"code", chain_file(i)}});
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  for (int i = 0; i < 30; ++i)
    recs.push_back({{"key", "tb" + std::to_string(i)},
                    {"code", corpus[static_cast<std::size_t>(i)]["output"]}});

  std::vector<nlohmann::json> orders = {recs};
  nlohmann::json reversed = nlohmann::json::array();
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) reversed.push_back(*it);
  orders.push_back(reversed);
  for (unsigned seed : {7u, 11u, 13u}) {
    nlohmann::json shuffled = recs;
    for (std::size_t i = shuffled.size() - 1; i > 0; --i) {
      seed = seed * 1103515245u + 12345u;
      std::swap(shuffled[i], shuffled[(seed >> 8) % (i + 1)]);
    }
    orders.push_back(shuffled);
  }
  std::optional<std::set<std::set<std::string>>> first;
  for (std::size_t o = 0; o < orders.size(); ++o) {
    std::filesystem::create_directories(dir_ / std::to_string(o));
    store::OpenOptions opt;
    opt.path = (dir_ / std::to_string(o) / "k.db").string();
    auto db = store::Db::open(opt);
    ASSERT_TRUE(db.ok()) << db.error().message;
    write_text(dir_ / "c.json", orders[o].dump());
    corpus::ImportOptions io;
    io.map.key = "key";
    ASSERT_TRUE(corpus::import_file(**db, dir_ / "c.json", io, clock_).ok());
    UpdateOptions u;
    u.threads = 2;
    ASSERT_TRUE(update(**db, u, clock_).ok());
    auto groups = key_groups(**db);
    bool rf = false;
    for (const auto& g : groups) rf = rf || (g.count("R") && g.count("F") && g.count("T"));
    EXPECT_TRUE(rf) << "order " << o;
    if (!first)
      first = groups;
    else
      EXPECT_EQ(groups, *first) << "order " << o;
  }
}

TEST_F(DedupStore, AChainOfNearPairsMakesSeveralGroupsEachNearItsRepresentative) {
  nlohmann::json recs = nlohmann::json::array();
  std::map<std::string, Signature> sigs;
  for (int i = 0; i < 8; ++i) {
    std::string key = "chain" + std::to_string(i);
    recs.push_back({{"key", key}, {"code", chain_file(i)}});
    sigs[key] = compute_signature(chain_file(i));
  }
  // The chain is what it should be: neighbours near, files two apart not.
  for (int i = 0; i + 2 < 8; ++i) {
    std::string a = "chain" + std::to_string(i), b = "chain" + std::to_string(i + 1),
                c = "chain" + std::to_string(i + 2);
    EXPECT_GE(similarity(sigs[a], sigs[b]), kDefaultThreshold) << a;
    EXPECT_LT(similarity(sigs[a], sigs[c]), kDefaultThreshold) << a;
  }
  import(recs);
  UpdateOptions u;
  u.threads = 2;
  ASSERT_TRUE(update(*db_, u, clock_).ok());
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_GE(g->size(), 2u) << "single linkage would make one group of 8";
  for (const auto& grp : *g) {
    EXPECT_LE(grp.members.size(), 3u);
    std::string center;
    for (const auto& m : grp.members)
      if (m.sample_id == grp.center) center = m.key;
    ASSERT_FALSE(center.empty());
    EXPECT_GE(grp.spread, kDefaultThreshold);
    for (const auto& m : grp.members) {
      if (m.key == center) continue;
      EXPECT_EQ(m.linked_to, center);
      EXPECT_GE(similarity(sigs[m.key], sigs[center]), kDefaultThreshold) << m.key;
    }
  }
}

TEST_F(DedupStore, SignaturesOfAnOlderSchemeAreComputedAgainWithTheirValueOperations) {
  // The small corpus's add, sin and mul2 files: one indexing template around three operations.
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : corpus) {
    std::string file = r["file"];
    if (file == "add_example.py" || file == "sin_computation.py" || file == "triton_mul2.py")
      recs.push_back({{"key", file}, {"code", r["output"]}});
  }
  ASSERT_EQ(recs.size(), 3u);
  import(recs);
  UpdateOptions u;
  u.threads = 1;
  ASSERT_TRUE(update(*db_, u, clock_).ok());
  // A database from before value operations: its rows hold every operator of the kernels, the
  // same for all three (index arithmetic), under the older scheme.
  ASSERT_TRUE(db_->exec("UPDATE dedup_signatures SET scheme = 'minhash128-k5-kernels-v3', "
                        "ops = '*,+,<'")
                  .ok());
  EXPECT_EQ((*state(*db_))->stale, 3);
  auto s = update(*db_, u, clock_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->computed, 3);
  std::map<std::string, std::string> ops;
  auto q = db_->prepare(
      "SELECT s.key, d.ops, d.scheme FROM dedup_signatures d JOIN samples s ON s.id = d.sample_id");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(q->each([&](store::Stmt& r) -> Status {
                 EXPECT_EQ(r.text(2), kScheme);
                 ops[r.text(0)] = r.text(1);
                 return {};
               }).ok());
  EXPECT_EQ(ops["add_example.py"], "+,>+;x,io:2/1");
  EXPECT_EQ(ops["sin_computation.py"], ">sin;x,io:1/1,sin");
  EXPECT_EQ(ops["triton_mul2.py"], "*");
  // Near as files (0.58-0.62), never one group.
  auto g = groups_at(*db_, kDefaultThreshold);
  ASSERT_TRUE(g.ok()) << g.error().message;
  for (const auto& grp : *g) EXPECT_LE(grp.members.size(), 1u);
}

const char* kHelper = R"(
@triton.jit
def prev_multiple_of(a, b):
    # the largest x < a that x % b == 0
    return tl.cdiv(a, b) * b - b
)";

// The first small-corpus record with a kernel of at least 150 normalised tokens.
std::string big_kernel_record(const nlohmann::json& corpus, std::size_t from = 0) {
  for (std::size_t i = from; i < corpus.size(); ++i) {
    std::string code = corpus[i]["output"];
    for (const auto& k : kernel_signatures(code))
      if (k.tokens >= 150) return code;
  }
  return {};
}

TEST(DedupKernelSignatures, RenamesFormattingAndCommentsLeaveThemAloneSmallHelpersAreLeftOut) {
  auto ks = kernel_signatures(kAdd);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "add_kernel");
  std::string renamed = replace_all(
      replace_all(replace_all(replace_all(kAdd, "add_kernel", "_vec_add"), "offs", "idx"), "x_ptr",
                  "a"),
      "mask", "in_bounds");
  auto rk = kernel_signatures("# Copyright\n" + renamed);
  ASSERT_EQ(rk.size(), 1u);
  EXPECT_EQ(rk[0].name, "_vec_add");
  EXPECT_EQ(rk[0].body, ks[0].body);
  EXPECT_DOUBLE_EQ(similarity(rk[0].sig, ks[0].sig), 1.0);
  // Another operation is another kernel.
  EXPECT_NE(kernel_signatures(replace_all(kAdd, "x + y", "x * y"))[0].body, ks[0].body);
  // A five-line helper is below the default size, not below a smaller one.
  EXPECT_TRUE(kernel_signatures(kHelper).empty());
  EXPECT_EQ(kernel_signatures(kHelper, 10).size(), 1u);
}

TEST(DedupEvalIndex, FindsRenamedEditedAndEmbeddedEvalKernelsNotSharedHelpers) {
  TempDir dir;
  auto corpus = nlohmann::json::parse(test::read_text(test::small_corpus()));
  std::string big = big_kernel_record(corpus);
  ASSERT_FALSE(big.empty());
  std::string other = big_kernel_record(corpus, 20);
  ASSERT_FALSE(other.empty());
  ASSERT_NE(other, big);
  nlohmann::json evals = {{{"name", "e1"}, {"src", kAdd}},
                          {{"name", "e2"}, {"src", std::string(kHelper) + "\n" + big}},
                          {{"name", "e3"}, {"src", "def unrelated():\n    return 42\n"}}};
  std::string jsonl;
  for (const auto& e : evals) jsonl += e.dump() + "\n";
  write_text(dir / "eval.jsonl", jsonl);
  corpus::FieldMap map;
  map.code = "src";
  map.key = "name";
  auto ix = EvalIndex::load({dir / "eval.jsonl"}, map, corpus::Format::automatic);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  EXPECT_GE(ix->size(), 2u);  // e1's kernel and e2's big ones; not the helper, not e3

  // Renamed: the kernel and its variables.
  std::string renamed = replace_all(
      replace_all(replace_all(kAdd, "add_kernel", "_fused_sum"), "offs", "o"), "pid", "block_id");
  auto m = ix->nearest(renamed, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->key, "e1");
  EXPECT_TRUE(m->exact);
  EXPECT_EQ(m->kernel, "_fused_sum");
  EXPECT_EQ(m->eval_kernel, "add_kernel");

  // Edited: a line added after the program id, and the whole file reformatted with comments.
  std::string edited = big;
  std::size_t at = edited.find("tl.program_id");
  ASSERT_NE(at, std::string::npos);
  std::size_t bol = edited.rfind('\n', at) + 1, eol = edited.find('\n', at);
  std::string indent = edited.substr(bol, edited.find_first_not_of(' ', bol) - bol);
  edited.insert(eol + 1, indent + "# the tail is masked\n" + indent + "unused_step = 2 * 3\n");
  m = ix->nearest(edited, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->key, "e2");
  EXPECT_FALSE(m->eval_kernel.empty());
  EXPECT_GE(m->similarity, kDefaultKernelThreshold);

  // Embedded: the eval kernel, renamed, in a larger file of other kernels and host code.
  std::string embedded =
      other + "\n\n" + replace_all(renamed, "import torch", "") + "\n\n" + std::string(kHelper);
  m = ix->nearest(embedded, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->key, "e1");
  EXPECT_EQ(m->kernel, "_fused_sum");

  // Sharing only the small helper flags nothing, unless the size is lowered.
  std::string helper_only = other + "\n" + kHelper;
  EXPECT_FALSE(ix->nearest(helper_only, kDefaultKernelThreshold).has_value());
  auto small = EvalIndex::load({dir / "eval.jsonl"}, map, corpus::Format::automatic, 10);
  ASSERT_TRUE(small.ok());
  m = small->nearest(helper_only, kDefaultKernelThreshold);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->eval_kernel, "prev_multiple_of");

  // Other kernels of the corpus are not near.
  EXPECT_FALSE(ix->nearest(other, kDefaultKernelThreshold).has_value());
  EXPECT_FALSE(ix->nearest(corpus[0]["output"].get<std::string>(), 0.7).has_value());

  write_text(dir / "bad.jsonl", evals[0].dump() + "\n{\"name\": \"x\"}\n");
  auto bad = EvalIndex::load({dir / "bad.jsonl"}, map, corpus::Format::automatic);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.jsonl: record 1 (line 2): field 'src'"),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace kforge::dedup
