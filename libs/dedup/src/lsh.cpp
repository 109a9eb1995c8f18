#include "kforge/dedup/lsh.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kforge::dedup {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t kernel_band(const KernelSketch& k, int band) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(band) + 0x51);
  for (int r = 0; r < kRows; ++r)
    h = mix(h ^ k.minhash[static_cast<std::size_t>(band * kRows + r)]);
  return h;
}

// Calls f(y, x) for the entries of each bucket of a sorted band (equal hashes): every later
// entry x with the bucket's entries before it, its first `cap` ones at most (the first in content
// order), so a huge bucket costs linear time.
template <class F>
void each_bucket_pair(const std::vector<std::pair<std::uint64_t, std::uint32_t>>& band,
                      std::size_t cap, F&& f) {
  for (std::size_t start = 0; start < band.size();) {
    std::size_t end = start + 1;
    while (end < band.size() && band[end].first == band[start].first) ++end;
    for (std::size_t x = start + 1; x < end; ++x)
      for (std::size_t y = start; y < x && y < start + cap; ++y) f(band[y].second, band[x].second);
    start = end;
  }
}

// Pairs linked through kernels (lsh.hpp), `order`: the items in content order.
template <class Keep>
void kernel_pairs(const std::vector<LshItem>& items, const std::vector<std::uint32_t>& order,
                  const std::unordered_set<std::uint64_t>& seen, Keep& keep, LshResult& out) {
  // Files with the same kernel sketches: the first of them stands for the others (paired with
  // each, link `same`).
  std::vector<std::uint32_t> part;  // taking part, in content order
  {
    std::unordered_map<std::uint64_t, std::uint32_t> first;
    for (std::uint32_t i : order) {
      const auto& ks = items[i].sig.kernels;
      if (ks.empty()) continue;
      std::uint64_t h = ks.size();
      for (const auto& k : ks)
        h = mix(h ^ kernel_band(k, 0) ^ kernel_band(k, kSketchBands - 1) ^ k.helper);
      auto [it, fresh] = first.emplace(h, i);
      if (fresh || !same_kernel_sketches(items[it->second].sig, items[i].sig)) {
        part.push_back(i);
      } else {
        std::size_t f = it->second;
        if (seen.count((static_cast<std::uint64_t>(std::min<std::size_t>(f, i)) << 32) |
                       std::max<std::size_t>(f, i)) == 0)
          keep(f, i, similarity(items[f].sig, items[i].sig), false);
      }
    }
  }
  // Each file tests at most kMaxKernelTests others and keeps at most kMaxKernelLinks links found
  // here (by position in `part`): a cluster of thousands of edited copies costs linear work.
  std::vector<std::uint32_t> tested(part.size() * kMaxKernelTests);
  std::vector<std::uint8_t> n_tested(part.size(), 0), n_linked(part.size(), 0);
  auto consider = [&](std::uint32_t rx, std::uint32_t ry) {
    if (n_tested[rx] >= kMaxKernelTests || n_tested[ry] >= kMaxKernelTests) return;
    if (n_linked[rx] >= kMaxKernelLinks || n_linked[ry] >= kMaxKernelLinks) return;
    const std::uint32_t* t = &tested[static_cast<std::size_t>(rx) * kMaxKernelTests];
    if (std::find(t, t + n_tested[rx], ry) != t + n_tested[rx]) return;
    std::size_t i = part[rx], j = part[ry];
    if (seen.count((static_cast<std::uint64_t>(std::min(i, j)) << 32) | std::max(i, j)) != 0)
      return;
    tested[static_cast<std::size_t>(rx) * kMaxKernelTests + n_tested[rx]++] = ry;
    tested[static_cast<std::size_t>(ry) * kMaxKernelTests + n_tested[ry]++] = rx;
    ++out.kernel_candidates;
    KernelLink link = kernel_link(items[i].sig, items[j].sig);
    if (link == KernelLink::none) return;
    keep(i, j, similarity(items[i].sig, items[j].sig), false, static_cast<int>(link));
    ++n_linked[rx], ++n_linked[ry];
  };
  std::vector<std::pair<std::uint64_t, std::uint32_t>> band;  // (hash, entry)
  std::vector<std::uint32_t> entry_item;                      // entry -> index into part
  std::vector<std::uint32_t> entry_kernel;
  for (std::size_t r = 0; r < part.size(); ++r)
    for (std::size_t k = 0; k < items[part[r]].sig.kernels.size(); ++k) {
      entry_item.push_back(static_cast<std::uint32_t>(r));
      entry_kernel.push_back(static_cast<std::uint32_t>(k));
    }
  band.reserve(entry_item.size());
  for (int b = 0; b < kSketchBands; ++b) {
    band.clear();
    for (std::size_t e = 0; e < entry_item.size(); ++e)
      band.emplace_back(kernel_band(items[part[entry_item[e]]].sig.kernels[entry_kernel[e]], b),
                        static_cast<std::uint32_t>(e));
    std::sort(band.begin(), band.end());
    each_bucket_pair(band, kMaxBucket, [&](std::uint32_t ey, std::uint32_t ex) {
      std::uint32_t rx = entry_item[ex], ry = entry_item[ey];
      if (rx != ry) consider(rx, ry);
    });
  }
}

// Files whose @jit functions are all below the sketch floor and that have kernel bodies, each
// with the files holding all its bodies (small kernels within another file, signature.hpp): a
// body's holders are kept in content order, the first kMaxBucket of them, and each such file
// tests at most kMaxKernelTests of the holders of its rarest body.
template <class Keep>
void small_within_pairs(const std::vector<LshItem>& items, const std::vector<std::uint32_t>& order,
                        Keep& keep, LshResult& out) {
  auto small_only = [&](std::uint32_t i) {
    const Signature& s = items[i].sig;
    return s.kernels.empty() && !s.kernelless && !s.body_ids.empty();
  };
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> holders;
  for (std::uint32_t i : order)
    if (small_only(i))
      for (std::uint64_t b : items[i].sig.body_ids) holders.try_emplace(b);
  if (holders.empty()) return;
  for (std::uint32_t i : order)
    for (std::uint64_t b : items[i].sig.body_ids)
      if (auto it = holders.find(b); it != holders.end() && it->second.size() < kMaxBucket)
        it->second.push_back(i);
  for (std::uint32_t i : order) {
    if (!small_only(i)) continue;
    // The holders of its two rarest bodies: a file that holds all of them but one holds one of
    // these two (nearly all, signature.hpp).
    const std::vector<std::uint32_t>*rarest = nullptr, *second = nullptr;
    for (std::uint64_t b : items[i].sig.body_ids) {
      const auto* h = &holders.at(b);
      if (rarest == nullptr || h->size() < rarest->size())
        second = rarest, rarest = h;
      else if (second == nullptr || h->size() < second->size())
        second = h;
    }
    std::size_t tested = 0;
    std::vector<std::uint32_t> done;
    for (const auto* list : {rarest, second}) {
      if (list == nullptr || (list == second && items[i].sig.body_ids.size() <
                                                    static_cast<std::size_t>(kNearlyAllKernels)))
        continue;
      for (std::uint32_t j : *list) {
        if (j == i || std::find(done.begin(), done.end(), j) != done.end()) continue;
        if (tested >= 2 * kMaxKernelTests) break;
        ++tested;
        done.push_back(j);
        ++out.kernel_candidates;
        if (kernels_within(items[i].sig, items[j].sig))
          keep(i, j, similarity(items[i].sig, items[j].sig), false);
      }
    }
  }
}

}  // namespace

LshResult find_pairs(const std::vector<LshItem>& items, double floor) {
  LshResult out;
  std::unordered_set<std::uint64_t> seen;  // index pairs already kept, (i << 32) | j
  // `link`: the pair's KernelLink when known (-1: computed here). kernel_link is symmetric but
  // for within, whose side follows the order of ids.
  auto keep = [&](std::size_t i, std::size_t j, double sim, bool exact, int link = -1) {
    if (i > j) std::swap(i, j);
    if (!seen.insert((static_cast<std::uint64_t>(i) << 32) | j).second) return;
    if (items[i].id > items[j].id) std::swap(i, j);
    bool sided = link == static_cast<int>(KernelLink::a_within_b) ||
                 link == static_cast<int>(KernelLink::b_within_a) ||
                 link == static_cast<int>(KernelLink::a_bodies_in_b) ||
                 link == static_cast<int>(KernelLink::b_bodies_in_a);
    if (link < 0 || sided)
      link = exact ? 0 : static_cast<int>(kernel_link(items[i].sig, items[j].sig));
    out.pairs.push_back({items[i].id, items[j].id, sim, exact, link});
  };

  // Items in content order (code hash, then id), so that nothing below depends on import order.
  std::vector<std::uint32_t> order;
  order.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].sig.shingles != 0) order.push_back(static_cast<std::uint32_t>(i));
  auto before = [&](std::uint32_t x, std::uint32_t y) {
    return items[x].content != items[y].content ? items[x].content < items[y].content
                                                : items[x].id < items[y].id;
  };
  std::sort(order.begin(), order.end(), before);

  // Exact classes (the same kernels_sha): each member is paired with the class's first in content
  // order. Identical signatures: only the first takes part in LSH, the others are paired with it
  // at 1. Every other member of an exact class takes part in LSH itself, so a copy whose file
  // differs from its class's first still finds its own near-duplicates.
  std::vector<std::uint32_t> lsh;  // indexes taking part, in content order
  {
    std::unordered_map<std::string, std::uint32_t> first;
    std::unordered_map<std::uint64_t, std::uint32_t> same_sig;  // minhash hash -> first index
    first.reserve(order.size());
    same_sig.reserve(order.size());
    for (std::uint32_t i : order) {
      auto [it, inserted] = first.emplace(items[i].sig.kernels_sha, i);
      if (!inserted) keep(it->second, i, 1.0, true);
      std::uint64_t h = 0;
      for (int b = 0; b < kBands; ++b) h = h * 0x9e3779b97f4a7c15ull + band_hash(items[i].sig, b);
      auto [sit, fresh] = same_sig.emplace(h, i);
      if (fresh || items[sit->second].sig.minhash != items[i].sig.minhash) {
        lsh.push_back(i);
      } else {
        bool exact = items[sit->second].sig.kernels_sha == items[i].sig.kernels_sha;
        keep(sit->second, i, 1.0, exact);
      }
    }
  }

  std::vector<std::pair<std::uint64_t, std::uint32_t>> band;
  band.reserve(lsh.size());
  for (int b = 0; b < kBands; ++b) {
    band.clear();
    // Position in content order breaks ties within a bucket, so a capped bucket keeps the same
    // items whatever the import order.
    for (std::size_t r = 0; r < lsh.size(); ++r)
      band.emplace_back(band_hash(items[lsh[r]].sig, b), static_cast<std::uint32_t>(r));
    std::sort(band.begin(), band.end());
    each_bucket_pair(band, kMaxBucket, [&](std::uint32_t ry, std::uint32_t rx) {
      std::size_t i = lsh[ry], j = lsh[rx];
      std::uint64_t k = (static_cast<std::uint64_t>(std::min(i, j)) << 32) | std::max(i, j);
      if (seen.count(k) != 0) return;
      ++out.candidates;
      double sim = similarity(items[i].sig, items[j].sig);
      if (sim >= floor) keep(i, j, sim, false);
    });
  }
  kernel_pairs(items, order, seen, keep, out);
  small_within_pairs(items, order, keep, out);
  std::sort(out.pairs.begin(), out.pairs.end(),
            [](const LshPair& x, const LshPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  return out;
}

}  // namespace kforge::dedup
