#include "kforge/dedup/lsh.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kforge::dedup {

LshResult find_pairs(const std::vector<LshItem>& items, double floor) {
  LshResult out;
  std::unordered_set<std::uint64_t> seen;  // index pairs already kept, (i << 32) | j
  auto keep = [&](std::size_t i, std::size_t j, double sim, bool exact) {
    if (i > j) std::swap(i, j);
    if (!seen.insert((static_cast<std::uint64_t>(i) << 32) | j).second) return;
    std::int64_t a = items[i].id, b = items[j].id;
    if (a > b) std::swap(a, b);
    out.pairs.push_back({a, b, sim, exact});
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
    for (std::size_t start = 0; start < band.size();) {
      std::size_t end = start + 1;
      while (end < band.size() && band[end].first == band[start].first) ++end;
      for (std::size_t x = start + 1; x < end; ++x)
        for (std::size_t y = start; y < x && y < start + kMaxBucket; ++y) {
          std::size_t i = lsh[band[y].second], j = lsh[band[x].second];
          std::uint64_t k = (static_cast<std::uint64_t>(std::min(i, j)) << 32) | std::max(i, j);
          if (seen.count(k) != 0) continue;
          ++out.candidates;
          double sim = similarity(items[i].sig, items[j].sig);
          if (sim >= floor) keep(i, j, sim, false);
        }
      start = end;
    }
  }
  std::sort(out.pairs.begin(), out.pairs.end(),
            [](const LshPair& x, const LshPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  return out;
}

}  // namespace kforge::dedup
