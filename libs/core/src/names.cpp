#include "kforge/core/names.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace kforge {
namespace {

// Optimal string alignment distance (Damerau-Levenshtein without edits inside a swapped pair):
// an insertion, a deletion, a substitution or a swap of two neighbours each count as one edit,
// so "MODLE" is one edit from "MODEL", as a typist sees it.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({sub, prev[j] + 1, row[j - 1] + 1});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

// How many letters one word has that the other lacks, counted both ways: 0 for a swap, 1 for a
// letter left out or added, 2 for a letter typed for another. Among names equally far by
// edits, the one that holds the very letters typed is the likelier meant.
std::size_t letters_apart(std::string_view a, std::string_view b) {
  std::array<long, 256> count{};
  for (unsigned char c : a) ++count[c];
  for (unsigned char c : b) --count[c];
  std::size_t n = 0;
  for (long c : count) n += static_cast<std::size_t>(c < 0 ? -c : c);
  return n;
}

}  // namespace

std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& known) {
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::vector<std::tuple<std::size_t, std::size_t, std::string>> hits;
  for (const auto& k : known) {
    std::size_t d = distance(word, k);
    if (d <= limit) hits.emplace_back(d, letters_apart(word, k), k);
  }
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
  std::vector<std::string> out;
  for (auto& h : hits) out.push_back(std::move(std::get<2>(h)));
  return out;
}

}  // namespace kforge
