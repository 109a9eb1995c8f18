-- kforge schema, version 52: the answers' texts enter the search index (search_text, migration
-- 0036) in batches, after their checkpoint, not in the checkpoint's transaction.
--
-- Each checkpoint is its own transaction, so a trigger indexing each answer as it was stored made
-- every answer a new FTS5 segment: about 0.3 ms per generate or repair answer, most of what a
-- pipeline stage cost over 5eddfad (docs/BENCHMARKS.md, issue 51). Now:
--   - search_indexed.outputs_upto is the watermark: every answer (stage_outputs row) with an id at
--     or below it is in the index (those that hold code: search_output_texts below); those above
--     it are not yet;
--   - kforged indexes the answers above the watermark in one transaction per batch and moves the
--     watermark in the same transaction (pipeline's index_answers: at start, about once a
--     second while it works, and when it stops), so a kill -9 loses nothing: the next start
--     indexes what the killed one stored and had not indexed;
--   - the viewer's search (report's viewer_search) reads the index for the answers at or below
--     the watermark and the answers above it directly (a small tail while a daemon runs; the
--     whole of what was stored since a daemon last indexed otherwise), so a search finds every
--     answer stored before it began;
--   - a deleted answer takes its text with it, as before, and keeps the watermark at or below the
--     newest answer's id: SQLite may give a deleted newest row's id to the next row, which must
--     then be above the watermark to be indexed.
-- The body of an answer's text and which answers have one are spelled once, in the view
-- search_output_texts (as migration 0036's trigger had them). A database migrated from 51 has
-- every answer indexed (its trigger did it): the watermark starts at the newest answer.

CREATE TABLE search_indexed (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  outputs_upto INTEGER NOT NULL
);
INSERT INTO search_indexed (id, outputs_upto)
VALUES (1, (SELECT coalesce(max(id), 0) FROM stage_outputs));

-- The search text of each answer that holds code: its rowid in search_text (id * 4 + 1), the
-- wrapper and the test, the run and the sample; `id` is the answer's.
CREATE VIEW search_output_texts AS
SELECT id, id * 4 + 1 AS text_id,
       coalesce(json_extract(p, '$.kernel_wrapper'), '') || char(10) || coalesce(json_extract(p, '$.unitest_code'), '') AS body,
       run_id, sample_id
FROM (SELECT id, run_id, sample_id, kf_text(parsed_text) AS p FROM stage_outputs
      WHERE status = 'ok' AND stage IN ('generate', 'repair') AND parsed_text IS NOT NULL)
WHERE json_valid(p) AND json_extract(p, '$.kernel_wrapper') IS NOT NULL;

DROP TRIGGER search_outputs_insert;
DROP TRIGGER search_outputs_delete;

CREATE TRIGGER search_outputs_delete AFTER DELETE ON stage_outputs BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4 + 1;
  UPDATE search_indexed SET outputs_upto = (SELECT coalesce(max(id), 0) FROM stage_outputs)
  WHERE outputs_upto > (SELECT coalesce(max(id), 0) FROM stage_outputs);
END;
