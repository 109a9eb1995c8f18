#include "kforge/store/vocabulary.hpp"

#include <algorithm>
#include <span>

#include "kforge/core/embedded.hpp"
#include "kforge/store/query_vocabulary.hpp"
#include "kforge/store/states.hpp"

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

namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

template <class E, std::size_t N>
std::vector<std::string> names_in(const EnumName<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

// The name a vocabulary token stands for (":verdict_passed": "passed"), an error naming the token
// when its name is not in its table, or nullopt for a parameter of no vocabulary (":other").
Result<std::optional<std::string>> vocabulary_word(std::string_view token) {
  struct Vocabulary {
    std::string_view prefix, what;
    std::vector<std::string> names;
  };
  static const std::vector<Vocabulary> vocabularies = {
      {":verdict_", "verdict", names_in(kVerdictNames)},
      {":flag_", "quality flag", names_in(kFlagNames)},
      {":speed_flag_", "speed flag", vocabulary_lines("speed_flags.txt")},
      {":target_result_", "cross-compile result", names_in(kTargetResultNames)},
      {":stage_kind_", "stage kind", names_in(kStageKindNames)}};
  for (const auto& v : vocabularies) {
    if (token.substr(0, v.prefix.size()) != v.prefix) continue;
    std::string word(token.substr(v.prefix.size()));
    if (std::find(v.names.begin(), v.names.end(), word) != v.names.end())
      return std::optional<std::string>(word);
    std::string known;
    for (const auto& n : v.names) known += (known.empty() ? "" : ", ") + n;
    return fail("sql", std::string(token) + ": '" + word + "' is not a " + std::string(v.what) +
                           " (" + known + ")");
  }
  return std::optional<std::string>();
}

}  // namespace

Result<std::string> vocabulary_sql(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  std::size_t i = 0;
  while (i < sql.size()) {
    char c = sql[i];
    if (c == '\'' || c == '"') {  // a string literal or a quoted name: copied as it is
      std::size_t end = sql.find(c, i + 1);
      end = end == std::string_view::npos ? sql.size() : end + 1;
      out.append(sql.substr(i, end - i));
      i = end;
    } else if (c == '-' && i + 1 < sql.size() &&
               sql[i + 1] == '-') {  // a comment, to its line's end
      std::size_t end = std::min(sql.find('\n', i), sql.size());
      out.append(sql.substr(i, end - i));
      i = end;
    } else if (c == ':' && i + 1 < sql.size() && identifier_char(sql[i + 1])) {
      std::size_t end = i + 1;
      while (end < sql.size() && identifier_char(sql[end])) ++end;
      std::string_view token = sql.substr(i, end - i);
      KF_TRY(std::optional<std::string> w, vocabulary_word(token));
      if (w)
        out.append("'").append(*w).append("'");
      else
        out.append(token);
      i = end;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

}  // namespace kforge::store
