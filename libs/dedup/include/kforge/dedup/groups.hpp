#pragma once
// Near-duplicate groups of the imported corpus, kept in the database (migrations/0010_dedup.sql).
//
// update() brings the store up to date: it computes the signature of every sample that has none
// for its current code (in parallel, a batch at a time, so memory holds the signatures and one
// batch of code), finds candidate pairs by LSH (kBands bands of kRows slots; every pair at
// similarity >= 0.5 is a candidate with probability above 0.87, and above 0.999 from 0.7) and by
// LSH over kernel sketches (lsh.hpp), keeps the pairs at or above kPairFloor or linked through
// kernels (signature.hpp kernel_link), and stores the groups at `threshold`. Groups do not depend
// on import order and do not chain: samples sharing their kernel bodies (up to renames) or their
// kernel sketches are one class; each group has a representative class and every other class in
// it has a pair with it at or above the threshold or linked through kernels (its kernels within
// the representative's, aligned with them or named alike; star clustering, groups.cpp
// `components`), so two single-file members linked by similarity are at least 2t - 1 similar
// (Jaccard distance obeys the triangle inequality). Pairs and groups are recomputed only when a
// signature changed or the threshold differs from the stored one.
//
// Memory: about 0.8 KB per sample (signature, kernel sketches of about 140 bytes a kernel with its
// name and parameter count, LSH band entries), whatever the code size.
//
// Threads: one Db, the caller's thread; signatures are computed on `threads` worker threads.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::dedup {

// Chosen on the 332 labelled crawl pairs (bench/dedup/crawl_pairs.json; docs/BENCHMARKS.md,
// "issue 40, the two fourth passes together"): grouping's precision and recall are the same at
// 0.55 and 0.6 (0.985, 0.934) and both goals (0.95, 0.90) are met from 0.5 to 0.7; 0.6 keeps a
// group's spread bounded (2t - 1 = 0.2) and every corpus's groups where they were.
inline constexpr double kDefaultThreshold = 0.6;
// Pairs below this similarity are not stored; groups exist for thresholds from here to 1.
inline constexpr double kPairFloor = 0.5;

// Errors "usage" for a threshold outside [kPairFloor, 1].
Status check_threshold(double t);

struct UpdateOptions {
  double threshold = kDefaultThreshold;
  int threads = 0;  // 0: the machine's cores
  // Called after each batch of signatures: (done, total to compute).
  std::function<void(std::int64_t, std::int64_t)> progress;
};

struct UpdateSummary {
  std::int64_t samples = 0;     // in the corpus
  std::int64_t computed = 0;    // signatures computed now (the rest were current)
  std::int64_t candidates = 0;  // LSH candidate pairs compared
  std::int64_t pairs = 0;       // stored pairs (similarity >= kPairFloor)
  std::int64_t groups = 0;      // groups of two or more at the threshold
  std::int64_t grouped = 0;     // samples in those groups
  bool recomputed = false;      // false: nothing changed, pairs and groups were kept
};

Result<UpdateSummary> update(store::Db& db, const UpdateOptions& opts, Clock& clock);

struct State {
  std::string scheme;  // the signature scheme and the LSH pass the pairs were found with
  double threshold = 0;
  std::int64_t samples = 0;  // signed samples when computed
  std::int64_t pairs = 0;
  std::int64_t groups = 0;
  std::int64_t computed_ms = 0;
  std::int64_t stale = 0;  // samples without a current signature now
};
// nullopt: never computed.
Result<std::optional<State>> state(store::Db& db);

// How a member is linked to the one it names (groups.cpp `components`).
enum class Via {
  similarity,    // at or above the threshold
  same_kernels,  // the same kernel bodies up to renames
  within,        // its kernels are all within that member's (kernels_within)
  holds,         // (the representative) that member's kernels are all within its own
  aligned,       // its kernels pair one to one with that member's (kernels_aligned)
  named,         // its kernels have the names of that member's, each near its namesake
                 // (kernels_named), or its kernel names are within that member's and their
                 // code overlaps (kernels_named_within)
  small,         // the same one-line @jit functions, files at least 0.5 similar
};
const char* to_string(Via v);

struct Member {
  std::int64_t sample_id = 0;
  std::string key;
  std::int64_t bytes = 0;   // code size
  std::string code_sha256;  // of the code: orders members by content, never by import order
  std::string linked_to;    // the group's representative (for it: its closest member)
  double similarity = 0;    // with that member (1 for the same kernels)
  bool exact = false;       // the same kernel bodies (up to renames) as that member
  Via via = Via::similarity;
};

struct Group {
  std::int64_t id = 0;      // the smallest sample id in it
  std::int64_t center = 0;  // the representative: its class has a pair >= threshold with each other
  // The lowest similarity to the center of a member linked by similarity (members linked through
  // kernels can be less similar as files: their kernels are what is alike).
  double spread = 1;
  int through_kernels = 0;      // members linked through kernels (within, aligned, named, small)
  std::vector<Member> members;  // in sample id (import) order
};

// The groups at `threshold` (>= kPairFloor) from the stored pairs, largest first, then by id.
Result<std::vector<Group>> groups_at(store::Db& db, double threshold);

// Which member a run keeps, never depending on import order:
//  - first: the group's representative (Group::center: the member of the class the group was
//    built around, the first of that class by code SHA-256); when the representative is not
//    among the members given (a run over part of the corpus), the member first by code SHA-256;
//  - largest: the largest code; ties go to the representative, then by code SHA-256.
enum class Choice { first, largest };
Result<Choice> parse_choice(const std::string& s);
const char* to_string(Choice c);
const Member& representative(const Group& g, Choice c);

}  // namespace kforge::dedup
