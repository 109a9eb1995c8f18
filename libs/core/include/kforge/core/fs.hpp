#pragma once
// Small filesystem helpers with Result errors that name the path.

#include <filesystem>
#include <string>
#include <string_view>

#include "kforge/core/result.hpp"

namespace kforge {

// Reads a whole file. Error kind "io", message "PATH: strerror".
Result<std::string> read_file(const std::filesystem::path& path);

// Writes data to PATH.tmp.<pid>, fsyncs, then renames over path: readers see the old file or
// the new one, never half of it.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data);

// Writes data to path, replacing it; no fsync (for scratch files that a crash may lose).
Status write_file(const std::filesystem::path& path, std::string_view data);

// Replaces characters unsafe for a single path component.
std::string safe_file_name(std::string_view name);

}  // namespace kforge
