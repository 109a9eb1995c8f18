#include "kforge/report/escape.hpp"

namespace kforge::report {

namespace {

// The code point of a bidirectional embedding, override or isolate control (U+202A-202E,
// U+2066-2069) at s[i] in UTF-8, or 0.
unsigned bidi_control_at(std::string_view s, std::size_t i) {
  if (i + 2 >= s.size() || static_cast<unsigned char>(s[i]) != 0xE2) return 0;
  auto b1 = static_cast<unsigned char>(s[i + 1]);
  auto b2 = static_cast<unsigned char>(s[i + 2]);
  if (b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) return 0x2000u + (b2 - 0x80u);
  if (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9) return 0x2040u + (b2 - 0x80u);
  return 0;
}

std::string escape(std::string_view s, bool mark_bidi) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (unsigned cp = mark_bidi ? bidi_control_at(s, i) : 0; cp != 0) {
      // No quotes in the marker: it stays inert even inside a quoted attribute.
      std::string u = "U+";
      for (int shift = 12; shift >= 0; shift -= 4) u.push_back(kHex[(cp >> shift) & 15]);
      out += "<span class=bidi title=" + u + ">&#x27E6;" + u + "&#x27E7;</span>";
      i += 2;
      continue;
    }
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

}  // namespace

std::string html_escape(std::string_view s) {
  return escape(s, true);
}

std::string html_attr(std::string_view s) {
  return escape(s, false);
}

std::string url_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace kforge::report
