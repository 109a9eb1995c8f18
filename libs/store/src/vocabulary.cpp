#include "kforge/store/vocabulary.hpp"

#include <span>

#include "kforge/core/embedded.hpp"

namespace kforge::store {

std::span<const EmbeddedFile> vocabulary_files();  // cmake/Embed.cmake

Result<Verdict> parse_verdict(std::string_view stored) {
  return parse_enum(kVerdictNames, stored, "verdict");
}

Result<Flag> parse_flag(std::string_view stored) {
  return parse_enum(kFlagNames, stored, "quality flag");
}

Result<TargetResultKind> parse_target_result(std::string_view stored) {
  return parse_enum(kTargetResultNames, stored, "cross-compile result");
}

std::vector<std::string> vocabulary_lines(std::string_view file) {
  for (const auto& f : vocabulary_files())
    if (f.name == file) return listed_lines(std::span<const EmbeddedFile>(&f, 1));
  return {};
}

}  // namespace kforge::store
