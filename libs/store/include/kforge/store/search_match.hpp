#pragma once
// kf_search_holds(body, word): whether `body` holds `word` exactly as a search of the viewer's
// index (search_text, migration 0036: FTS5 with the trigram tokenizer) for the quoted phrase of
// `word` would find it, for texts not in the index (migration 0052: the answers stored since
// kforged last indexed). It runs the same tokenizer: `word`'s trigrams must be found at
// consecutive positions of `body`'s, with the tokenizer's own case folding; a word of fewer than
// three characters (no trigram) holds nowhere, as in the index. Registered on every connection.

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::store {

Status register_search_match(Db& db);

}  // namespace kforge::store
