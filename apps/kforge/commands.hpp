#pragma once
// The kforge CLI: each command registers itself on the top-level CLI::App and returns the
// function that runs it. Exit codes: 0 success, 1 failure, 2 bad usage.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "kforge/app/config.hpp"

namespace kforge::cli {

enum Exit { kOk = 0, kFailure = 1, kUsage = 2 };

struct Globals {
  std::string config_path;
  bool quiet = false;
  bool verbose = false;
};

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_import(CLI::App& root, Globals& g);
Command add_status(CLI::App& root, Globals& g);
Command add_compare(CLI::App& root, Globals& g);
Command add_export(CLI::App& root, Globals& g);
Command add_debug(CLI::App& root, Globals& g);
Command add_retry(CLI::App& root, Globals& g);
Command add_verify(CLI::App& root, Globals& g);
Command add_run(CLI::App& root, Globals& g);
Command add_corpus(CLI::App& root, Globals& g);
Command add_batch(CLI::App& root, Globals& g);
Command add_serve(CLI::App& root, Globals& g);

// A whole number of at least `min` (e.g. --limit): "-3" and "0" are refused with a message
// that says what is expected, never a range with a 300-digit bound.
CLI::Validator whole_number(std::int64_t min, const std::string& what);

// Prints "kforge: error: MESSAGE" to stderr and returns the exit code for the error's kind.
int report(const Error& e);
// Loads the configuration named by the globals (and sets up logging).
Result<app::Config> load(const Globals& g);

}  // namespace kforge::cli

// KF_TRY_OR_REPORT(decl, expr): in a command, binds decl or reports the error and returns its
// exit code.
#define KF_TRY_OR_REPORT(decl, expr)                                    \
  auto KF_CONCAT(kf_tor_, __LINE__) = (expr);                           \
  if (!KF_CONCAT(kf_tor_, __LINE__).ok())                               \
    return ::kforge::cli::report(KF_CONCAT(kf_tor_, __LINE__).error()); \
  decl = std::move(KF_CONCAT(kf_tor_, __LINE__)).value()

// KF_CHECK_OR_REPORT(expr): in a command, reports the error of a Status and returns its exit code.
#define KF_CHECK_OR_REPORT(expr)                                    \
  do {                                                              \
    auto kf_cor = (expr);                                           \
    if (!kf_cor.ok()) return ::kforge::cli::report(kf_cor.error()); \
  } while (0)
