#pragma once
// Small filesystem helpers with Result errors that name the path.

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "kforge/core/result.hpp"

namespace kforge {

// Reads a whole file. Error kind "io", message "PATH: strerror".
Result<std::string> read_file(const std::filesystem::path& path);

// A file written in pieces and renamed into place when complete: readers see the old file or
// the new one, never a half-written one. Abandoned (not committed) files are removed.
class AtomicFile {
 public:
  // Creates PATH.tmp.<pid> beside path. Error kind "io" names the path. The path "-" writes to
  // standard output instead (commit flushes it; nothing is renamed).
  static Result<AtomicFile> create(const std::filesystem::path& path);
  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temp file unless committed

  Status write(std::string_view data);
  // Flushes, fsyncs and renames over the destination.
  Status commit();
  const std::filesystem::path& temp_path() const { return tmp_; }

 private:
  AtomicFile(std::FILE* f, std::filesystem::path path, std::filesystem::path tmp)
      : f_(f), path_(std::move(path)), tmp_(std::move(tmp)) {}
  std::FILE* f_ = nullptr;
  std::filesystem::path path_;
  std::filesystem::path tmp_;
};

// Writes data through an AtomicFile (PATH.tmp.<pid>, fsynced, renamed over path): readers see
// the old file or the new one, never half of it.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data);

// Writes data to path, replacing it; no fsync (for scratch files that a crash may lose).
Status write_file(const std::filesystem::path& path, std::string_view data);

// Replaces characters unsafe for a single path component.
std::string safe_file_name(std::string_view name);

}  // namespace kforge
