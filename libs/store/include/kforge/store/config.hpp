#pragma once
// The `store` section of the configuration.

#include <string>

#include "kforge/core/config.hpp"

namespace kforge::store {

struct StoreConfig {
  std::string path = "kforge.db";  // relative paths are taken from the working directory
  int busy_timeout_ms = 10'000;
};

void read_config(ConfigNode n, StoreConfig& out);

}  // namespace kforge::store
