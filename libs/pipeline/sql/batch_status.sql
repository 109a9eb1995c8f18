-- Batches in flight for kforge status (migration 0013; written by libs/llm/src/batch.cpp).

-- name: batches_in_flight
-- A run's open batches: those holding lines of its requests (tag "run=TAG ...").
SELECT b.key, b.state, coalesce(b.provider_status, ''), coalesce(b.batch_id, ''), b.lines,
       count(l.custom_id), b.completed, b.failed, b.poll_errors, b.created_ms,
       coalesce(b.error, '')
FROM llm_batches b JOIN llm_batch_lines l ON l.batch = b.id
WHERE b.state <> 'done' AND substr(l.tag, 1, length(?1) + 5) = 'run=' || ?1 || ' '
GROUP BY b.id ORDER BY b.id;
