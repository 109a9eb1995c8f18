#pragma once
// A file compiled into the binary by cmake/Embed.cmake (migrations). The file in the tree is
// the source of truth.

#include <span>
#include <string_view>

namespace kforge {

struct EmbeddedFile {
  std::string_view name;
  std::string_view data;
};

}  // namespace kforge
