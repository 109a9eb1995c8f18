-- Puts an ended job back in a queue (kforge retry). error_kind and error keep why it was
-- re-queued. An LLM stage starts again from round 0; 'verify' verifies the code the job holds
-- now again: the round of its newest answer that holds code (the view code_outputs).
-- name: retry_requeue_job
UPDATE jobs SET state = CASE WHEN ?2 = 'verify' THEN 'verify_queued' ELSE 'queued' END,
                stage = ?2, attempts = 0, lease_owner = NULL, lease_expires_ms = NULL,
                error_kind = ?3, error = ?4, updated_ms = ?5,
                repair_round = CASE WHEN ?2 = 'verify' THEN coalesce((
                  SELECT c.repair_round FROM code_outputs c WHERE c.job_id = jobs.id
                  ORDER BY c.id DESC LIMIT 1), 0)
                ELSE 0 END
WHERE id = ?1 AND state IN ('done', 'failed');  -- not vocabulary: job states

-- name: retry_reactivate_run
UPDATE runs SET state = 'active', updated_ms = ?2 WHERE id = ?1 AND state = 'finished';
