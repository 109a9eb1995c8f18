#include "kforge/score/request.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kforge/core/sha256.hpp"
#include "kforge/score/reward.hpp"

namespace kforge::score {

namespace fs = std::filesystem;

namespace {

Status read_item(const nlohmann::json& j, std::size_t i, Item& out) {
  const std::string at = "items[" + std::to_string(i) + "]";
  if (!j.is_object()) return fail("usage", at + ": must be an object");
  for (const auto& [k, v] : j.items()) {
    if (k == "prompt") {
      if (v.is_string()) {
        out.prompt = nlohmann::json::array({{{"role", "user"}, {"content", v}}});
        continue;
      }
      bool ok = v.is_array();
      for (const auto& m : ok ? v : nlohmann::json::array())
        ok = ok && m.is_object() && m.contains("role") && m["role"].is_string() &&
             m.contains("content") && m["content"].is_string();
      if (!ok) return fail("usage", at + ".prompt: must be a string or a list of {role, content}");
      out.prompt = v;
      continue;
    }
    std::string* field = k == "id"               ? &out.id
                         : k == "code"           ? &out.code
                         : k == "key"            ? &out.key
                         : k == "kernel_wrapper" ? &out.kernel_wrapper
                         : k == "unitest_code"   ? &out.unitest_code
                                                 : nullptr;
    if (field == nullptr)
      return fail("usage", at + "." + k +
                               ": not a field of an item (id, code, key, kernel_wrapper, "
                               "unitest_code, prompt)");
    if (k == "id" && v.is_number_integer()) {
      out.id = std::to_string(v.get<std::int64_t>());
      continue;
    }
    if (!v.is_string()) return fail("usage", at + "." + k + ": must be a string");
    *field = v.get<std::string>();
  }
  if (out.id.empty()) out.id = std::to_string(i);
  if (out.code.empty() && out.key.empty())
    return fail("usage", at + ": needs code, or key naming an imported sample");
  if (out.kernel_wrapper.empty()) return fail("usage", at + ".kernel_wrapper: missing or empty");
  if (out.unitest_code.empty()) return fail("usage", at + ".unitest_code: missing or empty");
  return {};
}

Status read_checks(const nlohmann::json& j, store::RunParams& out) {
  if (!j.is_object()) return fail("usage", "checks: must be an object");
  for (const auto& [k, v] : j.items()) {
    if (k == "require_speedup") {
      if (!v.is_number() || v.get<double>() < 0)
        return fail("usage", "checks.require_speedup: must be a number, 0 or above");
      out.require_speedup = v.get<double>();
    } else if (k == "require_targets") {
      if (!v.is_array()) return fail("usage", "checks.require_targets: must be a list of targets");
      for (const auto& t : v) {
        if (!t.is_string()) return fail("usage", "checks.require_targets: must be strings");
        out.require_targets.push_back(t.get<std::string>());
      }
      std::sort(out.require_targets.begin(), out.require_targets.end());
    } else {
      return fail("usage", "checks." + k + ": not a check (require_speedup, require_targets)");
    }
  }
  return {};
}

}  // namespace

Result<Request> parse_request(const nlohmann::json& body, const ScoreConfig& config) {
  if (!body.is_object()) return fail("usage", "the body must be a JSON object with items");
  Request r;
  r.deadline_s = config.default_deadline_s;
  r.tag = config.default_tag;
  bool items = false;
  for (const auto& [k, v] : body.items()) {
    if (k == "items") {
      if (!v.is_array() || v.empty()) return fail("usage", "items: must be a non-empty list");
      if (v.size() > static_cast<std::size_t>(config.max_items))
        return fail("usage", "items: " + std::to_string(v.size()) +
                                 " items, above score.max_items (" +
                                 std::to_string(config.max_items) + ")");
      for (std::size_t i = 0; i < v.size(); ++i) {
        Item it;
        KF_CHECK(read_item(v[i], i, it));
        r.items.push_back(std::move(it));
      }
      items = true;
    } else if (k == "deadline_s") {
      if (!v.is_number() || v.get<double>() <= 0)
        return fail("usage", "deadline_s: must be a number above 0");
      r.deadline_s = std::min(v.get<double>(), config.max_deadline_s);
    } else if (k == "checks") {
      KF_CHECK(read_checks(v, r.checks));
    } else if (k == "reward") {
      if (!v.is_string()) return fail("usage", "reward: must be a preset's name");
      r.reward = v.get<std::string>();
    } else if (k == "reward_params") {
      r.reward_params = v;
    } else if (k == "tag") {
      if (!v.is_string() || v.get<std::string>().empty())
        return fail("usage", "tag: must be a non-empty string");
      r.tag = v.get<std::string>();
    } else if (k == "wait") {
      if (!v.is_boolean()) return fail("usage", "wait: must be true or false");
      r.wait = v.get<bool>();
    } else {
      return fail("usage", k + ": not a field of a request (items, deadline_s, checks, reward, "
                               "reward_params, tag, wait)");
    }
  }
  if (!items) return fail("usage", "items: missing");
  KF_CHECK(check_preset(r.reward, r.reward_params));
  std::set<std::string> ids;
  for (const auto& it : r.items)
    if (!ids.insert(it.id).second) return fail("usage", "items: the id '" + it.id + "' repeats");
  return r;
}

std::string content_key(const Item& item, const store::RunParams& checks, const Fingerprint& f) {
  const nlohmann::json j = {{"code", item.code},
                            {"key", item.key},
                            {"kernel_wrapper", item.kernel_wrapper},
                            {"unitest_code", item.unitest_code},
                            {"checks", store::to_json(checks)},
                            {"harness", f.harness},
                            {"gpu", f.gpu}};
  return sha256_hex(j.dump());
}

std::string gpu_model() {
  std::set<std::string> models;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(d.path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Model:", 0) == 0) {
        auto s = line.find_first_not_of(" \t", 6);
        if (s != std::string::npos) models.insert(line.substr(s));
      }
  }
  if (models.empty()) return "cpu";
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : ", ") + m;
  return out;
}

std::string harness_fingerprint(const std::string& harness_script) {
  std::vector<fs::path> files;
  std::error_code ec;
  const fs::path dir = fs::path(harness_script).parent_path();
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() &&
        (it->path().extension() == ".py" || it->path().extension() == ".txt"))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    all += fs::relative(f, dir, ec).string() + "\n" + sha256_hex(ss.str()) + "\n";
  }
  return sha256_hex(all);
}

}  // namespace kforge::score
