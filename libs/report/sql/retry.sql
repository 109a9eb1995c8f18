-- Puts an ended job back in a queue. error_kind and error keep why it was re-queued. An LLM stage
-- starts again from round 0; 'verify' verifies the last round that has code again.
-- name: requeue_job
UPDATE jobs SET state = ?2, stage = ?3, attempts = 0, lease_owner = NULL,
                lease_expires_ms = NULL, error_kind = ?4, error = ?5, updated_ms = ?6,
                repair_round = CASE WHEN ?3 = 'verify' THEN (
                  SELECT coalesce(max(o.repair_round), 0) FROM stage_outputs o
                  WHERE o.job_id = jobs.id AND o.status = 'ok'
                    AND o.stage IN ('generate', 'repair')
                    AND json_extract(kf_text(o.parsed_text), '$.kernel_wrapper') IS NOT NULL)
                ELSE 0 END
WHERE id = ?1 AND state IN ('done', 'failed');

-- name: reactivate_run
UPDATE runs SET state = 'active', updated_ms = ?2 WHERE id = ?1 AND state = 'finished';
