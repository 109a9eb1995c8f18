#include "kforge/llm/json.hpp"

#include <algorithm>
#include <cctype>
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

// The end (exclusive) of the balanced {...} starting at text[start], or npos. Strings in double
// or single quotes, triple-quoted too, are skipped (a Python dict's code holds braces).
std::size_t balanced_end(std::string_view text, std::size_t start) {
  int depth = 0;
  for (std::size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      bool triple = text.substr(i, 3) == std::string(3, c);
      std::size_t j = i + (triple ? 3 : 1);
      for (; j < text.size(); ++j) {
        if (text[j] == '\\') {
          ++j;
        } else if (text[j] == c && (!triple || text.substr(j, 3) == std::string(3, c))) {
          break;
        } else if (!triple && c == '\'' && text[j] == '\n') {
          break;  // an apostrophe in prose, not a string
        }
      }
      if (j >= text.size()) return std::string_view::npos;
      if (!triple && c == '\'' && text[j] == '\n') continue;
      i = j + (triple ? 2 : 0);
      continue;
    }
    if (c == '{') {
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

// Drops the keys a closed schema does not allow, and unwraps string values that are one fenced
// code block, recording both.
void normalise(json& v, const json* schema, std::vector<std::string>& mended) {
  if (v.is_string()) {
    std::string_view s = trim(v.get_ref<const std::string&>());
    if (s.size() > 6 && s.substr(0, 3) == "```" && s.substr(s.size() - 3) == "```") {
      auto nl = s.find('\n');
      if (nl != std::string_view::npos && nl < s.size() - 3) {
        std::string_view body = s.substr(nl + 1, s.size() - 3 - (nl + 1));
        if (body.find("```") == std::string_view::npos) {
          while (!body.empty() && (body.back() == '\n' || body.back() == '\r'))
            body.remove_suffix(1);
          v = std::string(body) + "\n";
          mended.emplace_back("fenced_value");
        }
      }
    }
    return;
  }
  const json* props = nullptr;
  bool closed = false;
  if (schema != nullptr && schema->is_object()) {
    if (auto p = schema->find("properties"); p != schema->end() && p->is_object()) props = &*p;
    if (auto a = schema->find("additionalProperties"); a != schema->end() && a->is_boolean())
      closed = !a->get<bool>();
  }
  if (v.is_object()) {
    std::vector<std::string> extra;
    for (auto& [k, child] : v.items()) {
      const json* cs = nullptr;
      if (props != nullptr) {
        if (auto it = props->find(k); it != props->end()) cs = &*it;
      }
      if (cs == nullptr && closed) {
        extra.push_back(k);
        continue;
      }
      normalise(child, cs, mended);
    }
    for (const auto& k : extra) v.erase(k);
    if (!extra.empty()) mended.emplace_back("extra_keys");
  } else if (v.is_array()) {
    const json* items = nullptr;
    if (schema != nullptr && schema->is_object()) {
      if (auto it = schema->find("items"); it != schema->end() && it->is_object()) items = &*it;
    }
    for (auto& child : v) normalise(child, items, mended);
  }
}

// A fenced code block by lines: the info word after ``` and the line above the fence.
struct Block {
  std::string info;   // the fence's info string, trimmed
  std::string above;  // the nearest non-empty line above the fence
  std::string body;
};

std::vector<Block> line_blocks(std::string_view text) {
  std::vector<Block> out;
  std::vector<std::string_view> lines;
  for (std::size_t p = 0; p <= text.size();) {
    auto nl = text.find('\n', p);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(p, nl - p));
    p = nl + 1;
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = trim(lines[i]);
    if (l.substr(0, 3) != "```") continue;
    Block b;
    b.info = std::string(trim(l.substr(3)));
    for (std::size_t k = i; k-- > 0;) {
      if (!trim(lines[k]).empty()) {
        b.above = std::string(trim(lines[k]));
        break;
      }
    }
    std::size_t j = i + 1;
    for (; j < lines.size() && trim(lines[j]) != "```"; ++j) {
      b.body += lines[j];
      b.body += '\n';
    }
    if (j >= lines.size()) break;  // never closed
    out.push_back(std::move(b));
    i = j;
  }
  return out;
}

// A label line names the field alone, whatever its markdown: "## kernel_wrapper",
// "**unitest_code**:", "`kernel_wrapper`", "- kernel_wrapper:". Prose that mentions a field
// ("the test below calls kernel_wrapper") is not a label.
bool is_label(std::string_view line, const std::string& name) {
  auto decoration = [](char c) {
    return c == '#' || c == '*' || c == '`' || c == ':' || c == ' ' || c == '\t' || c == '-' ||
           c == '=' || c == '"' || c == '\'';
  };
  while (!line.empty() && decoration(line.front())) line.remove_prefix(1);
  while (!line.empty() && decoration(line.back())) line.remove_suffix(1);
  return line == name;
}

// The schema's required string fields, each from the last fenced block labelled with its name.
std::optional<json> labelled_object(std::string_view text, const json& schema) {
  if (!schema.is_object() || !schema.contains("required") || !schema["required"].is_array())
    return std::nullopt;
  const json& props = schema.value("properties", json::object());
  std::vector<std::string> names;
  for (const auto& n : schema["required"]) {
    if (!n.is_string()) return std::nullopt;
    auto p = props.find(n.get<std::string>());
    if (p == props.end() || p->value("type", "") != "string") return std::nullopt;
    names.push_back(n.get<std::string>());
  }
  if (names.empty()) return std::nullopt;
  std::vector<Block> blocks = line_blocks(text);
  json out = json::object();
  for (const auto& b : blocks) {
    std::vector<const std::string*> hits;
    for (const auto& n : names) {
      if (is_label(b.info, n) || is_label(b.above, n)) hits.push_back(&n);
    }
    if (hits.size() == 1) out[*hits[0]] = b.body;  // a later block for the same field wins
  }
  if (out.size() != names.size()) return std::nullopt;
  return out;
}

}  // namespace

std::string validate_schema(const nlohmann::json& value, const nlohmann::json& schema) {
  return validate_at(value, schema, "$");
}

SplitReply split_reasoning(std::string_view text) {
  SplitReply out;
  auto add_reasoning = [&](std::string_view r) {
    r = trim(r);
    if (r.empty()) return;
    if (!out.reasoning.empty()) out.reasoning += "\n\n";
    out.reasoning += r;
  };
  static const std::pair<std::string_view, std::string_view> kTags[] = {
      {"<think>", "</think>"}, {"<thinking>", "</thinking>"}, {"<reasoning>", "</reasoning>"}};
  std::string rest(text);
  // Reasoning opened by the server's template, so only its end is in the text.
  for (const auto& [open, close] : kTags) {
    auto c = rest.find(close);
    auto o = rest.find(open);
    if (c != std::string::npos && (o == std::string::npos || c < o)) {
      add_reasoning(std::string_view(rest).substr(0, c));
      rest.erase(0, c + close.size());
    }
  }
  for (const auto& [open, close] : kTags) {
    while (true) {
      auto o = rest.find(open);
      if (o == std::string::npos) break;
      auto c = rest.find(close, o + open.size());
      if (c == std::string::npos) {  // cut while reasoning
        add_reasoning(std::string_view(rest).substr(o + open.size()));
        rest.erase(o);
        out.cut_in_reasoning = true;
        break;
      }
      add_reasoning(std::string_view(rest).substr(o + open.size(), c - o - open.size()));
      rest.erase(o, c + close.size() - o);
    }
  }
  out.answer = std::move(rest);
  return out;
}

Result<Extraction> extract_answer(std::string_view reply,
                                  const std::optional<nlohmann::json>& schema) {
  SplitReply split = split_reasoning(reply);
  std::string_view text = split.answer;
  std::vector<std::string> why;
  constexpr std::size_t kMaxReasons = 4;
  auto consider = [&](const Candidate& c) -> std::optional<Extraction> {
    std::string_view t = trim(c.text);
    std::vector<std::string> mended;
    json v = json::parse(t, nullptr, false);
    if (v.is_discarded()) {
      std::string err;
      auto lenient = parse_lenient(t, mended, err);
      if (!lenient) {
        if (why.size() < kMaxReasons) why.push_back(c.where + ": not JSON (" + err + ")");
        return std::nullopt;
      }
      v = std::move(*lenient);
    }
    if (v.is_string()) {  // a JSON object encoded once more as a string
      json inner = json::parse(v.get<std::string>(), nullptr, false);
      if (!inner.is_discarded() && inner.is_object()) v = std::move(inner);
    }
    if (!v.is_object()) {
      if (why.size() < kMaxReasons)
        why.push_back(c.where + ": a JSON " + type_name(v) + ", not an object");
      return std::nullopt;
    }
    normalise(v, schema ? &*schema : nullptr, mended);
    if (schema) {
      std::string err = validate_schema(v, *schema);
      if (!err.empty()) {
        if (why.size() < kMaxReasons) why.push_back(c.where + ": " + err);
        return std::nullopt;
      }
    }
    std::sort(mended.begin(), mended.end());
    mended.erase(std::unique(mended.begin(), mended.end()), mended.end());
    return Extraction{std::move(v), std::move(mended), c.where};
  };

  std::string_view whole = trim(text);
  if (whole.empty()) {
    if (!split.reasoning.empty())
      return fail("parse", std::string("no answer after the reasoning (") +
                               (split.cut_in_reasoning ? "a <think> block never closed, " : "") +
                               std::to_string(split.reasoning.size()) +
                               " characters of reasoning, which is never searched)");
    return fail("parse", "empty reply: no JSON object");
  }
  auto bom = whole.substr(0, 3) == "\xEF\xBB\xBF";
  char first = whole[bom ? 3 : 0];
  if (first == '{' || first == '"') {
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
  if (schema) {
    if (auto obj = labelled_object(text, *schema)) {
      std::string dumped = obj->dump();
      if (auto v = consider({"labelled fenced blocks", dumped})) {
        v->mended.push_back("labelled_blocks");
        std::sort(v->mended.begin(), v->mended.end());
        return std::move(*v);
      }
    }
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

Result<nlohmann::json> extract_json(std::string_view text,
                                    const std::optional<nlohmann::json>& schema) {
  KF_TRY(Extraction e, extract_answer(text, schema));
  return std::move(e.value);
}

}  // namespace kforge::llm
