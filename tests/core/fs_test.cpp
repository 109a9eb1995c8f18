#include <gtest/gtest.h>

#include <filesystem>

#include "kforge/core/fs.hpp"
#include "testutil.hpp"

namespace kforge::test {
namespace {

TEST(CoreFs, WriteFileReplacesTheContent) {
  TempDir tmp;
  auto p = tmp.path() / "a.json";
  ASSERT_TRUE(write_file(p, "first, longer text").ok());
  ASSERT_TRUE(write_file(p, "second").ok());
  EXPECT_EQ(read_file(p).value_or(""), "second");
  ASSERT_TRUE(write_file_atomic(p, "third").ok());
  EXPECT_EQ(read_file(p).value_or(""), "third");
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(CoreFs, WriteErrorsNameThePath) {
  TempDir tmp;
  auto p = tmp.path() / "missing-dir" / "a.json";
  auto st = write_file(p, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(p.string()), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("No such file or directory"), std::string::npos);
  auto at = write_file_atomic(p, "x");
  ASSERT_FALSE(at.ok());
  EXPECT_NE(at.error().message.find("missing-dir"), std::string::npos) << at.error().message;
}

TEST(CoreFs, AnAtomicFileIsSeenWholeOrNotAtAll) {
  TempDir tmp;
  auto p = tmp.path() / "out.jsonl";
  ASSERT_TRUE(write_file(p, "old\n").ok());
  {
    auto f = AtomicFile::create(p);
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_TRUE(f->write("a\n").ok());
    ASSERT_TRUE(f->write("b\n").ok());
    EXPECT_TRUE(std::filesystem::exists(f->temp_path()));
    EXPECT_EQ(read_file(p).value_or(""), "old\n");  // not yet
    ASSERT_TRUE(f->commit().ok());
    EXPECT_FALSE(f->write("late").ok());
  }
  EXPECT_EQ(read_file(p).value_or(""), "a\nb\n");
  std::filesystem::path abandoned;
  {
    auto f = AtomicFile::create(p);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->write("half").ok());
    abandoned = f->temp_path();
  }  // never committed: removed, and the file is untouched
  EXPECT_FALSE(std::filesystem::exists(abandoned));
  EXPECT_EQ(read_file(p).value_or(""), "a\nb\n");
}

}  // namespace
}  // namespace kforge::test
