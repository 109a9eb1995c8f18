#include "kforge/core/embedded.hpp"

namespace kforge {

std::vector<std::string> listed_lines(std::span<const EmbeddedFile> files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::string_view text = f.data;
    while (!text.empty()) {
      std::size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
      line = line.substr(0, line.find('#'));
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
        line.remove_suffix(1);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      if (!line.empty()) out.emplace_back(line);
    }
  }
  return out;
}

}  // namespace kforge
