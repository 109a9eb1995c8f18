#include "kforge/verify/targets.hpp"

#include <algorithm>
#include <cctype>

namespace kforge::verify {

namespace {

// The AMD architectures Triton's AMD backend compiles for (CDNA: MI100 gfx908, MI200 gfx90a,
// MI300 gfx940/gfx941/gfx942, MI350 gfx950; RDNA 2 to 4), as LLVM's AMDGPU target names them.
// A name outside this list (gfx9999) is not an architecture Triton can target.
const std::vector<std::string>& amd_architectures() {
  static const std::vector<std::string> archs = {
      "gfx908",  "gfx90a",  "gfx940",  "gfx941",  "gfx942",  "gfx950",  "gfx1030",
      "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"};
  return archs;
}

std::string accepted_forms() {
  std::string out;
  for (const auto& a : amd_architectures()) out += (out.empty() ? "hip:" : ", hip:") + a;
  return out;
}

}  // namespace

std::optional<std::string> target_error(const std::string& text) {
  auto colon = text.find(':');
  if (text.empty() || colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    return "'" + text + "' is not BACKEND:ARCH (e.g. hip:gfx942); accepted: " + accepted_forms();
  std::string backend = text.substr(0, colon), arch = text.substr(colon + 1);
  if (backend != "hip")
    return "'" + text + "': backend '" + backend +
           "' is not one of: hip (Triton's AMD backend; the verifier's own GPUs need no "
           "cross-compile); accepted: " +
           accepted_forms();
  const auto& archs = amd_architectures();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end())
    return "'" + text + "': '" + arch +
           "' is not an AMD architecture Triton compiles for; accepted: " + accepted_forms();
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

std::vector<TargetResult> cross_compile_results(const VerifyResult& r) {
  return r.harness && r.harness->cross_compile ? *r.harness->cross_compile
                                               : std::vector<TargetResult>();
}

std::vector<TargetResult> cross_compile_results(const nlohmann::json& stored_report) {
  auto h = parse_stored_report(stored_report);
  return h.ok() && *h && (*h)->cross_compile ? *(*h)->cross_compile : std::vector<TargetResult>();
}

bool require_targets(VerifyResult& r, const std::vector<std::string>& required) {
  if (required.empty() || r.verdict != Verdict::passed) return false;
  std::string failed;
  for (const auto& t : cross_compile_results(r)) {
    if (t.result != store::TargetResultKind::error ||
        std::find(required.begin(), required.end(), t.target) == required.end())
      continue;
    failed += (failed.empty() ? "" : "; ") + t.target + ": " + t.error;
  }
  if (r.harness && r.harness->cross_compile && r.report.is_object())
    r.report["cross_compile"]["required"] = required;  // the pool's field (report_fields.txt)
  if (failed.empty()) return false;
  if (std::find(r.flags.begin(), r.flags.end(), kCrossCompileFailed) == r.flags.end())
    r.flags.emplace_back(kCrossCompileFailed);
  r.detail += "; does not compile for a required target: " + failed;
  return true;
}

nlohmann::json cross_compile_summary(const std::vector<TargetResult>& results) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : results) j[r.target] = to_string(r.result);
  return j;
}

}  // namespace kforge::verify
