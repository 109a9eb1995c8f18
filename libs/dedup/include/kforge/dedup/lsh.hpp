#pragma once
// Candidate pairs by locality-sensitive hashing over MinHash bands, in memory.
//
// Items sharing a kernels_sha are exact duplicates: each is paired with the first of its class
// (similarity 1) and only that first one takes part in LSH. For each band, items are sorted by
// band hash; items in the same bucket are candidates. A bucket larger than kMaxBucket (a
// boilerplate file copied thousands of times) pairs each item with its first kMaxBucket items
// only, which keeps the work linear; their groups still form through those links.

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

inline constexpr std::size_t kMaxBucket = 64;

struct LshItem {
  std::int64_t id = 0;
  Signature sig;  // minhash, shingles and kernels_sha are used
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
