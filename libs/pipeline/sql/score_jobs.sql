-- Scored items as jobs (score_jobs.hpp): a run of pipeline 'score' per client tag, a sample and
-- a job per distinct item, its code as the answer of the run's one stage, 'score' (kind code).

-- name: score_run_insert
INSERT INTO runs (tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms)
VALUES (?1, 'score', 'client', ?2, ?3, 'active', ?4, ?4)
ON CONFLICT (tag) DO NOTHING;

-- name: score_run_get
SELECT id, pipeline, state, params_json FROM runs WHERE tag = ?1;

-- A score run all of whose jobs ended was finished by the scheduler; a new item opens it again.
-- name: score_run_reopen
UPDATE runs SET state = 'active', updated_ms = ?2 WHERE id = ?1 AND state = 'finished';

-- name: score_named_sample
SELECT code, description_1, description_2 FROM samples WHERE key = ?1;

-- name: score_sample_insert
INSERT INTO samples (key, code_sha256, code, description_1, description_2, record_json, source,
                     source_index, created_ms, updated_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
ON CONFLICT (key) DO NOTHING;

-- name: score_sample_id
SELECT id FROM samples WHERE key = ?1;

-- name: score_job_get
SELECT id, state FROM jobs WHERE run_id = ?1 AND sample_id = ?2;

-- name: score_job_insert
INSERT INTO jobs (run_id, sample_id, state, stage, created_ms, updated_ms)
VALUES (?1, ?2, 'verify_queued', 'verify', ?3, ?3);

-- An ended job asked for again (its verdict was not one the cache keeps, or it was cancelled).
-- name: score_job_requeue
UPDATE jobs SET state = 'verify_queued', stage = 'verify', lease_owner = NULL,
                lease_expires_ms = NULL, error_kind = NULL, error = NULL, repair_round = 0,
                updated_ms = ?2
WHERE id = ?1 AND state IN ('done', 'failed', 'cancelled');  -- not vocabulary: job states

-- name: score_output_insert
INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, prompt_version,
                           prompt_sha256, request_text, response_text, parsed_text, created_ms,
                           repair_round)
VALUES (?1, ?2, ?3, 'score', 1, 'ok', 'score', '', kf_put(?4), kf_put(?5), kf_put(?5), ?6, 0);  -- not vocabulary: an answer's status

-- A waiting or running scored job ended without a verdict: a verdict the verifier stores later
-- finds the job no longer its own and is dropped (VerdictOutcome::lost).
-- name: score_job_cancel
UPDATE jobs SET state = 'cancelled', stage = 'done', lease_owner = NULL, lease_expires_ms = NULL,
                error_kind = 'cancelled', error = ?2, updated_ms = ?3
WHERE id = ?1 AND state IN ('verify_queued', 'verifying');

-- The verify queue's lease restricted to score runs (JobsVerifyQueue::set_score_share).
-- name: vstage_lease_score
UPDATE jobs SET state = 'verifying', lease_owner = ?1, lease_expires_ms = ?2, updated_ms = ?3
WHERE id = (SELECT j.id FROM jobs j JOIN runs r ON r.id = j.run_id
            WHERE j.state = 'verify_queued' AND r.state = 'active' AND r.pipeline = 'score'
            ORDER BY j.updated_ms, j.id LIMIT 1)
RETURNING id, run_id, sample_id, repair_round;

-- name: score_queue_depth
SELECT sum(j.state = 'verify_queued' AND r.pipeline = 'score'),
       sum(j.state = 'verifying' AND r.pipeline = 'score'),
       sum(j.state = 'verify_queued' AND r.pipeline != 'score'),
       sum(j.state = 'verifying' AND r.pipeline != 'score'),
       min(CASE WHEN j.state = 'verify_queued' AND r.pipeline = 'score' THEN j.updated_ms END)
FROM jobs j JOIN runs r ON r.id = j.run_id
WHERE j.state IN ('verify_queued', 'verifying') AND r.state = 'active';

-- Retention (score.keep_rollouts_h): ended scored jobs last changed before ?1, with their
-- outputs, verdicts and events (ON DELETE CASCADE), then the samples nothing refers to any more.
-- name: score_forget_jobs
DELETE FROM jobs
WHERE state IN ('done', 'failed', 'cancelled') AND updated_ms < ?1  -- not vocabulary: job states
  AND run_id IN (SELECT id FROM runs WHERE pipeline = 'score');

-- name: score_forget_samples
DELETE FROM samples
WHERE key GLOB 'score/*'
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.sample_id = samples.id)
  AND NOT EXISTS (SELECT 1 FROM verifications v WHERE v.sample_id = samples.id);
