#pragma once
// Display labels and number formats shared by the terminal table and the HTML report.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/report/compare.hpp"

namespace kforge::report::detail {

// "llm_error" -> "LLM error", "rejected" -> "rejected by kernel facts", ...
std::string label(std::string_view name);
// A round of the verified yield, as every report names it: "generate" for round 0 (the code
// stage's answer), "repair N" after N repair rounds. A label, not a stage's name: the one
// place it is spelled.
std::string round_name(int round);
// 0.4167 -> "41.7%"
std::string percent(double rate);
// +0.2727 -> "+27.3 pts"
std::string points(double diff);
// The p-value with enough digits to read: "1", "0.2500", "3.1e-05".
std::string p_text(double p);
// "$0.0123", "-" when absent.
std::string money(const std::optional<double>& v);
std::string number(const std::optional<double>& v, int decimals);
// 302709 -> "302,709"
std::string thousands(std::int64_t n);
// A flag as words: "mutant_survived" -> "mutant survived".
std::string flag_words(std::string_view flag);

// The speed label's flags over a run's passing samples: "not_timed 2, library_work 1", "-" for
// none.
std::string speed_flags_text(const SpeedSummary& s);

// The union of names over both runs' counts, first-seen order.
std::vector<std::string> union_names(const Counts& a, const Counts& b);
std::int64_t count_of(const Counts& c, const std::string& name);
// The run of a comparison by its tag; nullptr when it is not there.
const RunInfo* run_of(const Comparison& c, const std::string& tag);

}  // namespace kforge::report::detail
