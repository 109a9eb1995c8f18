#pragma once
// Evaluation sets for decontamination: the kernels of public benchmark files (JSON list or JSON
// Lines, read with the same field map as kforge import), indexed for "is this sample near any of
// them?".
//
// A sample is near an eval kernel when they share an exact kernel body (a @triton.jit function
// of at least kMinBodyTokens tokens, identical but for comments and whitespace) or when their
// estimated similarity is at or above the threshold. Candidates come from the same LSH bands as
// corpus groups, so a query costs kBands hash lookups plus the candidates.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/signature.hpp"

namespace kforge::dedup {

struct NearMatch {
  std::string file;  // the eval set as given
  std::string key;   // its record's key (the --key field), else "record N"
  double similarity = 0;
  bool exact = false;  // an identical kernel body
};

class EvalIndex {
 public:
  // Reads every file; errors name the file, the record and the field ("input"), or a file that
  // cannot be read ("io").
  static Result<EvalIndex> load(const std::vector<std::filesystem::path>& files,
                                const corpus::FieldMap& map, corpus::Format format);

  // The nearest eval kernel at or above threshold (an exact body match first), or nullopt.
  std::optional<NearMatch> nearest(const Signature& s, double threshold) const;

  std::size_t size() const { return kernels_.size(); }
  // Kernels per file, in the order given.
  const std::vector<std::pair<std::string, std::int64_t>>& files() const { return files_; }

 private:
  struct Kernel {
    std::uint32_t file = 0;
    std::string key;
    Signature sig;
  };
  void add(Kernel k);

  std::vector<Kernel> kernels_;
  std::vector<std::pair<std::string, std::int64_t>> files_;
  std::vector<std::unordered_multimap<std::uint64_t, std::uint32_t>> bands_;
  std::unordered_map<std::string, std::uint32_t> bodies_;
};

}  // namespace kforge::dedup
