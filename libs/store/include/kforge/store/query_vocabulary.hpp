#pragma once
// SQL spells no verifier name either (vocabulary.hpp has the C++ tables). A named query
// (QuerySet, db.hpp) writes a name as a named parameter: `:verdict_passed`, `:flag_out_of_bounds`,
// `:speed_flag_not_timed`, `:target_result_ok`, `:stage_kind_code`; QuerySet puts the name from
// the table (speed_flags.txt's for speed flags) in its place, as a quoted literal, when it loads
// the file, and refuses to load (aborts: a programming error, caught by any test that uses the
// set) on a name that is not in its table. The planner sees a literal, as before; and no binding
// can collide with the query's own ?N (SQLite numbers a named parameter after the highest ?N it
// has seen, so `:x` written before `?1` would share slot 1). scripts/check-sql-vocabulary fails
// CI on a name written as a literal in libs/*/sql/*.sql.

#include <string>
#include <string_view>

#include "kforge/core/result.hpp"

namespace kforge::store {

// `sql` with each vocabulary token replaced by its name, quoted; tokens inside a string literal
// or a comment are left alone, as are named parameters of no vocabulary (":other"). Errors (kind
// "sql"): ":flag_out_of_bound: 'out_of_bound' is not a quality flag (no_kernel_launch, ...)".
Result<std::string> vocabulary_sql(std::string_view sql);

}  // namespace kforge::store
