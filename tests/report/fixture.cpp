#include "fixture.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kforge/core/fs.hpp"
#include "kforge/corpus/importer.hpp"

namespace kforge::test {

std::filesystem::path fixture_file(const std::string& name) {
  return source_dir() / "tests" / "report" / "fixtures" / name;
}

ReportFixture::ReportFixture() : db_path_(dir_ / "kforge.db") {
  store::OpenOptions o;
  o.path = db_path_.string();
  auto db = store::Db::open(o);
  if (!db.ok()) throw std::runtime_error(db.error().message);
  db_ = std::move(db).value();
  corpus::ImportOptions io;
  auto map = corpus::parse_field_map(
      "code=output,description_1=simp_instru,description_2=comp_instru,key=file");
  if (!map.ok()) throw std::runtime_error(map.error().message);
  io.map = *map;
  auto imported = corpus::import_file(*db_, fixture_file("corpus.json"), io);
  if (!imported.ok()) throw std::runtime_error(imported.error().message);
  auto sql = read_file(fixture_file("ab_runs.sql"));
  if (!sql.ok()) throw std::runtime_error(sql.error().message);
  auto st = db_->exec(*sql);
  if (!st.ok()) throw std::runtime_error("ab_runs.sql: " + st.error().message);
}

namespace {
const store::QuerySet& checks() {
  static const std::string text = [] {
    auto t = read_file(fixture_file("checks.sql"));
    if (!t.ok()) throw std::runtime_error(t.error().message);
    return *t;
  }();
  static const EmbeddedFile file{"checks.sql", text};
  static const store::QuerySet q(std::span<const EmbeddedFile>(&file, 1));
  return q;
}
}  // namespace

store::Stmt ReportFixture::query(const std::string& name, const std::vector<std::string>& params) {
  auto s = db_->prepare(checks()[name]);
  if (!s.ok()) throw std::runtime_error(s.error().message);
  for (std::size_t i = 0; i < params.size(); ++i) s->bind(static_cast<int>(i + 1), params[i]);
  return std::move(s).value();
}

std::int64_t ReportFixture::scalar(const std::string& name,
                                   const std::vector<std::string>& params) {
  store::Stmt s = query(name, params);
  auto row = s.step();
  if (!row.ok() || !*row) throw std::runtime_error("no row from " + name);
  return s.int64(0);
}

std::string ReportFixture::text(const std::string& name, const std::vector<std::string>& params) {
  store::Stmt s = query(name, params);
  auto row = s.step();
  if (!row.ok() || !*row) throw std::runtime_error("no row from " + name);
  return s.text(0);
}

void ReportFixture::exec(const std::string& name, const std::vector<std::string>& params) {
  store::Stmt s = query(name, params);
  auto st = s.run();
  if (!st.ok()) throw std::runtime_error(st.error().message);
}

}  // namespace kforge::test
