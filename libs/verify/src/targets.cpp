#include "kforge/verify/targets.hpp"

#include <algorithm>
#include <cctype>

namespace kforge::verify {

std::optional<std::string> target_error(const std::string& text) {
  auto colon = text.find(':');
  if (text.empty() || colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    return "'" + text + "' is not BACKEND:ARCH (e.g. hip:gfx942)";
  std::string backend = text.substr(0, colon), arch = text.substr(colon + 1);
  if (backend != "hip")
    return "'" + text + "': backend '" + backend +
           "' is not one of: hip (Triton's AMD backend; the verifier's own GPUs need no "
           "cross-compile)";
  bool alnum =
      std::all_of(arch.begin(), arch.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
  if (arch.rfind("gfx", 0) != 0 || arch.size() < 6 || !alnum)
    return "'" + text + "': '" + arch + "' is not an AMD architecture (gfxNNN, e.g. gfx942)";
  return std::nullopt;
}

std::optional<std::string> parse_targets(const std::vector<std::string>& items,
                                         const std::string& where, std::vector<std::string>& out) {
  for (const auto& item : items) {
    std::size_t start = 0;
    while (true) {
      auto comma = item.find(',', start);
      std::string t =
          item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      auto first = t.find_first_not_of(' ');
      auto last = t.find_last_not_of(' ');
      t = first == std::string::npos ? std::string() : t.substr(first, last - first + 1);
      if (t.empty()) return where + ": an empty target in '" + item + "'";
      if (auto e = target_error(t)) return where + ": " + *e;
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return std::nullopt;
}

std::vector<TargetResult> cross_compile_results(const nlohmann::json& report) {
  std::vector<TargetResult> out;
  if (!report.is_object() || !report.contains("cross_compile")) return out;
  const auto& cc = report["cross_compile"];
  if (!cc.is_object() || !cc.contains("targets") || !cc["targets"].is_object()) return out;
  for (const auto& [name, t] : cc["targets"].items()) {
    if (!t.is_object()) continue;
    TargetResult r;
    r.target = name;
    r.result = t.value("result", std::string("error"));
    r.error = r.result == "error" ? t.value("error", std::string()) : t.value("reason", "");
    r.kernel = t.value("kernel", std::string());
    out.push_back(std::move(r));
  }
  return out;
}

bool require_targets(VerifyResult& r, const std::vector<std::string>& required) {
  if (required.empty() || r.verdict != Verdict::passed) return false;
  std::string failed;
  for (const auto& t : cross_compile_results(r.report)) {
    if (t.result != "error" ||
        std::find(required.begin(), required.end(), t.target) == required.end())
      continue;
    failed += (failed.empty() ? "" : "; ") + t.target + ": " + t.error;
  }
  if (r.report.is_object() && r.report.contains("cross_compile") &&
      r.report["cross_compile"].is_object())
    r.report["cross_compile"]["required"] = required;
  if (failed.empty()) return false;
  if (std::find(r.flags.begin(), r.flags.end(), kCrossCompileFailed) == r.flags.end())
    r.flags.push_back(kCrossCompileFailed);
  r.detail += "; does not compile for a required target: " + failed;
  return true;
}

nlohmann::json cross_compile_summary(const std::vector<TargetResult>& results) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : results) j[r.target] = r.result;
  return j;
}

}  // namespace kforge::verify
