#include "kforge/dedup/evalset.hpp"

#include <unordered_set>

namespace kforge::dedup {

void EvalIndex::add(Kernel k) {
  auto idx = static_cast<std::uint32_t>(kernels_.size());
  if (bands_.empty()) bands_.resize(kBands);
  if (k.ks.sig.shingles > 0)
    for (int b = 0; b < kBands; ++b)
      bands_[static_cast<std::size_t>(b)].emplace(band_hash(k.ks.sig, b), idx);
  bodies_.emplace(k.ks.body, idx);
  cast_free_.emplace(k.ks.cast_free, idx);
  kernels_.push_back(std::move(k));
}

void EvalIndex::add_record(const std::string& file, std::string key, std::string_view code) {
  if (files_.empty() || files_.back().first != file) files_.emplace_back(file, 0);
  auto fidx = static_cast<std::uint32_t>(files_.size() - 1);
  std::vector<KernelSignature> kernels;
  std::vector<SmallFunction> small;
  read_kernels(code, min_tokens_, true, kernels, &small);
  for (auto& f : small)
    if (f.called && f.tokens >= kMinBodyTokens)
      payloads_.try_emplace(f.written, Payload{fidx, key, f.name});
  for (auto& ks : kernels) {
    add({fidx, key, std::move(ks)});
    ++files_.back().second;
  }
}

Result<EvalIndex> EvalIndex::load(const std::vector<std::filesystem::path>& files,
                                  const corpus::FieldMap& map, corpus::Format format,
                                  int min_tokens) {
  EvalIndex ix(min_tokens);
  for (const auto& file : files) {
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
      std::string key;
      if (map.key) {
        auto field = rec.find(*map.key);
        if (field != rec.end() && field->is_string())
          key = field->get<std::string>();
        else if (field != rec.end() && field->is_number_integer())
          key = std::to_string(field->get<std::int64_t>());
        else
          return fail("input", where + ": field '" + *map.key +
                                   "' (key) is missing or not a string or an integer");
      } else {
        key = "record " + std::to_string(pos.index);
      }
      ix.add_record(file.string(), std::move(key), code->get<std::string>());
      return {};
    };
    KF_CHECK(corpus::read_records(file, format, on_record));
  }
  return ix;
}

std::optional<NearMatch> EvalIndex::nearest(std::string_view code, double threshold) const {
  std::vector<KernelSignature> own;
  std::vector<SmallFunction> small;
  // Operations only where a kernel is named alike with an eval kernel (named_alike below).
  read_kernels(code, min_tokens_, false, own, payloads_.empty() ? nullptr : &small);
  for (const auto& f : small)
    if (auto it = payloads_.find(f.written); it != payloads_.end() && !f.helper)
      return NearMatch{
          files_[it->second.file].first, it->second.key, 1.0, true, false, f.name, it->second.name};
  if (kernels_.empty()) return std::nullopt;
  auto match = [&](const KernelSignature& mine, std::uint32_t i, double sim, bool exact) {
    const Kernel& k = kernels_[i];
    return NearMatch{files_[k.file].first, k.key, sim, exact, false, mine.name, k.ks.name};
  };
  for (const auto& ks : own)
    if (auto it = bodies_.find(ks.body); it != bodies_.end() && !ks.helper)
      return match(ks, it->second, 1.0, true);
  // A small kernel (either side) matches up to casts too, and only so (kernel_match).
  for (const auto& ks : own)
    if (auto it = cast_free_.find(ks.cast_free);
        it != cast_free_.end() && !ks.helper && kernel_match(ks, kernels_[it->second].ks) >= 1.0)
      return match(ks, it->second, 1.0, true);
  std::vector<KernelSignature> with_ops;
  auto named_alike = [&](std::size_t mine, const KernelSignature& eval) {
    if (own[mine].name != eval.name || own[mine].params != eval.params) return false;
    if (with_ops.empty()) read_kernels(code, min_tokens_, true, with_ops, nullptr);
    return kernel_named_match(with_ops[mine], eval);
  };
  std::optional<NearMatch> best, named;
  for (std::size_t m = 0; m < own.size(); ++m) {
    const KernelSignature& ks = own[m];
    if (ks.sig.shingles == 0 || ks.helper) continue;
    std::unordered_set<std::uint32_t> tried;
    for (int b = 0; b < kBands; ++b) {
      auto [lo, hi] = bands_[static_cast<std::size_t>(b)].equal_range(band_hash(ks.sig, b));
      for (auto it = lo; it != hi; ++it) {
        if (!tried.insert(it->second).second) continue;
        double sim = kernel_match(ks, kernels_[it->second].ks);
        if (sim >= threshold && (!best || sim > best->similarity))
          best = match(ks, it->second, sim, false);
        else if (sim < threshold && (!named || sim > named->similarity) &&
                 named_alike(m, kernels_[it->second].ks)) {
          named = match(ks, it->second, sim, false);
          named->named = true;
        }
      }
    }
  }
  return best ? best : named;
}

}  // namespace kforge::dedup
