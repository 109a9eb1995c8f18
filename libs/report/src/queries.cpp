#include "queries.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace kforge::report {

std::span<const EmbeddedFile> report_sql();
std::span<const EmbeddedFile> report_templates();

const store::QuerySet& queries() {
  static const store::QuerySet q(report_sql());
  return q;
}

std::string_view template_file(std::string_view name) {
  for (const auto& f : report_templates())
    if (f.name == name) return f.data;
  spdlog::critical("unknown report template '{}'", name);
  std::abort();
}

}  // namespace kforge::report
