#include "kforge/score/config.hpp"

namespace kforge::score {

void read_config(ConfigNode n, ScoreConfig& out) {
  n.get("listen", out.listen);
  n.get("token", out.token);
  n.get_at_least("max_queue", out.max_queue, 1);
  n.get_at_least("max_items", out.max_items, 1);
  n.get_between("max_requests", out.max_requests, 1, 4096);
  n.get_between("share", out.share, 0.0, 1.0);
  n.get("default_deadline_s", out.default_deadline_s);
  n.get("max_deadline_s", out.max_deadline_s);
  n.get("default_tag", out.default_tag);
  n.get("keep_batches_h", out.keep_batches_h);
  n.get("keep_rollouts_h", out.keep_rollouts_h);
  if (!out.listen.empty() && out.listen.rfind(':') == std::string::npos)
    n.invalid("listen", "must be HOST:PORT, e.g. 127.0.0.1:8471 (or \"\" for no endpoint)");
  if (!out.token.empty() && out.token.size() < 16)
    n.invalid("token", "must be at least 16 characters (e.g. from `openssl rand -hex 16`)");
  if (out.default_deadline_s <= 0) n.invalid("default_deadline_s", "must be above 0");
  if (out.max_deadline_s < out.default_deadline_s)
    n.invalid("max_deadline_s", "must be at least default_deadline_s");
  if (out.default_tag.empty()) n.invalid("default_tag", "must not be empty");
  if (out.keep_batches_h < 0) n.invalid("keep_batches_h", "must be 0 (keep) or above");
  if (out.keep_rollouts_h < 0) n.invalid("keep_rollouts_h", "must be 0 (keep) or above");
}

}  // namespace kforge::score
