#pragma once
// A file compiled into the binary by cmake/Embed.cmake (migrations). The file in the tree is
// the source of truth.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

struct EmbeddedFile {
  std::string_view name;
  std::string_view data;
};

// The entries of a file of one entry per line ('#' starts a comment; blank lines and the spaces
// around an entry are dropped), in order. The harness reads the same files the same way
// (kforge_harness/listed.py).
std::vector<std::string> listed_lines(std::span<const EmbeddedFile> files);

}  // namespace kforge
