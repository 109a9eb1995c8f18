-- The verify stage's side of the jobs table (verify_queue.cpp, the VerifyQueue of every verify
-- backend): jobs in 'verify_queued' are leased as 'verifying', verified, and moved to 'done' with
-- their verdict in one transaction.

-- name: vstage_lease
UPDATE jobs SET state = 'verifying', lease_owner = ?1, lease_expires_ms = ?2, updated_ms = ?3
WHERE id = (SELECT j.id FROM jobs j JOIN runs r ON r.id = j.run_id
            WHERE j.state = 'verify_queued' AND r.state = 'active' AND j.not_before_ms <= ?3
            ORDER BY j.updated_ms, j.id LIMIT 1)
RETURNING id, run_id, sample_id, repair_round;

-- name: vstage_run_params
SELECT params_json FROM runs WHERE id = ?1;

-- A verdict that is not verified, within the run's repair rounds: the job goes back to the LLM
-- at the next round (the scheduler leases it at stage 'repair').
-- name: vstage_to_repair
UPDATE jobs SET state = 'queued', stage = 'repair', repair_round = ?3, attempts = 0,  -- not vocabulary: the repair stage's name (kRepairStage)
                not_before_ms = 0, lease_owner = NULL, lease_expires_ms = NULL, error_kind = NULL,
                error = NULL, updated_ms = ?4, verify_requeues = 0
WHERE id = ?1 AND state = 'verifying' AND lease_owner = ?2;

-- name: vstage_sample
SELECT key, code FROM samples WHERE id = ?1;

-- name: vstage_next_attempt
SELECT coalesce(max(attempt), 0) + 1 FROM verifications WHERE job_id = ?1;

-- name: vstage_finish
UPDATE jobs SET state = ?3, stage = ?4, lease_owner = NULL, lease_expires_ms = NULL,
                error_kind = ?5, error = ?6, updated_ms = ?7
WHERE id = ?1 AND state = 'verifying' AND lease_owner = ?2;

-- name: vstage_renew
UPDATE jobs SET lease_expires_ms = ?2 WHERE state = 'verifying' AND lease_owner = ?1;

-- Leaves alone the jobs of ?4 (NULL: none), e.g. those a backend has just adopted.
-- name: vstage_reclaim
UPDATE jobs SET state = 'verify_queued', lease_owner = NULL, lease_expires_ms = NULL,
                updated_ms = ?3
WHERE state = 'verifying' AND (?4 IS NULL OR lease_owner != ?4)
  AND (lease_owner GLOB ?1 OR lease_expires_ms <= ?2);

-- name: vstage_release
UPDATE jobs SET state = 'verify_queued', lease_owner = NULL, lease_expires_ms = NULL,
                updated_ms = ?2
WHERE state = 'verifying' AND lease_owner = ?1;

-- Those of the job ids ?2 (a JSON array) that are not being verified under ?1's lease.
-- name: vstage_not_held
SELECT h.value FROM json_each(?2) h
WHERE NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.id = h.value AND j.state = 'verifying' AND j.lease_owner = ?1);

-- name: vstage_waiting
SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id
WHERE j.state = 'verify_queued' AND r.state = 'active';

-- A job a backend sent away and a restarted daemon takes over: ?1 (this daemon's owner) until ?2,
-- if it is still being verified by an earlier process of the daemon (?3) or its lease expired.
-- name: vstage_adopt
UPDATE jobs SET lease_owner = ?1, lease_expires_ms = ?2
WHERE id = ?5 AND state = 'verifying' AND (lease_owner GLOB ?3 OR lease_expires_ms <= ?4);

-- name: vstage_job
SELECT j.run_id, j.sample_id, s.key, j.repair_round FROM jobs j
JOIN samples s ON s.id = j.sample_id WHERE j.id = ?1;

-- name: vstage_run_state
SELECT state FROM runs WHERE id = ?1;

-- The earliest time a job waiting out an infrastructure requeue's back-off may be leased, after
-- ?1 (NULL: none waits).
-- name: vstage_next_due
SELECT min(j.not_before_ms) FROM jobs j JOIN runs r ON r.id = j.run_id
WHERE j.state = 'verify_queued' AND r.state = 'active' AND j.not_before_ms > ?1;

-- name: vstage_requeues
SELECT verify_requeues FROM jobs WHERE id = ?1;

-- An infrastructure failure: back to the queue, not before ?5, with the failure as its error.
-- name: vstage_requeue
UPDATE jobs SET state = ?6, stage = ?7, lease_owner = NULL, lease_expires_ms = NULL,
                error_kind = ?8, error = ?3, updated_ms = ?4, not_before_ms = ?5,
                verify_requeues = verify_requeues + 1
WHERE id = ?1 AND state = 'verifying' AND lease_owner = ?2;
