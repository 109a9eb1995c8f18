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
  // The viewer (`kforge serve`): the address it listens on (HOST:PORT; port 0 picks a free
  // one), and the token a browser must present when that address is not a loopback one (the
  // viewer refuses to listen elsewhere without one). Never logged.
  struct Serve {
    std::string listen = "127.0.0.1:8370";
    std::string token;
    int page_size = 50;  // samples per page
  } serve;
};

void read_config(ConfigNode n, ReportConfig& out);

}  // namespace kforge::report
