#include "kforge/pipeline/search_index.hpp"

#include <algorithm>

#include "kforge/pipeline/jobs.hpp"

namespace kforge::pipeline {

namespace {

using store::Stmt;

Result<SearchBacklog> backlog(store::Db& db) {
  KF_TRY(Stmt * s, db.cached(pipeline_queries()["search_answers_state"]));
  KF_TRY(auto row, s->one([](Stmt& r) { return SearchBacklog{r.int64(0), r.int64(1)}; }));
  return row.value_or(SearchBacklog{});
}

}  // namespace

Result<SearchBacklog> index_answers(store::Db& db, std::int64_t max_ids) {
  KF_TRY(SearchBacklog b, backlog(db));  // a look without a write lock: most calls find none
  if (b.caught_up()) return b;
  KF_TRY(auto tx, store::Transaction::begin(db));
  KF_TRY(SearchBacklog locked, backlog(db));  // again under the lock: another writer may have
  b = locked;                                 // moved it
  if (b.caught_up()) return b;
  const std::int64_t upto = max_ids > 0 ? std::min(b.newest, b.indexed_upto + max_ids) : b.newest;
  {
    KF_TRY(Stmt * s, db.cached(pipeline_queries()["search_index_answers"]));
    s->bind(1, upto);
    KF_CHECK(s->run());
  }
  {
    KF_TRY(Stmt * s, db.cached(pipeline_queries()["search_answers_mark"]));
    s->bind(1, upto);
    KF_CHECK(s->run());
  }
  KF_CHECK(tx.commit());
  b.indexed_upto = upto;
  return b;
}

Status index_all_answers(store::Db& db, std::int64_t batch_ids) {
  for (;;) {
    KF_TRY(SearchBacklog b, index_answers(db, batch_ids));
    if (b.caught_up()) return {};
  }
}

}  // namespace kforge::pipeline
