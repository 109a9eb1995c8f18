#include "kforge/store/samples.hpp"

namespace kforge::store {

std::span<const EmbeddedFile> store_sql();

const QuerySet& store_queries() {
  static const QuerySet q(store_sql());
  return q;
}

Result<std::optional<ExistingSample>> Samples::find(const std::string& key) {
  KF_TRY(Stmt * s, db_.cached(store_queries()["sample_by_key"]));
  s->bind(1, key);
  return s->one([](Stmt& r) {
    ExistingSample e{r.int64(0), r.text(1), r.text(2), {}, {}};
    if (!r.is_null(3)) e.description_1 = r.text(3);
    if (!r.is_null(4)) e.description_2 = r.text(4);
    return e;
  });
}

namespace {
Status write(Db& db, std::string_view sql, const SampleRow& row, std::int64_t now_ms) {
  KF_TRY(Stmt * s, db.cached(sql));
  s->bind(1, row.key)
      .bind(2, row.code_sha256)
      .bind(3, row.code)
      .bind(4, row.description_1)
      .bind(5, row.description_2)
      .bind(6, row.record_json)
      .bind(7, row.source)
      .bind(8, row.source_index)
      .bind(9, now_ms);
  return s->run();
}
}  // namespace

Status Samples::insert(const SampleRow& row, std::int64_t now_ms) {
  return write(db_, store_queries()["insert_sample"], row, now_ms);
}

Status Samples::update(const SampleRow& row, std::int64_t now_ms) {
  return write(db_, store_queries()["update_sample"], row, now_ms);
}

Result<std::int64_t> Samples::count() {
  KF_TRY(Stmt * s, db_.cached(store_queries()["count_samples"]));
  KF_TRY(auto n, s->one([](Stmt& r) { return r.int64(0); }));
  return n.value_or(0);
}

}  // namespace kforge::store
