#pragma once
// A real SQLite database holding the report fixture: corpus.json imported through the corpus
// library (key = file), then fixtures/ab_runs.sql (runs v1, v2, v2-qwen with every verdict,
// stage failures, retried attempts and unfinished jobs).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"
#include "testutil.hpp"

namespace kforge::test {

class ReportFixture {
 public:
  ReportFixture();
  store::Db& db() { return *db_; }
  const std::filesystem::path& db_path() const { return db_path_; }
  const TempDir& dir() const { return dir_; }
  // Runs a named query of fixtures/checks.sql with text parameters ?1, ?2...
  std::int64_t scalar(const std::string& name, const std::vector<std::string>& params = {});
  std::string text(const std::string& name, const std::vector<std::string>& params = {});
  void exec(const std::string& name, const std::vector<std::string>& params = {});

 private:
  store::Stmt query(const std::string& name, const std::vector<std::string>& params);
  TempDir dir_;
  std::filesystem::path db_path_;
  std::unique_ptr<store::Db> db_;
};

std::filesystem::path fixture_file(const std::string& name);

}  // namespace kforge::test
