#include "batch_export_file.hpp"

#include <unistd.h>

#include <fstream>

namespace kforge::cli {

Result<ExportFile> ExportFile::create(const std::string& path) {
  // Standard output gets the lines from a temporary file of its own, once they are all written.
  std::string target = path == "-"
                           ? (std::filesystem::temp_directory_path() /
                              ("kforge-batch-export-" + std::to_string(::getpid()) + ".jsonl"))
                                 .string()
                           : path;
  KF_TRY(AtomicFile f, AtomicFile::create(target));
  return ExportFile(path, std::move(f));
}

void ExportFile::add(const std::string& line) {
  if (error_) return;
  auto st = file_.write(line);
  if (!st.ok()) error_ = st.error();
}

Status ExportFile::commit() {
  if (error_) return Status(*error_);
  KF_CHECK(file_.commit());
  if (path_ != "-") return {};
  // The temporary file to standard output, a block at a time, then removed.
  std::filesystem::path tmp = std::filesystem::temp_directory_path() /
                              ("kforge-batch-export-" + std::to_string(::getpid()) + ".jsonl");
  std::ifstream in(tmp, std::ios::binary);
  char buf[1 << 16];
  bool ok = static_cast<bool>(in);
  while (ok && in) {
    in.read(buf, sizeof buf);
    auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0 && std::fwrite(buf, 1, n, stdout) != n) ok = false;
  }
  ok = ok && std::fflush(stdout) == 0;
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  if (!ok) return fail("io", "standard output: cannot be written (the batch input file)");
  return {};
}

}  // namespace kforge::cli
