#pragma once
// kforge batch export's output: the lines written as the requests come (none is held in
// memory), into PATH.tmp.<pid>, renamed over PATH once the whole run is written (AtomicFile): a
// failed export leaves the old file, never half of a new one. "-" is standard output, written
// whole at the end from the temporary file, so that a failed export prints nothing there either.

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "kforge/core/fs.hpp"
#include "kforge/core/result.hpp"

namespace kforge::cli {

class ExportFile {
 public:
  static Result<ExportFile> create(const std::string& path);
  // Appends a line; the first error is kept for commit().
  void add(const std::string& line);
  // The file renamed into place (or standard output written), or the first error.
  Status commit();

 private:
  ExportFile(std::string path, AtomicFile file) : path_(std::move(path)), file_(std::move(file)) {}
  std::string path_;
  AtomicFile file_;
  std::optional<Error> error_;
};

}  // namespace kforge::cli
