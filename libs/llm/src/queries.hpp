#pragma once
// The llm library's named SQL (sql/*.sql: llm_calls and the batch tables), parsed once.

#include "kforge/store/db.hpp"

namespace kforge::llm {

const store::QuerySet& llm_queries();

}  // namespace kforge::llm
