#pragma once
// One value from a real database in a test: the first column of the first row of a query. A
// query that does not prepare or run fails the test with its error and the SQL.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "kforge/store/db.hpp"

namespace kforge::test {

// The query's one integer; a query without a row fails the test too (and gives -1).
inline std::int64_t db_scalar(store::Db& db, std::string_view sql) {
  auto s = db.prepare(sql);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message) << ": " << sql;
  if (!s.ok()) return -1;
  auto row = s->step();
  EXPECT_TRUE(row.ok() && *row) << (row.ok() ? "no row" : row.error().message) << ": " << sql;
  return row.ok() && *row ? s->int64(0) : -1;
}

// The query's one text; "" where it gives no row (for messages: "what the jobs were").
inline std::string db_text(store::Db& db, std::string_view sql) {
  auto s = db.prepare(sql);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message) << ": " << sql;
  if (!s.ok()) return "";
  auto row = s->step();
  EXPECT_TRUE(row.ok()) << (row.ok() ? "" : row.error().message) << ": " << sql;
  return row.ok() && *row ? s->text(0) : "";
}

}  // namespace kforge::test
