#pragma once
// Internal: the start of a text from outside (a body, an error) on one line, for messages.

#include <cstddef>
#include <string>

namespace kforge::llm {

// The first n characters of s with line breaks as spaces, "..." when cut.
inline std::string excerpt(const std::string& s, std::size_t n) {
  std::string e = s.substr(0, n);
  for (char& c : e)
    if (c == '\n' || c == '\r') c = ' ';
  return s.size() > n ? e + "..." : e;
}

}  // namespace kforge::llm
