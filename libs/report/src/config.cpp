#include "kforge/report/config.hpp"

namespace kforge::report {

void read_config(ConfigNode n, ReportConfig& out) {
  n.get("confidence", out.confidence);
  n.get_at_least("list_limit", out.list_limit, 0);
  if (!(out.confidence > 0.5 && out.confidence < 1.0))
    n.invalid("confidence", "must be between 0.5 and 1 (exclusive), e.g. 0.95");
}

}  // namespace kforge::report
