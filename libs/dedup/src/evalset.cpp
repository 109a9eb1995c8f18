#include "kforge/dedup/evalset.hpp"

#include <unordered_set>

namespace kforge::dedup {

void EvalIndex::add(Kernel k) {
  auto idx = static_cast<std::uint32_t>(kernels_.size());
  if (bands_.empty()) bands_.resize(kBands);
  if (k.sig.shingles > 0)
    for (int b = 0; b < kBands; ++b)
      bands_[static_cast<std::size_t>(b)].emplace(band_hash(k.sig, b), idx);
  for (const auto& body : k.sig.bodies) bodies_.emplace(body, idx);
  kernels_.push_back(std::move(k));
}

Result<EvalIndex> EvalIndex::load(const std::vector<std::filesystem::path>& files,
                                  const corpus::FieldMap& map, corpus::Format format) {
  EvalIndex ix;
  for (const auto& file : files) {
    auto fidx = static_cast<std::uint32_t>(ix.files_.size());
    ix.files_.emplace_back(file.string(), 0);
    auto on_record = [&](nlohmann::ordered_json&& rec, const corpus::RecordPos& pos) -> Status {
      // The reader puts the file's name in front of what this returns.
      std::string where =
          "record " + std::to_string(pos.index) + " (line " + std::to_string(pos.line) + ")";
      if (!rec.is_object()) return fail("input", where + ": expected an object");
      auto code = rec.find(map.code);
      if (code == rec.end() || !code->is_string())
        return fail("input", where + ": field '" + map.code +
                                 "' (code) is missing or not a string (--map code=FIELD names it)");
      Kernel k;
      k.file = fidx;
      if (map.key) {
        auto key = rec.find(*map.key);
        if (key != rec.end() && key->is_string())
          k.key = key->get<std::string>();
        else if (key != rec.end() && key->is_number_integer())
          k.key = std::to_string(key->get<std::int64_t>());
        else
          return fail("input", where + ": field '" + *map.key +
                                   "' (key) is missing or not a string or an integer");
      } else {
        k.key = "record " + std::to_string(pos.index);
      }
      k.sig = compute_signature(code->get<std::string>());
      ix.add(std::move(k));
      ++ix.files_.back().second;
      return {};
    };
    KF_CHECK(corpus::read_records(file, format, on_record));
  }
  return ix;
}

std::optional<NearMatch> EvalIndex::nearest(const Signature& s, double threshold) const {
  auto match = [&](std::uint32_t i, double sim, bool exact) {
    const Kernel& k = kernels_[i];
    return NearMatch{files_[k.file].first, k.key, sim, exact};
  };
  for (const auto& body : s.bodies)
    if (auto it = bodies_.find(body); it != bodies_.end()) return match(it->second, 1.0, true);
  if (s.shingles == 0 || bands_.empty()) return std::nullopt;
  std::unordered_set<std::uint32_t> tried;
  std::optional<std::pair<std::uint32_t, double>> best;
  for (int b = 0; b < kBands; ++b) {
    auto [lo, hi] = bands_[static_cast<std::size_t>(b)].equal_range(band_hash(s, b));
    for (auto it = lo; it != hi; ++it) {
      if (!tried.insert(it->second).second) continue;
      double sim = similarity(s, kernels_[it->second].sig);
      if (sim >= threshold && (!best || sim > best->second)) best = {it->second, sim};
    }
  }
  if (!best) return std::nullopt;
  return match(best->first, best->second, false);
}

}  // namespace kforge::dedup
