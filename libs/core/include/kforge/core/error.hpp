#pragma once
// Error: what failed, where, and whether trying again may help.
//
// Errors gain context on the way up: `err.context("importing corpus.json")` prepends, so a
// message reads outermost first: "importing corpus.json: record 17 (line 230): field 'code': ...".

#include <string>
#include <utility>

namespace kforge {

enum class Transient { no, yes };

struct Error {
  // A short, stable machine-readable kind, e.g. "io", "parse", "config", "sqlite", "http",
  // "usage", "not_found", "conflict", "timeout", "schema".
  std::string kind;
  std::string message;
  Transient transient = Transient::no;

  Error() = default;
  Error(std::string k, std::string msg, Transient t = Transient::no)
      : kind(std::move(k)), message(std::move(msg)), transient(t) {}

  bool is_transient() const { return transient == Transient::yes; }

  // Prepends "ctx: " to the message. Returns *this for chaining.
  Error& context(const std::string& ctx) & {
    message = ctx + ": " + message;
    return *this;
  }
  Error&& context(const std::string& ctx) && {
    message = ctx + ": " + message;
    return std::move(*this);
  }

  const std::string& what() const { return message; }
};

}  // namespace kforge
