// scripts/run as root: the verifier is pointed at a python3 that the sandbox's uids can start.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "testutil.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A python3 in `dir` (a copy of a shell script: only its modes matter), with `dir`'s and the
// file's modes as given.
fs::path python_in(const fs::path& dir, fs::perms dir_mode, fs::perms file_mode) {
  fs::create_directories(dir);
  auto py = dir / "python3";
  test::write_text(py, "#!/bin/sh\nexit 0\n");
  fs::permissions(py, file_mode);
  fs::permissions(dir, dir_mode);
  return py;
}

test::ProcResult python_for_all(const std::string& path) {
  return test::run_process({(test::source_dir() / "scripts" / "lib" / "python-for-all").string()},
                           {"PATH=" + path + ":/usr/bin:/bin"});
}

TEST(RunScript, PythonForAllSkipsOneUnderAClosedFolderOrClosedToOthers) {
  test::TempDir tmp;
  const auto rwx = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                   fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(tmp.path(), rwx);  // made 0700: open it, as /usr is
  auto closed_dir = python_in(tmp.path() / "home" / "bin", fs::perms::owner_all, rwx);
  fs::permissions(tmp.path() / "home", fs::perms::owner_all);
  auto private_file =
      python_in(tmp.path() / "opt" / "bin", rwx,
                fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  auto open = python_in(tmp.path() / "usr" / "bin", rwx, rwx);
  for (const char* top : {"opt", "usr"}) fs::permissions(tmp.path() / top, rwx);

  auto r = python_for_all(closed_dir.parent_path().string() + ":" +
                          private_file.parent_path().string() + ":" + open.parent_path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, open.string() + "\n");

  // A link is judged by the file it leads to: one into the closed folder is closed too.
  auto link_dir = tmp.path() / "links";
  fs::create_directories(link_dir);
  fs::create_symlink(closed_dir, link_dir / "python3");
  r = python_for_all(link_dir.string() + ":" + open.parent_path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, open.string() + "\n");

  // Nothing open on PATH (the system's python3 aside): the script names the system's, or none.
  r = python_for_all(closed_dir.parent_path().string());
  if (r.exit_code == 0) {
    EXPECT_NE(r.out.find("/usr/bin/python3"), std::string::npos) << r.out;
  }
  EXPECT_EQ(r.out.find(tmp.path().string()), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kforge
