#include "kforge/dedup/groups.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "kforge/dedup/lsh.hpp"
#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

std::span<const EmbeddedFile> dedup_sql();

namespace {

using store::Stmt;

const store::QuerySet& Q() {
  static const store::QuerySet q(dedup_sql());
  return q;
}

constexpr std::size_t kBatch = 2000;

// What the stored pairs were found with: the signature scheme and the LSH pass (v2: in content
// order, exact copies taking part). Pairs stored under another one are found again.
std::string pairs_scheme() {
  return std::string(kScheme) + "/lsh-content-v2";
}

struct Computed {
  std::int64_t id = 0;
  std::string code_sha256;
  Signature sig;
};

// Signature::small_kernels as stored: 16 hex digits, '' for none.
std::string small_text(std::uint64_t h) {
  if (h == 0) return {};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Status store_signature(store::Db& db, const Computed& c) {
  KF_TRY(Stmt * s, db.cached(Q()["upsert_signature"]));
  s->bind(1, c.id)
      .bind(2, c.code_sha256)
      .bind(3, kScheme)
      .bind(4, c.sig.shingles)
      .bind(5, c.sig.kernels_sha)
      .bind(6, nlohmann::json(c.sig.bodies).dump())
      .bind_blob(7, minhash_blob(c.sig))
      .bind(8, c.sig.ops)
      .bind_blob(9, kernels_blob(c.sig))
      .bind(10, c.sig.kernelless ? 1 : 0)
      .bind(11, c.sig.kernel_names)
      .bind(12, small_text(c.sig.small_kernels));
  return s->run();
}

// Computes the signatures of `ids` in batches, `threads` at a time, storing each batch.
Result<std::int64_t> compute_signatures(store::Db& db, const std::vector<std::int64_t>& ids,
                                        const UpdateOptions& opts) {
  int threads = opts.threads > 0
                    ? opts.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> codes;
  std::vector<Computed> out;
  std::int64_t done = 0;
  for (std::size_t start = 0; start < ids.size(); start += kBatch) {
    std::size_t end = std::min(ids.size(), start + kBatch);
    codes.assign(end - start, {});
    out.assign(end - start, {});
    for (std::size_t i = start; i < end; ++i) {
      KF_TRY(Stmt * s, db.cached(Q()["sample_code"]));
      s->bind(1, ids[i]);
      KF_TRY(bool row, s->step());
      if (!row) return fail("internal", "sample " + std::to_string(ids[i]) + " vanished");
      codes[i - start] = s->text(0);
      out[i - start].id = ids[i];
      out[i - start].code_sha256 = s->text(1);
      s->reset();
    }
    std::vector<std::thread> pool;
    std::size_t n = end - start;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t i = static_cast<std::size_t>(t); i < n;
             i += static_cast<std::size_t>(threads))
          out[i].sig = compute_signature(codes[i]);
      });
    for (auto& th : pool) th.join();
    KF_TRY(auto tx, store::Transaction::begin(db));
    for (const auto& c : out) KF_CHECK(store_signature(db, c));
    KF_CHECK(tx.commit());
    done += static_cast<std::int64_t>(n);
    if (opts.progress) opts.progress(done, static_cast<std::int64_t>(ids.size()));
  }
  return done;
}

Result<std::vector<LshItem>> load_signatures(store::Db& db) {
  std::vector<LshItem> items;
  KF_TRY(Stmt * s, db.cached(Q()["all_signatures"]));
  s->bind(1, kScheme);
  KF_CHECK(s->each([&](Stmt& r) -> Status {
    LshItem it;
    it.id = r.int64(0);
    it.sig.shingles = r.int64(1);
    it.sig.kernels_sha = r.text(2);
    it.content = std::strtoull(r.text(4).substr(0, 16).c_str(), nullptr, 16);
    if (!minhash_from_blob(r.text(3), it.sig) || !kernels_from_blob(r.text(5), it.sig) ||
        !kernel_names_from_text(r.text(7), it.sig))
      return fail("schema", "dedup_signatures: sample " + std::to_string(it.id) +
                                " has a signature of the wrong size; run kforge corpus dedup "
                                "--recompute");
    it.sig.kernelless = r.int64(6) != 0;
    it.sig.small_kernels = std::strtoull(r.text(8).c_str(), nullptr, 16);
    // Kernel bodies, for small kernels within another file: ["<16 hex>", ...].
    std::string bodies = r.text(9);
    for (std::size_t q = bodies.find('"'); q != std::string::npos && q + 17 < bodies.size();
         q = bodies.find('"', q + 18))
      it.sig.body_ids.push_back(std::strtoull(bodies.substr(q + 1, 16).c_str(), nullptr, 16));
    std::sort(it.sig.body_ids.begin(), it.sig.body_ids.end());
    items.push_back(std::move(it));
    return {};
  }));
  return items;
}

struct Link {
  std::int64_t to = 0;
  double similarity = -1;
  bool exact = false;
  Via via = Via::similarity;
};

struct Components {
  std::map<std::int64_t, std::vector<std::int64_t>> by_root;  // smallest id -> members, id order
  std::unordered_map<std::int64_t, Link> best;                // member -> its link
  std::unordered_map<std::int64_t, std::int64_t> center;      // smallest id -> representative
};

using ClassMembers = std::unordered_map<std::int64_t, std::vector<std::int64_t>>;
using ClassLinks = std::unordered_map<std::int64_t, std::map<std::int64_t, std::pair<double, Via>>>;

// Star clustering over the classes in `order` (most reach first): each class not yet in a group
// becomes a group's representative and takes every class it may take that is not yet in one.
Components star_groups(const std::vector<std::pair<std::int64_t, std::int64_t>>& order,
                       ClassMembers& members, ClassLinks& links,
                       const std::function<bool(std::int64_t, std::int64_t)>& before) {
  std::unordered_map<std::int64_t, std::int64_t> taken;  // class -> its group's center class
  Components c;
  for (const auto& [neg_reach, ctr] : order) {
    if (taken.count(ctr) != 0 || neg_reach == 0) continue;
    taken[ctr] = ctr;
    std::vector<std::int64_t> group = members[ctr];
    for (std::int64_t x : members[ctr])
      if (x != ctr) c.best[x] = {ctr, 1.0, true, Via::same_kernels};
    Link own;  // the center's own link: its closest member
    if (members[ctr].size() > 1) {
      std::int64_t other = -1;
      for (std::int64_t x : members[ctr])
        if (x != ctr && (other < 0 || before(x, other))) other = x;
      own = {other, 1.0, true, Via::same_kernels};
    }
    for (const auto& [d, l] : links[ctr]) {
      if (taken.count(d) != 0) continue;
      taken[d] = ctr;
      for (std::int64_t x : members[d]) {
        c.best[x] = {ctr, l.first, false, l.second};
        group.push_back(x);
      }
      if (l.first > own.similarity)
        own = {d, l.first, false, l.second == Via::within ? Via::holds : l.second};
    }
    if (group.size() < 2) continue;
    c.best[ctr] = own;
    std::sort(group.begin(), group.end());
    c.center[group.front()] = ctr;
    c.by_root[group.front()] = std::move(group);
  }
  return c;
}

// Groups at `threshold`, built so that they depend on the pairs only (not on import order) and
// do not chain:
//  1. samples with the same kernel bodies (exact pairs), or the same kernel sketches and no
//     conflict of operations, form classes, each named by its member first in content order
//     (code hash, then id);
//  2. classes are linked by the pairs whose kernels' operations do not conflict (ops_conflict)
//     and that are at or above the threshold (kKernellessThreshold at least where a side has no
//     kernel) or linked through kernels (signature.hpp kernel_link); a link by similarity is
//     preferred, then the best pair between the two classes. A class whose kernels are within
//     another's is linked one way: only that other may take it;
//  3. star clustering: classes are taken by the number of samples they may take (most first,
//     then content order); each class not yet in a group becomes a group's representative and
//     takes every class it may take that is not yet in a group.
// So every member is within the threshold of its group's representative, has its kernels, has
// its kernels within the representative's, aligned one to one with them or named alike.
Result<Components> components(store::Db& db, double threshold) {
  std::unordered_map<std::int64_t, std::int64_t> parent;
  std::unordered_map<std::int64_t, std::string> content;
  auto find = [&](std::int64_t x) {
    parent.try_emplace(x, x);
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  auto before = [&](std::int64_t x, std::int64_t y) {
    const std::string &cx = content[x], &cy = content[y];
    return cx != cy ? cx < cy : x < y;
  };
  struct Near {
    std::int64_t a, b;
    double similarity;
    int link;  // KernelLink; 0: by similarity
  };
  std::vector<Near> near;
  KF_TRY(Stmt * s, db.cached(Q()["pairs_at"]));
  s->bind(1, threshold - 1e-9);
  KF_CHECK(s->each([&](store::Stmt& r) {
    std::int64_t a = r.int64(0), b = r.int64(1);
    content.try_emplace(a, r.text(4));
    content.try_emplace(b, r.text(5));
    // The same kernel bodies, or the same kernel sketches without a conflict of operations
    // (literals apart): one class.
    bool same =
        r.int64(8) == static_cast<int>(KernelLink::same) && !ops_conflict(r.text(6), r.text(7));
    if (r.int64(3) != 0 || same) {
      std::int64_t ra = find(a), rb = find(b);
      if (ra != rb) {
        if (before(ra, rb))
          parent[rb] = ra;
        else
          parent[ra] = rb;
      }
    } else {
      find(a), find(b);
      int link = static_cast<int>(r.int64(8));
      // One template around two operations: similar tokens, not a copy. A file whose kernel
      // bodies are in the other is the same code: what conflicts is its own kernel (nearly all).
      bool bodies = link == static_cast<int>(KernelLink::a_bodies_in_b) ||
                    link == static_cast<int>(KernelLink::b_bodies_in_a);
      bool conflict = ops_conflict(r.text(6), r.text(7));
      if (conflict && !bodies) return;
      double sim = r.real(2);
      double need = r.int64(9) != 0 || r.int64(10) != 0 ? std::max(threshold, kKernellessThreshold)
                                                        : threshold;
      if (sim >= need - 1e-9 && !conflict) link = 0;  // near by similarity, whatever else
      if (link != 0 || sim >= need - 1e-9) near.push_back({a, b, sim, link});
    }
  }));
  // Classes and the links between them.
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> members;  // class -> samples
  for (const auto& [x, _] : content) members[find(x)].push_back(x);
  // class -> the classes it may take -> the best link. Links by similarity, aligned kernels,
  // kernels named alike or kernels each within the other's go both ways; a file whose kernels are
  // within another's is taken by that one only (its representative must hold its kernels).
  std::unordered_map<std::int64_t, std::map<std::int64_t, std::pair<double, Via>>> links;
  auto add = [&](std::int64_t x, std::int64_t y, double sim, Via via) {
    auto [it, fresh] = links[x].try_emplace(y, sim, via);
    // Similarity first, then by value.
    auto rank = [](const std::pair<double, Via>& l) {
      return std::pair{l.second == Via::similarity ? 1 : 0, l.first};
    };
    if (!fresh && rank({sim, via}) > rank(it->second)) it->second = {sim, via};
  };
  for (const auto& n : near) {
    std::int64_t ca = find(n.a), cb = find(n.b);
    if (ca == cb) continue;
    auto link = static_cast<KernelLink>(n.link);
    if (link == KernelLink::a_within_b || link == KernelLink::a_bodies_in_b) {
      add(cb, ca, n.similarity, Via::within);
    } else if (link == KernelLink::b_within_a || link == KernelLink::b_bodies_in_a) {
      add(ca, cb, n.similarity, Via::within);
    } else {
      Via via = link == KernelLink::none                                        ? Via::similarity
                : link == KernelLink::aligned                                   ? Via::aligned
                : link == KernelLink::named || link == KernelLink::named_within ? Via::named
                : link == KernelLink::small                                     ? Via::small
                                                                                : Via::within;
      add(ca, cb, n.similarity, via);
      add(cb, ca, n.similarity, via);
    }
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> order;  // (-reach, class)
  for (const auto& [c, m] : members) {
    auto reach = static_cast<std::int64_t>(m.size()) - 1;
    for (const auto& [d, _] : links[c]) reach += static_cast<std::int64_t>(members[d].size());
    order.emplace_back(-reach, c);
  }
  std::sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : before(x.second, y.second);
  });
  return star_groups(order, members, links, before);
}

Result<std::pair<std::int64_t, std::int64_t>> store_groups(store::Db& db, double threshold) {
  KF_TRY(Components c, components(db, threshold));
  KF_TRY(Stmt * d, db.cached(Q()["delete_groups"]));
  KF_CHECK(d->run());
  std::int64_t grouped = 0;
  for (const auto& [root, members] : c.by_root)
    for (std::int64_t m : members) {
      const Link& l = c.best[m];
      KF_TRY(Stmt * s, db.cached(Q()["insert_group_member"]));
      s->bind(1, m).bind(2, root).bind(3, l.to).bind(4, l.similarity).bind(5, l.exact ? 1 : 0);
      KF_CHECK(s->run());
      ++grouped;
    }
  return std::pair{static_cast<std::int64_t>(c.by_root.size()), grouped};
}

}  // namespace

Status check_threshold(double t) {
  if (!(t >= kPairFloor && t <= 1.0)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", t);
    return fail("usage", std::string("dedup threshold ") + buf + " is outside [0.5, 1] (pairs " +
                             "below 0.5 are not kept)");
  }
  return {};
}

Result<UpdateSummary> update(store::Db& db, const UpdateOptions& opts, Clock& clock) {
  KF_CHECK(check_threshold(opts.threshold));
  UpdateSummary sum;
  std::vector<std::int64_t> stale;
  {
    KF_TRY(Stmt * s, db.cached(Q()["stale_samples"]));
    s->bind(1, kScheme);
    KF_CHECK(s->each([&](store::Stmt& r) { stale.push_back(r.int64(0)); }));
  }
  KF_TRY(sum.computed, compute_signatures(db, stale, opts));
  KF_TRY(Stmt * cs, db.cached(Q()["count_samples"]));
  KF_TRY(auto n, cs->one([](Stmt& r) { return r.int64(0); }));
  sum.samples = n.value_or(0);
  KF_TRY(auto st, state(db));
  bool pairs_current =
      st && st->scheme == pairs_scheme() && sum.computed == 0 && st->samples == sum.samples;
  KF_TRY(auto tx, store::Transaction::begin(db));
  if (!pairs_current) {
    KF_TRY(std::vector<LshItem> items, load_signatures(db));
    LshResult found = find_pairs(items, kPairFloor);
    items = {};
    KF_TRY(Stmt * d, db.cached(Q()["delete_pairs"]));
    KF_CHECK(d->run());
    for (const auto& p : found.pairs) {
      KF_TRY(Stmt * s, db.cached(Q()["insert_pair"]));
      // Stored rounded to 1/128 steps as estimated; exact pairs at 1.
      s->bind(1, p.a).bind(2, p.b).bind(3, p.similarity).bind(4, p.exact ? 1 : 0).bind(5, p.link);
      KF_CHECK(s->run());
    }
    sum.candidates = found.candidates + found.kernel_candidates;
    sum.pairs = static_cast<std::int64_t>(found.pairs.size());
    sum.recomputed = true;
  } else {
    sum.pairs = st->pairs;
  }
  if (!pairs_current || std::abs(st->threshold - opts.threshold) > 1e-12) {
    KF_TRY(auto g, store_groups(db, opts.threshold));
    sum.groups = g.first;
    sum.grouped = g.second;
    sum.recomputed = true;
  } else {
    sum.groups = st->groups;
    KF_TRY(Stmt * s, db.cached(Q()["count_grouped"]));
    KF_TRY(auto k, s->one([](Stmt& r) { return r.int64(0); }));
    sum.grouped = k.value_or(0);
  }
  KF_TRY(Stmt * p, db.cached(Q()["put_state"]));
  p->bind(1, pairs_scheme())
      .bind(2, opts.threshold)
      .bind(3, sum.samples)
      .bind(4, sum.pairs)
      .bind(5, sum.groups)
      .bind(6, clock.wall_ms());
  KF_CHECK(p->run());
  KF_CHECK(tx.commit());
  return sum;
}

Result<std::optional<State>> state(store::Db& db) {
  KF_TRY(Stmt * s, db.cached(Q()["get_state"]));
  KF_TRY(auto st, s->one([](Stmt& r) {
    State x;
    x.scheme = r.text(0);
    x.threshold = r.real(1);
    x.samples = r.int64(2);
    x.pairs = r.int64(3);
    x.groups = r.int64(4);
    x.computed_ms = r.int64(5);
    return x;
  }));
  if (!st) return std::optional<State>();
  KF_TRY(Stmt * q, db.cached(Q()["stale_samples"]));
  q->bind(1, kScheme);
  KF_CHECK(q->each([&](store::Stmt&) { ++st->stale; }));
  return st;
}

Result<std::vector<Group>> groups_at(store::Db& db, double threshold) {
  KF_CHECK(check_threshold(threshold));
  KF_TRY(Components c, components(db, threshold));
  struct Facts {
    std::string key;
    std::int64_t bytes = 0;
    std::string sha;
  };
  std::unordered_map<std::int64_t, Facts> facts;
  auto fact = [&](std::int64_t id) -> Result<Facts> {
    if (auto it = facts.find(id); it != facts.end()) return it->second;
    KF_TRY(Stmt * s, db.cached(Q()["sample_facts"]));
    s->bind(1, id);
    KF_TRY(auto f, s->one([](Stmt& r) { return Facts{r.text(0), r.int64(1), r.text(2)}; }));
    if (!f) return fail("internal", "sample " + std::to_string(id) + " vanished");
    facts[id] = *f;
    return *f;
  };
  std::vector<Group> out;
  for (const auto& [root, members] : c.by_root) {
    Group g;
    g.id = root;
    g.center = c.center[root];
    for (std::int64_t id : members) {
      Member m;
      m.sample_id = id;
      KF_TRY(auto f, fact(id));
      m.key = f.key;
      m.bytes = f.bytes;
      m.code_sha256 = f.sha;
      const Link& l = c.best[id];
      KF_TRY(auto to, fact(l.to));
      m.linked_to = to.key;
      m.similarity = l.similarity;
      m.exact = l.exact;
      m.via = l.via;
      if (id != g.center && (l.via == Via::similarity || l.via == Via::same_kernels))
        g.spread = std::min(g.spread, l.similarity);
      if (id != g.center && (l.via == Via::within || l.via == Via::aligned || l.via == Via::named ||
                             l.via == Via::small))
        ++g.through_kernels;
      g.members.push_back(std::move(m));
    }
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const Group& a, const Group& b) {
    return a.members.size() > b.members.size();
  });
  return out;
}

const char* to_string(Via v) {
  switch (v) {
    case Via::same_kernels:
      return "same kernels";
    case Via::within:
      return "kernels within";
    case Via::holds:
      return "holds the kernels of";
    case Via::aligned:
      return "kernels aligned";
    case Via::named:
      return "kernels named alike";
    case Via::small:
      return "same small kernels";
    case Via::similarity:
      break;
  }
  return "similarity";
}

Result<Choice> parse_choice(const std::string& s) {
  if (s == "first" || s.empty()) return Choice::first;
  if (s == "largest") return Choice::largest;
  return fail("usage", "--dedup: '" + s + "' is not first or largest");
}

const char* to_string(Choice c) {
  return c == Choice::first ? "first" : "largest";
}

const Member& representative(const Group& g, Choice c) {
  // The order `first` takes: the representative, then by code SHA-256 (then key, for two
  // samples with the same code).
  auto before = [&](const Member& x, const Member& y) {
    if ((x.sample_id == g.center) != (y.sample_id == g.center)) return x.sample_id == g.center;
    if (x.code_sha256 != y.code_sha256) return x.code_sha256 < y.code_sha256;
    return x.key < y.key;
  };
  const Member* best = &g.members.front();
  for (const auto& m : g.members) {
    bool better =
        c == Choice::largest && m.bytes != best->bytes ? m.bytes > best->bytes : before(m, *best);
    if (better) best = &m;
  }
  return *best;
}

}  // namespace kforge::dedup
