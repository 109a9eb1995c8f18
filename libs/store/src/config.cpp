#include "kforge/store/config.hpp"

namespace kforge::store {

void read_config(ConfigNode n, StoreConfig& out) {
  n.get("path", out.path);
  n.get("busy_timeout_ms", out.busy_timeout_ms);
  if (out.busy_timeout_ms < 0) n.invalid("busy_timeout_ms", "must be >= 0");
}

}  // namespace kforge::store
