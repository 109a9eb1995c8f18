#pragma once
// Candidate pairs by locality-sensitive hashing over MinHash bands, in memory.
//
// Nothing depends on the order of `items` (import order): wherever an order is needed, items are
// taken by their content hash. Items sharing a kernels_sha (the same kernels up to renames) are
// paired with the first of its class (similarity 1). Items with identical signatures are paired
// with the first of them at 1 and only that one takes part in LSH; every other item does, exact
// duplicates included (two files with the same kernels can each have near-duplicates the other
// lacks). For each band, items are sorted by band hash; items in the same bucket are candidates.
// A bucket larger than kMaxBucket (a boilerplate file copied thousands of times) pairs each item
// with its first kMaxBucket items only, which keeps the work linear.

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

inline constexpr std::size_t kMaxBucket = 64;

struct LshItem {
  std::int64_t id = 0;
  Signature sig;  // minhash, shingles and kernels_sha are used
  // Orders items by content (the first 16 hex digits of the code's SHA-256), not import order.
  std::uint64_t content = 0;
};

struct LshPair {
  std::int64_t a = 0;  // a < b (ids)
  std::int64_t b = 0;
  double similarity = 0;
  bool exact = false;
};

struct LshResult {
  std::vector<LshPair> pairs;  // at or above floor, each once
  std::int64_t candidates = 0;
};

LshResult find_pairs(const std::vector<LshItem>& items, double floor);

}  // namespace kforge::dedup
