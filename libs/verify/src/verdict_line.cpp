#include "kforge/verify/verdict_line.hpp"

#include <array>
#include <string>

namespace kforge::verify {

namespace {

// The fields of a line, in the order they are written.
constexpr std::array<std::string_view, 10> kFields = {
    "index",  "key",    "verdict",     "detail",      "flags",
    "report", "script", "stderr_tail", "duration_ms", "device"};

Unexpected bad(const std::string& what) {
  return fail("parse", "verdict line: " + what);
}

Result<std::string> text_field(const nlohmann::json& j, const char* name) {
  const auto& v = j.at(name);
  if (!v.is_string()) return bad("field \"" + std::string(name) + "\" is not a string");
  return v.get<std::string>();
}

Result<std::int64_t> int_field(const nlohmann::json& j, const char* name) {
  const auto& v = j.at(name);
  if (!v.is_number_integer()) return bad("field \"" + std::string(name) + "\" is not an integer");
  return v.get<std::int64_t>();
}

}  // namespace

nlohmann::ordered_json to_json(const VerdictLine& line) {
  const VerifyResult& r = line.result;
  return {{"index", line.index},
          {"key", r.key},
          {"verdict", to_string(r.verdict)},
          {"detail", r.detail},
          {"flags", r.flags},
          {"report", r.report},
          {"script", r.script},
          {"stderr_tail", r.stderr_tail},
          {"duration_ms", r.duration_ms},
          {"device", r.device}};
}

Result<VerdictLine> verdict_line_from_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return bad("not a JSON object");
  for (const auto& [name, value] : j.items()) {
    (void)value;
    bool known = false;
    for (auto f : kFields) known = known || f == name;
    if (!known) return bad("unknown field \"" + name + "\"");
  }
  for (auto f : kFields)
    if (!j.contains(std::string(f))) return bad("field \"" + std::string(f) + "\" is missing");
  VerdictLine out;
  VerifyResult& r = out.result;
  KF_TRY(out.index, int_field(j, "index"));
  KF_TRY(r.key, text_field(j, "key"));
  KF_TRY(std::string verdict, text_field(j, "verdict"));
  auto v = value_of(store::kVerdictNames, verdict);
  if (!v) return bad("field \"verdict\": '" + verdict + "' is not a verdict");
  r.verdict = *v;
  KF_TRY(r.detail, text_field(j, "detail"));
  if (!j["flags"].is_array()) return bad("field \"flags\" is not a list");
  for (const auto& f : j["flags"]) {
    if (!f.is_string()) return bad("field \"flags\" holds something that is not a string");
    r.flags.push_back(f.get<std::string>());
  }
  r.report = std::move(j["report"]);
  // The harness's part of it, parsed as the pool parsed it (report_fields.txt).
  auto harness = parse_stored_report(r.report);
  if (!harness) return bad("field \"report\": " + harness.error().message);
  r.harness = std::move(*harness);
  KF_TRY(r.script, text_field(j, "script"));
  KF_TRY(r.stderr_tail, text_field(j, "stderr_tail"));
  KF_TRY(r.duration_ms, int_field(j, "duration_ms"));
  KF_TRY(r.device, text_field(j, "device"));
  return out;
}

}  // namespace kforge::verify
