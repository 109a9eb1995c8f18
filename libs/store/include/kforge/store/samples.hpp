#pragma once
// Samples: the imported corpus records.

#include <cstdint>
#include <optional>
#include <string>

#include "kforge/store/db.hpp"

namespace kforge::store {

struct SampleRow {
  std::string key;
  std::string code_sha256;
  std::string code;
  std::optional<std::string> description_1;
  std::optional<std::string> description_2;
  std::string record_json;  // the original record, every field, in file order
  std::string source;
  std::int64_t source_index = 0;
};

struct ExistingSample {
  std::int64_t id;
  std::string code_sha256;
  std::string record_json;
  std::optional<std::string> description_1;  // as mapped at import
  std::optional<std::string> description_2;
};

class Samples {
 public:
  explicit Samples(Db& db) : db_(db) {}
  Result<std::optional<ExistingSample>> find(const std::string& key);
  Status insert(const SampleRow& row, std::int64_t now_ms);
  Status update(const SampleRow& row, std::int64_t now_ms);
  Result<std::int64_t> count();

 private:
  Db& db_;
};

// The named queries of this library.
const QuerySet& store_queries();

}  // namespace kforge::store
