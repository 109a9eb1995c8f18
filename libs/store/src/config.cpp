#include "kforge/store/config.hpp"

namespace kforge::store {

void read_config(ConfigNode n, StoreConfig& out) {
  n.get("path", out.path);
  n.get_at_least("busy_timeout_ms", out.busy_timeout_ms, 0);
}

}  // namespace kforge::store
