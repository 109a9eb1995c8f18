#pragma once
// Internal to kforge_dedup: the tokenizer signature.cpp and ops.cpp share, and the operations of
// one kernel (ops.cpp).

#include <string>
#include <string_view>
#include <vector>

namespace kforge::dedup::detail {

// Python tokens without comments and whitespace. Literals become "S" / "N" unless keep_literals.
void tokenize(std::string_view code, bool keep_literals, std::vector<std::string_view>& out);

// Appends the operations one kernel (its source, from `def` to its last line) computes on values
// (signature.hpp, Signature::ops): a small data-flow pass over its statements tells value
// arithmetic (what flows into a stored value, an atomic's value, a returned value) from index
// arithmetic (what flows only into pointers, masks, offsets, loop bounds and conditions).
void value_ops(std::string_view kernel, std::vector<std::string>& ops);

}  // namespace kforge::dedup::detail
