-- Batch mode's bookkeeping (libs/llm/src/batch.cpp; migrations 0013 and 0018).

-- name: batch_insert
INSERT INTO llm_batches (key, url, model, state, lines, bytes, created_ms, updated_ms)
VALUES (?1, ?2, ?3, 'uploading', ?4, ?5, ?6, ?6);

-- name: batch_line_insert
-- The request in the text store (?4: its id; migration 0035), never in memory while it waits.
INSERT INTO llm_batch_lines (batch, custom_id, tag, state, request_text, continues)
VALUES (?1, ?2, ?3, 'pending', ?4, ?5);

-- name: batch_line_keep_request
-- A request's lines recorded without their request (before migration 0035) get it when the
-- request comes again (after a restart): its outcome is handed over with it.
UPDATE llm_batch_lines SET request_text = ?2 WHERE custom_id = ?1 AND request_text IS NULL;

-- name: batch_line_request
-- The request a line's outcome goes back with.
SELECT coalesce(kf_text(request_text), request_json) FROM llm_batch_lines
WHERE batch = ?1 AND custom_id = ?2;

-- name: batch_uploaded
-- The input file is at the provider: the request bodies of lines recorded before migration 0035
-- are no longer needed here (request_text stays: it is the call's request in llm_calls too).
UPDATE llm_batches SET state = 'uploaded', input_file_id = ?2, updated_ms = ?3 WHERE id = ?1;

-- name: batch_lines_uploaded
UPDATE llm_batch_lines SET request_json = NULL WHERE batch = ?1;

-- name: batch_submitted
UPDATE llm_batches SET state = 'submitted', batch_id = ?2, provider_status = ?3,
                       submitted_ms = coalesce(submitted_ms, ?4), updated_ms = ?4
WHERE id = ?1;

-- name: batch_polled
UPDATE llm_batches SET provider_status = ?2, completed = ?3, failed = ?4, updated_ms = ?5
WHERE id = ?1;

-- name: batch_poll_error
UPDATE llm_batches SET poll_errors = poll_errors + 1, error = ?2, updated_ms = ?3 WHERE id = ?1;

-- name: batch_note
UPDATE llm_batches SET error = ?2, updated_ms = ?3 WHERE id = ?1;

-- name: batch_done
UPDATE llm_batches SET state = 'done', provider_status = ?2, output_file_id = ?3,
                       error_file_id = ?4, error = coalesce(?5, error), completed = ?6,
                       failed = ?7, finished_ms = ?8, updated_ms = ?8
WHERE id = ?1;

-- name: batch_line_answered
UPDATE llm_batch_lines SET state = 'answered', http_status = 200, response_raw = ?3, error = NULL
WHERE batch = ?1 AND custom_id = ?2 AND state = 'pending';

-- name: batch_line_failed
UPDATE llm_batch_lines SET state = 'failed', http_status = ?3, response_raw = ?4, error = ?5  -- not vocabulary: a batch line's state
WHERE batch = ?1 AND custom_id = ?2 AND state = 'pending';

-- name: batch_line_applied
-- Recorded by the client in llm_calls, in the transaction that writes the call's row (audit.cpp).
UPDATE llm_batch_lines SET state = 'applied' WHERE batch = ?1 AND custom_id = ?2;

-- name: batch_prune
-- Applied answers the client has recorded need no copy here.
UPDATE llm_batch_lines SET response_raw = NULL
WHERE state = 'applied' AND response_raw IS NOT NULL AND EXISTS (
  SELECT 1 FROM llm_calls c
  WHERE c.request_sha256 = coalesce(llm_batch_lines.continues, llm_batch_lines.custom_id)
  AND c.status = 'ok');  -- not vocabulary: an LLM call's status

-- name: batch_open
SELECT id, key, state, input_file_id, batch_id, created_ms, submitted_ms, lines
FROM llm_batches WHERE url = ?1 AND model = ?2 AND state <> 'done' ORDER BY id;

-- name: batch_lines_of
SELECT custom_id, request_json, state, continues, request_text FROM llm_batch_lines
WHERE batch = ?1;

-- name: batch_line_latest
-- The newest line of a request: its batch's state and the line's outcome.
SELECT l.batch, b.key, b.state, l.state, l.http_status, l.response_raw, l.error, l.continues
FROM llm_batch_lines l JOIN llm_batches b ON b.id = l.batch
WHERE l.custom_id = ?1 AND b.url = ?2
ORDER BY l.batch DESC LIMIT 1;

-- name: batch_files_deleted
UPDATE llm_batches SET files_deleted_ms = ?2 WHERE id = ?1;

-- name: batch_undeleted
-- Batches done whose files are still at the provider (the deletes were cut short).
SELECT id, key, input_file_id, output_file_id, error_file_id FROM llm_batches
WHERE url = ?1 AND model = ?2 AND state = 'done' AND files_deleted_ms IS NULL ORDER BY id;
