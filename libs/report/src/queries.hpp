#pragma once
// This library's named SQL blocks (sql/*.sql) and templates (templates/*), compiled in.

#include <string_view>

#include "kforge/store/db.hpp"

namespace kforge::report {

const store::QuerySet& queries();
// A file from templates/ by name; aborts on an unknown name (a programming error).
std::string_view template_file(std::string_view name);

}  // namespace kforge::report
