-- The scoring endpoint's batches and items (migration 0028; service.hpp).

-- The newest verdict of an item's content that the cache keeps: any but one flagged environment
-- or infrastructure (those say nothing about the item).
-- name: item_cached
SELECT v.id FROM samples s JOIN verifications v ON v.sample_id = s.id
WHERE s.key = ?1
  AND NOT EXISTS (SELECT 1 FROM json_each(v.flags_json) f
                  WHERE f.value IN (:flag_environment, :flag_infrastructure))
ORDER BY v.id DESC LIMIT 1;

-- name: batch_insert
INSERT INTO score_batches (run_id, reward, reward_params_json, deadline_ms, created_ms)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: item_insert
INSERT INTO score_items (batch_id, idx, item_id, content_key, job_id, verification_id, cached,
                         outcome, created_ms, ended_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

-- Open items whose job got a verdict since the item was asked for.
-- name: settle_judged
UPDATE score_items
SET outcome = 'judged', ended_ms = ?1,
    verification_id = (SELECT max(v.id) FROM verifications v
                       WHERE v.job_id = score_items.job_id
                         AND v.created_ms >= score_items.created_ms)
WHERE outcome IS NULL AND job_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM verifications v WHERE v.job_id = score_items.job_id
              AND v.created_ms >= score_items.created_ms);

-- Open items whose job ended without one (after settle_judged), or is gone.
-- name: settle_failed
UPDATE score_items
SET outcome = 'failed', ended_ms = ?1,  -- not vocabulary: an item's outcome
    detail = coalesce((SELECT 'the job ended ' || j.state || coalesce(': ' || j.error, '')
                       FROM jobs j WHERE j.id = score_items.job_id), 'the job was deleted')
WHERE outcome IS NULL
  AND (job_id IS NULL
       OR (SELECT j.state FROM jobs j WHERE j.id = score_items.job_id)
          IN ('done', 'failed', 'cancelled'));  -- not vocabulary: job states

-- Open items past their batch's deadline (?1: now; ?2: a batch, or NULL for every batch), with
-- their job's state.
-- name: items_to_end
SELECT i.batch_id, i.idx, i.job_id, j.state FROM score_items i
JOIN score_batches b ON b.id = i.batch_id
LEFT JOIN jobs j ON j.id = i.job_id
WHERE i.outcome IS NULL AND b.ended_ms IS NULL
  AND (?2 IS NULL AND b.deadline_ms <= ?1 OR b.id = ?2);

-- name: item_end
UPDATE score_items SET outcome = ?3, detail = ?4, ended_ms = ?5
WHERE batch_id = ?1 AND idx = ?2 AND outcome IS NULL;

-- name: job_still_wanted
SELECT count(*) FROM score_items WHERE job_id = ?1 AND outcome IS NULL;

-- name: batches_end
UPDATE score_batches SET ended_ms = ?1
WHERE ended_ms IS NULL
  AND NOT EXISTS (SELECT 1 FROM score_items i WHERE i.batch_id = score_batches.id
                  AND i.outcome IS NULL);

-- name: open_batches
SELECT count(*) FROM score_batches WHERE ended_ms IS NULL;

-- name: batch_get
SELECT reward, reward_params_json, ended_ms, deadline_ms FROM score_batches WHERE id = ?1;

-- name: batch_results
SELECT i.idx, i.item_id, i.cached, i.outcome, i.detail, i.created_ms, i.ended_ms, v.verdict,
       v.flags_json, v.detail, v.result_json, v.script, v.stderr_tail, v.duration_ms,
       v.created_ms
FROM score_items i LEFT JOIN verifications v ON v.id = i.verification_id
WHERE i.batch_id = ?1 ORDER BY i.idx;

-- Retention: ended batches created before ?1 (their items go with them).
-- name: batches_forget
DELETE FROM score_batches WHERE ended_ms IS NOT NULL AND created_ms < ?1;

-- The verdicts of the last items that waited for one (newest first): queue and run time.
-- name: recent_waits
SELECT max(0, v.created_ms - v.duration_ms - i.created_ms), v.duration_ms, i.ended_ms
FROM score_items i JOIN verifications v ON v.id = i.verification_id
WHERE i.cached = 0 AND i.outcome = 'judged'
ORDER BY i.ended_ms DESC LIMIT 200;

-- name: workers
SELECT device, in_rotation, workers, ready_workers FROM verifier_devices ORDER BY device;
