-- Runs, jobs, leases and checkpoints. Times are milliseconds since the Unix epoch.

-- name: insert_run
INSERT INTO runs (tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms)
VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, ?6);

-- The texts of samples ?1 (a JSON array of ids) that are not in the search index yet, put there
-- in one statement as a run is created (migration 0051: a sample's texts enter the index with
-- its first job; search_jobs_insert then finds them there). One statement costs about a
-- quarter less than the trigger's row by row.
-- name: search_index_samples
INSERT INTO search_text (rowid, body, run_id, sample_id)
SELECT s.id * 4, coalesce(s.code, '') || char(10) || coalesce(s.description_1, '') || char(10) || coalesce(s.description_2, ''), NULL, s.id
FROM samples s
WHERE s.id IN (SELECT value FROM json_each(?1))
  AND NOT EXISTS (SELECT 1 FROM search_text t WHERE t.rowid = s.id * 4);

-- The answers' texts are indexed in batches after their checkpoints (migration 0052): the
-- watermark (every answer at or below it is indexed) and the newest answer's id.
-- name: search_answers_state
SELECT (SELECT outputs_upto FROM search_indexed), (SELECT coalesce(max(id), 0) FROM stage_outputs);

-- The texts of the answers above the watermark up to ?1, into the index; then the watermark to ?1
-- (search_answers_mark), in the same transaction.
-- name: search_index_answers
INSERT INTO search_text (rowid, body, run_id, sample_id)
SELECT text_id, body, run_id, sample_id FROM search_output_texts
WHERE id > (SELECT outputs_upto FROM search_indexed) AND id <= ?1;

-- name: search_answers_mark
UPDATE search_indexed SET outputs_upto = ?1 WHERE outputs_upto < ?1;

-- name: insert_job
INSERT INTO jobs (run_id, sample_id, state, stage, created_ms, updated_ms)
VALUES (?1, ?2, 'queued', ?3, ?4, ?4);

-- name: sample_ids_all
SELECT id FROM samples ORDER BY id LIMIT ?1;

-- name: sample_id_by_key
SELECT id FROM samples WHERE key = ?1;

-- name: run_by_tag
SELECT id, tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms
FROM runs WHERE tag = ?1;

-- name: run_by_id
SELECT id, tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms
FROM runs WHERE id = ?1;

-- The runs whose LLM stages the scheduler serves: a scoring run (pipeline 'score',
-- score_jobs.hpp) has none.
-- name: active_runs
SELECT id, tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms
FROM runs WHERE state = 'active' AND pipeline != 'score' ORDER BY id;

-- name: all_runs
SELECT id, tag, pipeline, model, params_json, prompts_json, state, created_ms, updated_ms
FROM runs ORDER BY created_ms, id;

-- name: set_run_state
UPDATE runs SET state = ?2, updated_ms = ?3 WHERE id = ?1;

-- A provider-requested pause of every request (migration 0005).
-- name: set_run_wait
UPDATE runs SET wait_until_ms = ?2, wait_reason = ?3 WHERE id = ?1;

-- Cancelling ends every job that has not ended, those with the verifier too: the verifier finds
-- its samples no longer held (VerifyQueue::not_held) and stops them, storing nothing of them; a
-- late verdict finds the job no longer 'verifying' and is dropped.
-- name: cancel_jobs
UPDATE jobs SET state = 'cancelled', lease_owner = NULL, lease_expires_ms = NULL,
                error_kind = 'cancelled', error = 'the run was cancelled', updated_ms = ?2
WHERE run_id = ?1 AND state IN ('queued', 'leased', 'verify_queued', 'verifying');

-- A run whose every job has ended is finished.
-- name: finish_runs
UPDATE runs SET state = 'finished', updated_ms = ?1
WHERE state = 'active'
  AND EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = runs.id)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = runs.id
                  AND j.state NOT IN ('done', 'failed', 'cancelled'));  -- not vocabulary: job states

-- Leases whose holder stopped renewing them: record, then requeue.
-- name: expired_leases
SELECT id, run_id, sample_id, stage, attempts, lease_owner FROM jobs
WHERE state = 'leased' AND lease_expires_ms <= ?1;

-- name: requeue_job
UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires_ms = NULL, updated_ms = ?2
WHERE id = ?1 AND state = 'leased';

-- Leases held by a daemon that is known to be gone (the same host's previous process).
-- name: leases_of_owners
SELECT id, run_id, sample_id, stage, attempts, lease_owner FROM jobs
WHERE state = 'leased' AND lease_owner GLOB ?1;

-- name: lease_jobs
UPDATE jobs SET state = 'leased', lease_owner = ?2, lease_expires_ms = ?3, updated_ms = ?4,
                change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = ?1), 0),
                     coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = ?1), 0)) + 1
WHERE id IN (SELECT id FROM jobs
             WHERE run_id = ?1 AND state = 'queued' AND not_before_ms <= ?4
             ORDER BY id LIMIT ?5)
RETURNING id, run_id, sample_id, stage, attempts, repair_round;

-- name: renew_leases
UPDATE jobs SET lease_expires_ms = ?2 WHERE state = 'leased' AND lease_owner = ?1;

-- name: release_job
UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires_ms = NULL, updated_ms = ?3
WHERE id = ?1 AND state = 'leased' AND lease_owner = ?2;

-- name: release_owner
UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires_ms = NULL, updated_ms = ?2
WHERE state = 'leased' AND lease_owner = ?1;

-- The checkpoint's state change: only while the lease is still ours.
-- name: advance_job
UPDATE jobs SET state = ?3, stage = ?4, attempts = ?5, not_before_ms = ?6, error_kind = ?7,
                error = ?8, lease_owner = NULL, lease_expires_ms = NULL, updated_ms = ?9,
                change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                     coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
WHERE id = ?1 AND state = 'leased' AND lease_owner = ?2;

-- name: insert_stage_output
INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, prompt_version,
                           prompt_sha256, request_sha256, request_text, response_text,
                           parsed_text, error_kind, error, prompt_tokens, completion_tokens,
                           cost_usd, latency_ms, created_ms, repair_round, reasoning_tokens,
                           cached_prompt_tokens, reasoning_text, mended)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, kf_put(?10), kf_put(?11), kf_put(?12), ?13, ?14, ?15,
        ?16, ?17, ?18, ?19, ?20, ?21, ?22, kf_put(?23), ?24);

-- name: insert_event
INSERT INTO job_events (run_id, job_id, sample_id, stage, attempt, level, kind, message, owner,
                        created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

-- name: sample_input
SELECT key, code, description_1, description_2 FROM samples WHERE id = ?1;

-- The good output of an earlier stage (v2's analysis, for generate).
-- name: stage_ok_output
SELECT kf_text(parsed_text) FROM stage_outputs
WHERE job_id = ?1 AND stage = ?2 AND status = 'ok' ORDER BY id DESC LIMIT 1;  -- not vocabulary: an answer's status

-- Earlier attempts at the job's current stage (in its current repair round), oldest first.
-- name: stage_attempts
SELECT status, error_kind, error, kf_text(response_text) FROM stage_outputs
WHERE job_id = ?1 AND stage = ?2 AND repair_round = ?3 ORDER BY id;

-- The answer holding a round's code (the view code_outputs, migration 0021): the code stage's
-- for round 0, the repair stage's for round N (an unfixable answer holds none). The scheduler's
-- repair prompt and the verifier (JobsVerifyQueue::lease) both read it.
-- name: round_code
SELECT kf_text(parsed_text) FROM code_outputs
WHERE job_id = ?1 AND repair_round = ?2
ORDER BY id DESC LIMIT 1;

-- The latest verdict of a round's code.
-- name: round_verdict
SELECT verdict, flags_json, detail, result_json, script, stderr_tail FROM verifications
WHERE job_id = ?1 AND repair_round = ?2 ORDER BY id DESC LIMIT 1;

-- name: count_verify_queued
SELECT count(*) FROM jobs WHERE state = 'verify_queued';

-- name: run_event_exists
SELECT count(*) FROM job_events WHERE run_id = ?1 AND job_id IS NULL AND kind = ?2
AND created_ms >= ?3;
