#include "kforge/llm/json.hpp"

#include <algorithm>
#include <vector>

namespace kforge::llm {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unknown";
  }
}

bool has_type(const json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    if (v.is_number_float()) {
      double d = v.get<double>();
      return d == static_cast<double>(static_cast<long long>(d));
    }
    return false;
  }
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "null") return v.is_null();
  return false;
}

std::string validate_at(const json& v, const json& s, const std::string& path) {
  if (!s.is_object()) return "";
  if (auto t = s.find("type"); t != s.end()) {
    bool ok = false;
    std::string expected;
    if (t->is_string()) {
      ok = has_type(v, t->get<std::string>());
      expected = t->get<std::string>();
    } else if (t->is_array()) {
      for (const auto& one : *t) {
        if (!one.is_string()) continue;
        ok = ok || has_type(v, one.get<std::string>());
        expected += (expected.empty() ? "" : " or ") + one.get<std::string>();
      }
    } else {
      ok = true;
    }
    if (!ok) return path + ": expected " + expected + ", got " + type_name(v);
  }
  if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
    if (std::find(e->begin(), e->end(), v) == e->end())
      return path + ": " + v.dump() + " is not one of " + e->dump();
  }
  if (v.is_string()) {
    if (auto m = s.find("minLength"); m != s.end() && m->is_number_integer()) {
      if (v.get_ref<const std::string&>().size() < m->get<std::size_t>())
        return path + ": shorter than " + std::to_string(m->get<std::size_t>()) + " characters";
    }
  }
  if (v.is_object()) {
    if (auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const auto& name : *r) {
        if (name.is_string() && !v.contains(name.get<std::string>()))
          return path + ": missing required property '" + name.get<std::string>() + "'";
      }
    }
    const json* props = nullptr;
    if (auto p = s.find("properties"); p != s.end() && p->is_object()) props = &*p;
    bool closed = false;
    if (auto a = s.find("additionalProperties"); a != s.end() && a->is_boolean())
      closed = !a->get<bool>();
    for (const auto& [k, child] : v.items()) {
      if (props != nullptr) {
        if (auto ps = props->find(k); ps != props->end()) {
          std::string err = validate_at(child, *ps, path + "." + k);
          if (!err.empty()) return err;
          continue;
        }
      }
      if (closed) return path + ": unexpected property '" + k + "'";
    }
  }
  if (v.is_array()) {
    if (auto m = s.find("minItems"); m != s.end() && m->is_number_integer()) {
      if (v.size() < m->get<std::size_t>())
        return path + ": fewer than " + std::to_string(m->get<std::size_t>()) + " items";
    }
    if (auto it = s.find("items"); it != s.end() && it->is_object()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::string err = validate_at(v[i], *it, path + "[" + std::to_string(i) + "]");
        if (!err.empty()) return err;
      }
    }
  }
  return "";
}

struct Candidate {
  std::string where;
  std::string_view text;
};

// 1-based line of offset in text.
int line_of(std::string_view text, std::size_t offset) {
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

std::string_view trim(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

// Fenced blocks: ``` followed by an optional language word, up to the next ```.
void fenced_blocks(std::string_view text, std::vector<Candidate>& out) {
  std::size_t pos = 0;
  while (true) {
    auto open = text.find("```", pos);
    if (open == std::string_view::npos) return;
    auto body = open + 3;
    while (body < text.size() && text[body] != '\n' && text[body] != '{' && text[body] != '[')
      ++body;  // the language tag
    auto close = text.find("```", body);
    if (close == std::string_view::npos) close = text.size();  // an unterminated last fence
    out.push_back({"fenced block at line " + std::to_string(line_of(text, open)),
                   text.substr(body, close - body)});
    if (close == text.size()) return;
    pos = close + 3;
  }
}

// The end (exclusive) of the balanced {...} starting at text[start], or npos.
std::size_t balanced_end(std::string_view text, std::size_t start) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::string excerpt(std::string_view s) {
  std::string e(s.substr(0, 80));
  for (char& c : e)
    if (c == '\n' || c == '\r') c = ' ';
  return s.size() > 80 ? e + "..." : e;
}

}  // namespace

std::string validate_schema(const nlohmann::json& value, const nlohmann::json& schema) {
  return validate_at(value, schema, "$");
}

Result<nlohmann::json> extract_json(std::string_view text,
                                    const std::optional<nlohmann::json>& schema) {
  std::vector<std::string> why;
  constexpr std::size_t kMaxReasons = 4;
  auto consider = [&](const Candidate& c) -> std::optional<json> {
    std::string_view t = trim(c.text);
    json v;
    try {
      v = json::parse(t);
    } catch (const json::parse_error& e) {
      if (why.size() < kMaxReasons) why.push_back(c.where + ": not JSON (" + e.what() + ")");
      return std::nullopt;
    }
    if (v.is_string()) {  // a JSON object encoded once more as a string
      try {
        json inner = json::parse(v.get<std::string>());
        if (inner.is_object()) v = std::move(inner);
      } catch (const json::parse_error&) {
      }
    }
    if (!v.is_object()) {
      if (why.size() < kMaxReasons)
        why.push_back(c.where + ": a JSON " + type_name(v) + ", not an object");
      return std::nullopt;
    }
    if (schema) {
      std::string err = validate_schema(v, *schema);
      if (!err.empty()) {
        if (why.size() < kMaxReasons) why.push_back(c.where + ": " + err);
        return std::nullopt;
      }
    }
    return v;
  };

  std::string_view whole = trim(text);
  if (whole.empty()) return fail("parse", "empty reply: no JSON object");
  if (whole.front() == '{' || whole.front() == '"') {
    if (auto v = consider({"the whole reply", whole})) return std::move(*v);
  }
  std::vector<Candidate> fences;
  fenced_blocks(text, fences);
  for (const auto& c : fences) {
    if (auto v = consider(c)) return std::move(*v);
  }
  // Balanced {...} spans anywhere, outermost first; a span that parsed but failed the schema is
  // searched inside too (the object may be nested in a wrapper).
  constexpr int kMaxSpans = 64;
  int spans = 0;
  for (std::size_t i = text.find('{'); i != std::string_view::npos && spans < kMaxSpans;
       i = text.find('{', i + 1)) {
    std::size_t end = balanced_end(text, i);
    if (end == std::string_view::npos) continue;
    ++spans;
    Candidate c{"object at line " + std::to_string(line_of(text, i)), text.substr(i, end - i)};
    if (auto v = consider(c)) return std::move(*v);
  }
  std::string msg;
  if (fences.empty() && spans == 0 && why.empty()) {
    msg = "no JSON object in the reply (" + std::to_string(text.size()) + " characters: \"" +
          excerpt(whole) + "\")";
  } else {
    msg = "no valid JSON object in the reply";
    if (schema) msg += " (checked against the schema)";
    for (const auto& w : why) msg += "; " + w;
  }
  return fail("parse", msg);
}

}  // namespace kforge::llm
