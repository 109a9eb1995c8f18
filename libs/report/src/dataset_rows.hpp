#pragma once
// Training rows (dataset.hpp) from a selected sample and its stored answers.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "export_select.hpp"

namespace kforge::report::detail {

class RowMaker {
 public:
  static Result<std::unique_ptr<RowMaker>> create(store::Db& db, const RunInfo& run,
                                                  const ExportOptions& opts);
  // The row of opts.shape for a selected sample, the index-th of `split`; nullopt when the
  // sample has no answer to train on. Errors "parse" name the run, sample and stage of a stored
  // request or answer that cannot be read.
  Result<std::optional<ojson>> make(const Selected& sel, const std::string& split,
                                    std::int64_t index);

 private:
  RowMaker(store::Db& db, const RunInfo& run, const ExportOptions& opts)
      : db_(db), run_(run), opts_(opts) {}
  store::Db& db_;
  const RunInfo& run_;
  const ExportOptions& opts_;
};

// The names of the top-level functions a wrapper defines ("def NAME(" at the line start).
std::vector<std::string> top_level_functions(const std::string& source);

}  // namespace kforge::report::detail
