#pragma once
// Logging set-up. Everything logs through spdlog's default logger; call setup_logging once.
// Under systemd (JOURNAL_STREAM set) lines carry syslog priority prefixes (<3>, <6>...) and no
// timestamps, since journald adds its own.

#include <string>

namespace kforge {

// level: trace|debug|info|warn|error|off. file: empty for stderr.
void setup_logging(const std::string& level, const std::string& file = "");

}  // namespace kforge
