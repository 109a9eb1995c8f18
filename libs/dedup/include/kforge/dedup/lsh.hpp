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
//
// Links through kernels (signature.hpp kernel_link: one file's kernels within another's, aligned
// one to one, or named alike) hold at any file similarity, so they have an index of their own:
// every kernel sketch goes into LSH bands of its own (kSketchBands of kRows), and two files with
// kernels in one bucket are tested for a link. Files with the same kernel sketches are paired
// with the first of them (content order) and only that one takes part. Each file tests at most
// kMaxKernelTests others through this index and keeps at most kMaxKernelLinks links found by it,
// in band and content order, which keeps the work linear where thousands of edited copies of one
// file share their kernels (a group needs a link to its representative, not to every member).
// Every pair found either way carries its link.

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

inline constexpr std::size_t kMaxBucket = 64;
inline constexpr std::uint8_t kMaxKernelTests = 32;
inline constexpr std::uint8_t kMaxKernelLinks = 8;

struct LshItem {
  std::int64_t id = 0;
  Signature sig;  // minhash, shingles, kernels_sha and kernels are used
  // Orders items by content (the first 16 hex digits of the code's SHA-256), not import order.
  std::uint64_t content = 0;
};

struct LshPair {
  std::int64_t a = 0;  // a < b (ids)
  std::int64_t b = 0;
  double similarity = 0;
  bool exact = false;
  int link = 0;  // KernelLink of (a, b); 0 for exact pairs
};

struct LshResult {
  std::vector<LshPair> pairs;          // at or above floor or linked through kernels, each once
  std::int64_t candidates = 0;         // file pairs compared by file signature
  std::int64_t kernel_candidates = 0;  // file pairs tested for a link through kernels
};

LshResult find_pairs(const std::vector<LshItem>& items, double floor);

}  // namespace kforge::dedup
