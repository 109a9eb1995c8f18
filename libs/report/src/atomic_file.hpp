#pragma once
// A file written in pieces and renamed into place when complete: readers see the old file or
// the new one, never a half-written one. Abandoned (not committed) files are removed.

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "kforge/core/result.hpp"

namespace kforge::report::detail {

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

}  // namespace kforge::report::detail
