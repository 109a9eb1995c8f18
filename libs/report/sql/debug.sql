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
                     WHERE o.run_id = ?1 AND o.sample_id = ?2 AND o.kind = :stage_kind_code), 0));

-- Every verification of a sample in a run, oldest first, with what verify's store took from its
-- report (migration 0025): the mutation scores, the coverage facts, and the section and line
-- where its first test that neither passed nor was skipped failed; and the speed label's flags and
-- why it was not timed (verification_speed).
-- name: debug_verifications
SELECT v.attempt, v.verdict, v.flags_json, v.detail, v.result_json, v.script, v.stderr_tail,
       v.duration_ms, v.device, v.created_ms, v.repair_round, v.id, v.mutants_killed,
       v.mutants_applicable, v.mutants_survived_json, v.mutants_not_applicable_json,
       v.kernel_killed, v.kernel_applicable, v.kernel_equivalent, v.kernel_survived_json,
       v.coverage_json, f.section, f.line, sp.flags_json, sp.reason
FROM verifications v
LEFT JOIN verification_speed sp ON sp.verification_id = v.id
LEFT JOIN verification_tests f ON f.verification_id = v.id AND f.ordinal = (
  SELECT t.ordinal FROM verification_tests t
  WHERE t.verification_id = v.id AND coalesce(t.status, '') NOT IN (:verdict_passed, :verdict_skipped)
  ORDER BY t.ordinal LIMIT 1)
WHERE v.run_id = ?1 AND v.sample_id = ?2 ORDER BY v.id;
