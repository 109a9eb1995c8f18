#include "kforge/core/paths.hpp"

#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace kforge {

std::filesystem::path source_dir() {
  return KFORGE_SOURCE_DIR;
}

std::optional<std::filesystem::path> find_data_dir(const std::string& probe) {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("KFORGE_DATA_DIR")) candidates.emplace_back(env);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "kforge");
  candidates.emplace_back(KFORGE_DATA_INSTALL_DIR);
  candidates.emplace_back(KFORGE_SOURCE_DIR);
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c / probe, ec)) return c;
  }
  return std::nullopt;
}

}  // namespace kforge
