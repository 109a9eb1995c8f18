#pragma once
// The viewer's search index of answers, kept by kforged in batches (migration 0052): an answer's
// texts enter search_text after its checkpoint, not in the checkpoint's transaction (which made
// each answer its own FTS5 segment, about 0.3 ms per answer). search_indexed.outputs_upto is the
// watermark: every answer at or below it is indexed; the viewer reads those above it directly, so
// a search finds an answer as soon as it is stored either way.

#include <cstdint>

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct SearchBacklog {
  std::int64_t indexed_upto = 0;  // the watermark
  std::int64_t newest = 0;        // the newest answer's id (0: none)
  bool caught_up() const { return indexed_upto >= newest; }
};

// Indexes the answers above the watermark, at most `max_ids` answer ids of them (<= 0: all), in
// one transaction that also moves the watermark: a kill at any point leaves either both or
// neither. Returns the backlog after it (not caught up: call again).
Result<SearchBacklog> index_answers(store::Db& db, std::int64_t max_ids);

// Indexes batch after batch until caught up (as kforged starts and stops).
Status index_all_answers(store::Db& db, std::int64_t batch_ids);

}  // namespace kforge::pipeline
