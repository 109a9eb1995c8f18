#include "kforge/llm/errors.hpp"

#include <array>
#include <utility>

namespace kforge::llm {
namespace {

constexpr std::array<std::pair<ErrorKind, const char*>, 17> kNames = {{
    {ErrorKind::http, "http"},
    {ErrorKind::auth, "auth"},
    {ErrorKind::not_found, "not_found"},
    {ErrorKind::halted, "halted"},
    {ErrorKind::too_large, "too_large"},
    {ErrorKind::rate_limit, "rate_limit"},
    {ErrorKind::timeout, "timeout"},
    {ErrorKind::connect, "connect"},
    {ErrorKind::deadline, "deadline"},
    {ErrorKind::protocol, "protocol"},
    {ErrorKind::truncated, "truncated"},
    {ErrorKind::parse, "parse"},
    {ErrorKind::cancelled, "cancelled"},
    {ErrorKind::sqlite, "sqlite"},
    {ErrorKind::usage, "usage"},
    {ErrorKind::config, "config"},
    {ErrorKind::other, "other"},
}};

}  // namespace

const char* to_string(ErrorKind k) {
  for (const auto& [kind, name] : kNames)
    if (kind == k) return name;
  return "other";
}

ErrorKind kind_of(const std::string& stored) {
  if (stored == "length") return ErrorKind::truncated;
  for (const auto& [kind, name] : kNames)
    if (stored == name) return kind;
  return ErrorKind::other;
}

ErrorKind kind_of(const Error& e) {
  return kind_of(e.kind);
}

Error llm_error(ErrorKind k, std::string message, Transient t) {
  return Error(to_string(k), std::move(message), t);
}

bool is_run_level(ErrorKind k) {
  return k == ErrorKind::auth || k == ErrorKind::not_found || k == ErrorKind::halted ||
         k == ErrorKind::config;
}

}  // namespace kforge::llm
