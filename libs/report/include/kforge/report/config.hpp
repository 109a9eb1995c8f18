#pragma once
// The `report` section of the configuration: how comparisons are summarised.

#include "kforge/core/config.hpp"

namespace kforge::report {

struct ReportConfig {
  // Confidence level of every interval; a paired difference is called significant when the
  // McNemar p is below 1 - confidence.
  double confidence = 0.95;
  // How many flipped samples the terminal table lists each way (--json and --html list all).
  int list_limit = 20;
};

void read_config(ConfigNode n, ReportConfig& out);

}  // namespace kforge::report
