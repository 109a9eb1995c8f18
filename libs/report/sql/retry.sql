-- Puts an ended job back in a queue. error_kind and error keep why it was re-queued.
-- name: requeue_job
UPDATE jobs SET state = ?2, stage = ?3, attempts = 0, lease_owner = NULL,
                lease_expires_ms = NULL, error_kind = ?4, error = ?5, updated_ms = ?6
WHERE id = ?1 AND state IN ('done', 'failed');

-- name: reactivate_run
UPDATE runs SET state = 'active', updated_ms = ?2 WHERE id = ?1 AND state = 'finished';
