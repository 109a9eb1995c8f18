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

  // Exact classes: the first item of each kernels_sha stands for the rest in LSH.
  std::vector<std::uint32_t> lsh;  // indexes taking part
  {
    std::unordered_map<std::string, std::size_t> first;
    first.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].sig.shingles == 0) continue;
      auto [it, inserted] = first.emplace(items[i].sig.kernels_sha, i);
      if (inserted)
        lsh.push_back(static_cast<std::uint32_t>(i));
      else
        keep(it->second, i, 1.0, true);
    }
  }

  std::vector<std::pair<std::uint64_t, std::uint32_t>> band;
  band.reserve(lsh.size());
  for (int b = 0; b < kBands; ++b) {
    band.clear();
    for (std::uint32_t i : lsh) band.emplace_back(band_hash(items[i].sig, b), i);
    std::sort(band.begin(), band.end());
    for (std::size_t start = 0; start < band.size();) {
      std::size_t end = start + 1;
      while (end < band.size() && band[end].first == band[start].first) ++end;
      for (std::size_t x = start + 1; x < end; ++x)
        for (std::size_t y = start; y < x && y < start + kMaxBucket; ++y) {
          std::size_t i = band[y].second, j = band[x].second;
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
