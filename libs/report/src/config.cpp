#include "kforge/report/config.hpp"

namespace kforge::report {

void read_config(ConfigNode n, ReportConfig& out) {
  n.get("confidence", out.confidence);
  n.get("list_limit", out.list_limit);
  if (!(out.confidence > 0.5 && out.confidence < 1.0))
    n.invalid("confidence", "must be between 0.5 and 1 (exclusive), e.g. 0.95");
  if (out.list_limit < 0) n.invalid("list_limit", "must be >= 0");
}

}  // namespace kforge::report
