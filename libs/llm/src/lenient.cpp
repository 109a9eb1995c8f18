// The lenient JSON reader behind extract_answer: JSON as models write it, and Python literals.
// One recursive-descent pass; each leniency it needs is recorded by name (see json.hpp).

#include <cstdint>
#include <string>

#include "kforge/llm/json.hpp"

namespace kforge::llm {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 256;

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Reader {
 public:
  Reader(std::string_view t, std::vector<std::string>& mended) : t_(t), mended_(mended) {}

  std::optional<json> document(std::string& error) {
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") {
      mend("bom");
      i_ = 3;
    }
    json v;
    if (!value(v, 0) || !(ws(), i_ == t_.size() || fail("text after the value"))) {
      error = where() + ": " + err_;
      return std::nullopt;
    }
    return v;
  }

 private:
  void mend(const char* what) { mended_.emplace_back(what); }

  bool fail(std::string why) {
    if (err_.empty()) err_ = std::move(why);
    return false;
  }

  std::string where() const {
    int line = 1;
    int col = 1;
    for (std::size_t k = 0; k < err_at() && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return "line " + std::to_string(line) + " column " + std::to_string(col);
  }
  std::size_t err_at() const { return i_; }

  void ws() {
    while (i_ < t_.size()) {
      char c = t_[i_];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++i_;
      } else {
        break;
      }
    }
  }

  bool value(json& out, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    ws();
    if (i_ >= t_.size()) return fail("unexpected end of text");
    char c = t_[i_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"' || c == '\'' || string_prefix()) {
      std::string s;
      if (!string(s)) return false;
      out = std::move(s);
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    return literal(out);
  }

  // r"...", R'...', u"...": a Python string prefix.
  bool string_prefix() const {
    if (i_ + 1 >= t_.size()) return false;
    char c = t_[i_];
    char q = t_[i_ + 1];
    return (c == 'r' || c == 'R' || c == 'u' || c == 'U') && (q == '"' || q == '\'');
  }

  bool literal(json& out) {
    struct Word {
      std::string_view text;
      json value;
      bool python;
    };
    static const Word kWords[] = {{"true", true, false},    {"false", false, false},
                                  {"null", nullptr, false}, {"True", true, true},
                                  {"False", false, true},   {"None", nullptr, true}};
    for (const auto& w : kWords) {
      if (t_.substr(i_, w.text.size()) == w.text) {
        std::size_t end = i_ + w.text.size();
        if (end < t_.size() &&
            (std::isalnum(static_cast<unsigned char>(t_[end])) != 0 || t_[end] == '_'))
          continue;
        if (w.python) mend("python_literal");
        i_ = end;
        out = w.value;
        return true;
      }
    }
    return fail("unexpected character '" + std::string(1, t_[i_]) + "'");
  }

  bool number(json& out) {
    std::size_t start = i_;
    if (t_[i_] == '-') ++i_;
    auto digits = [&] {
      std::size_t d = i_;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])) != 0) ++i_;
      return i_ > d;
    };
    if (!digits()) return fail("a number without digits");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("a number without digits after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) return fail("a number without an exponent");
    }
    json v = json::parse(t_.substr(start, i_ - start), nullptr, false);
    if (v.is_discarded()) return fail("a malformed number");
    out = std::move(v);
    return true;
  }

  // One string literal, then any adjacent ones (Python joins "a" "b").
  bool string(std::string& out) {
    if (!one_string(out)) return false;
    while (true) {
      std::size_t save = i_;
      ws();
      if (i_ < t_.size() && (t_[i_] == '"' || t_[i_] == '\'' || string_prefix())) {
        mend("python_literal");
        if (!one_string(out)) return false;
      } else {
        i_ = save;
        return true;
      }
    }
  }

  bool one_string(std::string& out) {
    bool raw = false;
    if (t_[i_] != '"' && t_[i_] != '\'') {
      raw = t_[i_] == 'r' || t_[i_] == 'R';
      mend("python_literal");
      ++i_;
    }
    char q = t_[i_];
    bool triple = t_.substr(i_, 3) == std::string(3, q);
    if (q == '\'') mend("python_literal");
    if (triple) mend("triple_quotes");
    i_ += triple ? 3 : 1;
    while (true) {
      if (i_ >= t_.size()) return fail("a string never closed");
      char c = t_[i_];
      if (c == q) {
        if (!triple) {
          ++i_;
          return true;
        }
        if (t_.substr(i_, 3) == std::string(3, q)) {
          i_ += 3;
          // """a"""" : the closing quotes are the last three of a run.
          while (i_ < t_.size() && t_[i_] == q) {
            out += q;
            ++i_;
          }
          return true;
        }
        out += c;
        ++i_;
        continue;
      }
      if (c == '\\') {
        if (!escape(out, q, raw)) return false;
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20 && !triple) mend("raw_newlines");
      out += c;
      ++i_;
    }
  }

  bool escape(std::string& out, char quote, bool raw) {
    if (i_ + 1 >= t_.size()) return fail("a string never closed");
    char e = t_[i_ + 1];
    if (raw) {  // r'...': the backslash stays, and hides the quote from ending the string
      out += '\\';
      out += e;
      i_ += 2;
      return true;
    }
    i_ += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        return true;
      case '\'':
        if (quote != '\'') mend("invalid_escape");
        out += e;
        return true;
      case 'n':
        out += '\n';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case '\n':  // a Python line continuation
        mend("python_literal");
        return true;
      case 'x': {
        int h = i_ + 1 < t_.size() ? hex_value(t_[i_]) : -1;
        int l = i_ + 1 < t_.size() ? hex_value(t_[i_ + 1]) : -1;
        if (h < 0 || l < 0) break;
        mend("python_literal");
        append_utf8(out, static_cast<std::uint32_t>(h * 16 + l));
        i_ += 2;
        return true;
      }
      case 'u': {
        std::uint32_t cp = 0;
        if (!hex4(cp)) break;
        if (cp >= 0xD800 && cp <= 0xDBFF && t_.substr(i_, 2) == "\\u") {
          std::size_t save = i_;
          i_ += 2;
          std::uint32_t lo = 0;
          if (hex4(lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else {
            i_ = save;
          }
        }
        append_utf8(out, cp);
        return true;
      }
      default:
        break;
    }
    // Python keeps an unknown escape as written ("\d" is backslash, d).
    mend("invalid_escape");
    out += '\\';
    out += e;
    return true;
  }

  bool hex4(std::uint32_t& cp) {
    if (i_ + 4 > t_.size()) return false;
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      int v = hex_value(t_[i_ + static_cast<std::size_t>(k)]);
      if (v < 0) return false;
      cp = cp * 16 + static_cast<std::uint32_t>(v);
    }
    i_ += 4;
    return true;
  }

  bool object(json& out, int depth) {
    ++i_;  // {
    out = json::object();
    while (true) {
      ws();
      if (i_ >= t_.size()) return fail("an object never closed");
      if (t_[i_] == '}') {
        ++i_;
        return true;
      }
      if (t_[i_] != '"' && t_[i_] != '\'' && !string_prefix())
        return fail("expected a quoted key or '}'");
      std::string key;
      if (!string(key)) return false;
      ws();
      if (i_ >= t_.size() || t_[i_] != ':') return fail("expected ':' after key \"" + key + "\"");
      ++i_;
      json v;
      if (!value(v, depth + 1)) return false;
      out[key] = std::move(v);
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        ws();
        if (i_ < t_.size() && t_[i_] == '}') {
          mend("trailing_comma");
          ++i_;
          return true;
        }
        continue;
      }
      if (i_ < t_.size() && t_[i_] == '}') {
        ++i_;
        return true;
      }
      return fail("expected ',' or '}' after the value of \"" + key + "\"");
    }
  }

  bool array(json& out, int depth) {
    ++i_;  // [
    out = json::array();
    while (true) {
      ws();
      if (i_ >= t_.size()) return fail("an array never closed");
      if (t_[i_] == ']') {
        ++i_;
        return true;
      }
      json v;
      if (!value(v, depth + 1)) return false;
      out.push_back(std::move(v));
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        ws();
        if (i_ < t_.size() && t_[i_] == ']') {
          mend("trailing_comma");
          ++i_;
          return true;
        }
        continue;
      }
      if (i_ < t_.size() && t_[i_] == ']') {
        ++i_;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
  std::vector<std::string>& mended_;
  std::string err_;
};

}  // namespace

std::optional<nlohmann::json> parse_lenient(std::string_view text, std::vector<std::string>& mended,
                                            std::string& error) {
  std::vector<std::string> local;
  Reader r(text, local);
  auto v = r.document(error);
  if (v) mended.insert(mended.end(), local.begin(), local.end());
  return v;
}

}  // namespace kforge::llm
