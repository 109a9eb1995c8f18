#include "kforge/core/names.hpp"

#include <algorithm>
#include <utility>

namespace kforge {
namespace {

// Levenshtein distance, one row at a time.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      std::size_t sub = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({sub, up + 1, row[j - 1] + 1});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& known) {
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> hits;
  for (const auto& k : known) {
    std::size_t d = distance(word, k);
    if (d <= limit) hits.emplace_back(d, k);
  }
  std::sort(hits.begin(), hits.end());
  std::vector<std::string> out;
  for (auto& h : hits) out.push_back(std::move(h.second));
  return out;
}

}  // namespace kforge
