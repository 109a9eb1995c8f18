#pragma once
// Where kforge's data files (prompts, the verifier harness) are found at run time.
//
// Order: $KFORGE_DATA_DIR; <exe>/../share/kforge; the installed prefix; the source tree the binary
// was built from. The first that holds `probe` (a relative path) wins.

#include <filesystem>
#include <optional>
#include <string>

namespace kforge {

std::optional<std::filesystem::path> find_data_dir(const std::string& probe);

// The source tree this binary was built from (for development and tests).
std::filesystem::path source_dir();

}  // namespace kforge
