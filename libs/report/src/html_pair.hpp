#pragma once
// The HTML of one pair of a comparison, as kforge compare --html renders it (html.cpp): the
// banner, the runs' cards, the charts, counts, causes, cost, repair rounds and flips. The
// viewer's A/B page shows the same section. Private to the report library.

#include <string>

#include "kforge/report/compare.hpp"

namespace kforge::report::detail {

// Every text escaped; classes from report.css; inline SVG, no script and no style attribute.
std::string pair_section(const Comparison& c, const PairComparison& p);

}  // namespace kforge::report::detail
