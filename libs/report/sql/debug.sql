-- name: debug_sample
SELECT s.id, s.key, s.code, s.record_json, j.id, j.state, j.stage, j.attempts, j.error_kind,
       j.error, j.updated_ms
FROM jobs j JOIN samples s ON s.id = j.sample_id
WHERE j.run_id = ?1 AND s.key = ?2;

-- name: sample_exists
SELECT count(*) FROM samples WHERE key = ?1;

-- Every stage attempt of a sample in a run, oldest first.
-- name: debug_stage_outputs
SELECT stage, attempt, status, prompt_version, prompt_sha256, request_sha256,
       kf_text(request_text), kf_text(response_text), kf_text(parsed_text), error_kind, error, prompt_tokens, completion_tokens, cost_usd,
       latency_ms, created_ms, repair_round, kf_text(reasoning_text), id
FROM stage_outputs WHERE run_id = ?1 AND sample_id = ?2 ORDER BY id;

-- The answer whose code a sample shows, as export_rows's: the newest that holds code (the view
-- code_outputs, migration 0021), or an attempt of the run's code stage (by its kind, the view
-- stage_output_kinds) newer than it. 0: none.
-- name: debug_shown_code
SELECT max(coalesce((SELECT max(c.id) FROM code_outputs c
                     WHERE c.run_id = ?1 AND c.sample_id = ?2), 0),
           coalesce((SELECT max(o.id) FROM stage_output_kinds o
                     WHERE o.run_id = ?1 AND o.sample_id = ?2 AND o.kind = 'code'), 0));

-- Every verification of a sample in a run, oldest first.
-- name: debug_verifications
SELECT attempt, verdict, flags_json, detail, result_json, script, stderr_tail, duration_ms, device,
       created_ms, repair_round, id
FROM verifications WHERE run_id = ?1 AND sample_id = ?2 ORDER BY id;
