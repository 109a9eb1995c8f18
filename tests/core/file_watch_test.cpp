// FileWatch on a real directory: writes, creation and atomic replacement of the watched names
// call back; other files of the directory do not; SQLite's commits through its -wal file do.

#include "kforge/core/file_watch.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testutil.hpp"

namespace kforge {
namespace {

using namespace std::chrono_literals;

// Polls until pred holds or 5 s pass.
template <class F>
bool eventually(F pred) {
  auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

void append(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::app);
  f << text;
}

TEST(FileWatch, WritesOfTheWatchedNamesCallBackAndOthersDoNot) {
  test::TempDir dir;
  std::atomic<int> calls{0};
  auto w = FileWatch::start(dir.path().string(), {"kforge.db", "kforge.db-wal"}, [&] { ++calls; });
  ASSERT_TRUE(w.ok()) << w.error().message;

  append(dir.path() / "other.txt", "x");
  append(dir.path() / "kforge.db-journal", "x");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(calls.load(), 0) << "files not watched";

  append(dir.path() / "kforge.db-wal", "x");  // created and written
  ASSERT_TRUE(eventually([&] { return calls.load() >= 1; }));
  int before = calls.load();
  append(dir.path() / "kforge.db-wal", "y");
  ASSERT_TRUE(eventually([&] { return calls.load() > before; }));

  // Replaced atomically (written elsewhere, renamed over it).
  before = calls.load();
  append(dir.path() / "tmp", "z");
  std::filesystem::rename(dir.path() / "tmp", dir.path() / "kforge.db");
  ASSERT_TRUE(eventually([&] { return calls.load() > before; }));
  EXPECT_EQ((*w)->wakes(), static_cast<std::uint64_t>(calls.load()));

  // Once destroyed, nothing calls back.
  w->reset();
  before = calls.load();
  append(dir.path() / "kforge.db-wal", "w");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(calls.load(), before);
}

TEST(FileWatch, ACommitOfAnotherConnectionIsSeen) {
  test::TempDir dir;
  const auto db = dir.path() / "kforge.db";
  sqlite3* c = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &c), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(c, "PRAGMA journal_mode=WAL; CREATE TABLE t(x)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  std::atomic<int> calls{0};
  auto w = FileWatch::start(dir.path().string(), {"kforge.db", "kforge.db-wal"}, [&] { ++calls; });
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(sqlite3_exec(c, "INSERT INTO t VALUES (1)", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(eventually([&] { return calls.load() >= 1; }));
  sqlite3_close(c);
}

TEST(FileWatch, AMissingDirectoryIsAnErrorNamingIt) {
  auto w = FileWatch::start("/nonexistent/kforge-dir", {"kforge.db"}, [] {});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("/nonexistent/kforge-dir"), std::string::npos)
      << w.error().message;
}

}  // namespace
}  // namespace kforge
