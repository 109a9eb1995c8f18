#pragma once
// Evaluation sets for decontamination: the kernels of public benchmark files (JSON list or JSON
// Lines, read with the same field map as kforge import), indexed for "is this sample near any of
// them?".
//
// Kernel by kernel: every @triton.jit function of an eval record with at least min_tokens
// normalised tokens is indexed by its kernel signature (signature.hpp: identifiers normalised, so
// renames do not hide a copy). A sample is near the eval set when one of its own kernels of that
// size is the same kernel up to renames, formatting and literals (exact) or is at or above the
// threshold of similarity with an eval kernel; the match names both kernels. Kernels below
// min_tokens (small helpers) are ignored on both sides, so sharing one flags nothing, and a
// sample or record without a kernel is never near. A kernel of kSmallKernelLines code lines or
// fewer, on either side, matches only exactly (up to renames, formatting, literals and casts): a
// six-line dtype copy is not an `add`. Candidates come from the same LSH bands as
// corpus groups, so a query costs kBands hash lookups per kernel plus the candidates.
//
// Two more matches, below the threshold:
//  - named alike (kernel_named_match): a sample's kernel with an eval kernel's name and number of
//    parameters, at least kAlignThreshold similar, with no conflict of operations (an edited
//    copy: FlagGems' `bmm_kernel` in TritonBench-G, 0.76);
//  - a small function's payload: a sample's @jit function below min_tokens that no other @jit
//    function of its file calls (so it is the sample's operation: a one-line pointwise body a
//    decorator turns into a kernel) is, as written (formatting aside), a function an eval kernel
//    calls, of kMinBodyTokens tokens or more. TritonBench-G's `pow_scalar_tensor.py` is FlagGems'
//    `pow_func_scalar_tensor` with the kernel FlagGems generates around it. An exact copy, so the
//    bound on small kernels holds; a helper of the sample (a `prev_multiple_of` its kernels call)
//    and a function no eval kernel calls (one defined and left unused) match nothing.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

// The kernel similarity at which a sample's kernel is near an eval kernel, unless --near-threshold
// says otherwise. Higher than the corpus's file threshold: with identifiers normalised, kernels
// built on one template around another operation (argmin and argmax, randn and uniform) reach
// 0.6-0.75, while the crawl's real copies of TritonBench-G kernels (re-packaged, per-backend,
// edited) are at 0.8 or above (docs/BENCHMARKS.md, "Decontamination on a real crawl").
inline constexpr double kDefaultKernelThreshold = 0.8;

struct NearMatch {
  std::string file;  // the eval set as given
  std::string key;   // its record's key (the --key field), else "record N"
  double similarity = 0;
  bool exact = false;       // the same kernel up to renames, formatting and literals
  bool named = false;       // named alike, below the threshold (kernel_named_match)
  std::string kernel;       // the sample's kernel (its name as written)
  std::string eval_kernel;  // the eval record's kernel
};

class EvalIndex {
 public:
  // Reads every file; errors name the file, the record and the field ("input"), or a file that
  // cannot be read ("io").
  static Result<EvalIndex> load(const std::vector<std::filesystem::path>& files,
                                const corpus::FieldMap& map, corpus::Format format,
                                int min_tokens = kMinKernelTokens);

  // The nearest pair of a kernel of `code` and an eval kernel at or above threshold (an exact
  // match first), or nullopt.
  std::optional<NearMatch> nearest(std::string_view code, double threshold) const;

  // An empty index, to which add_record adds records one by one (what load does).
  explicit EvalIndex(int min_tokens = kMinKernelTokens) : min_tokens_(min_tokens) {}
  // Indexes one record's kernels, as from `file` (a name for NearMatch::file).
  void add_record(const std::string& file, std::string key, std::string_view code);

  int min_tokens() const { return min_tokens_; }

  std::size_t size() const { return kernels_.size(); }
  // Indexed kernels per file, in the order given.
  const std::vector<std::pair<std::string, std::int64_t>>& files() const { return files_; }

 private:
  struct Kernel {
    std::uint32_t file = 0;
    std::string key;
    KernelSignature ks;
  };
  void add(Kernel k);

  std::vector<Kernel> kernels_;
  std::vector<std::pair<std::string, std::int64_t>> files_;
  std::vector<std::unordered_multimap<std::uint64_t, std::uint32_t>> bands_;
  std::unordered_map<std::string, std::uint32_t> bodies_;
  std::unordered_map<std::string, std::uint32_t> cast_free_;  // KernelSignature::cast_free
  struct Payload {
    std::uint32_t file = 0;
    std::string key, name;
  };
  // SmallFunction::written of the small functions an eval kernel calls.
  std::unordered_map<std::string, Payload> payloads_;
  int min_tokens_ = kMinKernelTokens;
};

}  // namespace kforge::dedup
