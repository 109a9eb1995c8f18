#include "kforge/report/config.hpp"

#include <string>

namespace kforge::report {

void read_config(ConfigNode n, ReportConfig& out) {
  n.get("confidence", out.confidence);
  n.get_at_least("list_limit", out.list_limit, 0);
  ConfigNode serve = n.child("serve");
  serve.get("listen", out.serve.listen);
  serve.get("token", out.serve.token);
  serve.get_between("page_size", out.serve.page_size, 1, 1000);
  if (out.serve.listen.rfind(':') == std::string::npos)
    serve.invalid("listen", "must be HOST:PORT, e.g. 127.0.0.1:8370");
  if (!out.serve.token.empty() && out.serve.token.size() < 16)
    serve.invalid("token", "must be at least 16 characters (e.g. from `openssl rand -hex 16`)");
  if (!(out.confidence > 0.5 && out.confidence < 1.0))
    n.invalid("confidence", "must be between 0.5 and 1 (exclusive), e.g. 0.95");
}

}  // namespace kforge::report
