#include "kforge/core/printable.hpp"

namespace kforge {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (2 to 4), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = b(0);
  std::size_t n = lead >= 0xC2 && lead <= 0xDF   ? 2
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if (lead == 0xE0 && b(1) < 0xA0) return 0;  // overlong
  if (lead == 0xED && b(1) > 0x9F) return 0;  // surrogate
  if (lead == 0xF0 && b(1) < 0x90) return 0;  // overlong
  if (lead == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
  return n;
}

void hex_byte(std::string& out, const char* prefix, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}

}  // namespace

std::string printable(std::string_view s, Newlines newlines) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c >= 0x20 && c != 0x7F) || c == '\t' || (c == '\n' && newlines == Newlines::keep))
        out.push_back(static_cast<char>(c));
      else
        hex_byte(out, "\\x", c);
      ++i;
      continue;
    }
    std::size_t n = utf8_length(s, i);
    if (n == 0) {
      hex_byte(out, "\\x", c);
      ++i;
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      hex_byte(out, "\\u00", static_cast<unsigned char>(s[i + 1]));  // a C1 control
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

nlohmann::ordered_json printable_strings(const nlohmann::ordered_json& j) {
  if (j.is_string()) return printable(j.get_ref<const std::string&>());
  if (j.is_array()) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& v : j) out.push_back(printable_strings(v));
    return out;
  }
  if (j.is_object()) {
    auto out = nlohmann::ordered_json::object();
    for (const auto& [k, v] : j.items()) out[printable(k)] = printable_strings(v);
    return out;
  }
  return j;
}

}  // namespace kforge
