// kforge-bench-sql: runs SQL files (or standard input) against a kforge database, migrating it
// first, on a connection that has kforge's SQL functions (kf_text, kf_put: store/texts.hpp),
// which the sqlite3 shell lacks. For the benchmarks' fill scripts (bench/idle, bench/report).
//   kforge-bench-sql DB [FILE...]

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "kforge/core/fs.hpp"
#include "kforge/store/db.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kforge-bench-sql DB [FILE...]  (no FILE: standard input)\n");
    return 2;
  }
  kforge::store::OpenOptions o;
  o.path = argv[1];
  auto db = kforge::store::Db::open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "kforge-bench-sql: %s\n", db.error().message.c_str());
    return 1;
  }
  auto run = [&](const std::string& name, const std::string& sql) {
    auto st = (*db)->exec(sql);
    if (st.ok()) return true;
    std::fprintf(stderr, "kforge-bench-sql: %s: %s\n", name.c_str(), st.error().message.c_str());
    return false;
  };
  if (argc == 2) {
    std::string sql((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return run("<stdin>", sql) ? 0 : 1;
  }
  for (int i = 2; i < argc; ++i) {
    auto sql = kforge::read_file(argv[i]);
    if (!sql.ok()) {
      std::fprintf(stderr, "kforge-bench-sql: %s\n", sql.error().message.c_str());
      return 1;
    }
    if (!run(argv[i], *sql)) return 1;
  }
  return 0;
}
