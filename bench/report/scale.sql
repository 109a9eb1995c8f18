-- Benchmark data: copies every sample of the report fixture (tests/report/fixtures) and all of
-- its jobs, stage outputs and verifications `copies` times (from the temp table bench_scale),
-- the copies' keys suffixed "#1", "#2", ... Rows keep their order, so "latest" stays the same.

WITH RECURSIVE n(i) AS (
  SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < (SELECT copies FROM bench_scale))
INSERT INTO samples (key, code_sha256, code, description_1, description_2, record_json, source,
                     source_index, created_ms, updated_ms)
SELECT s.key || '#' || n.i, s.code_sha256, s.code, s.description_1, s.description_2,
       s.record_json, s.source, s.source_index, s.created_ms, s.updated_ms
FROM samples s, n WHERE instr(s.key, '#') = 0
ORDER BY n.i, s.id;

CREATE TEMP TABLE copy_of AS
SELECT c.id AS copy_id, o.id AS orig_id FROM samples c
JOIN samples o ON o.key = substr(c.key, 1, instr(c.key, '#') - 1)
WHERE instr(c.key, '#') > 0;

INSERT INTO jobs (run_id, sample_id, state, stage, attempts, lease_owner, lease_expires_ms,
                  error_kind, error, created_ms, updated_ms)
SELECT j.run_id, m.copy_id, j.state, j.stage, j.attempts, j.lease_owner, j.lease_expires_ms,
       j.error_kind, j.error, j.created_ms, j.updated_ms
FROM copy_of m JOIN jobs j ON j.sample_id = m.orig_id
ORDER BY m.copy_id, j.id;

INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, prompt_version,
                           prompt_sha256, request_sha256, request_text, response_text, parsed_text,
                           error_kind, error, prompt_tokens, completion_tokens, cost_usd,
                           latency_ms, created_ms)
SELECT jc.id, o.run_id, m.copy_id, o.stage, o.attempt, o.status, o.prompt_version,
       o.prompt_sha256, o.request_sha256, o.request_text, o.response_text, o.parsed_text,
       o.error_kind, o.error, o.prompt_tokens, o.completion_tokens, o.cost_usd, o.latency_ms,
       o.created_ms
FROM copy_of m
JOIN stage_outputs o ON o.sample_id = m.orig_id
JOIN jobs jc ON jc.run_id = o.run_id AND jc.sample_id = m.copy_id
ORDER BY m.copy_id, o.id;

INSERT INTO verifications (job_id, run_id, sample_id, attempt, verdict, flags_json, detail,
                           result_json, script, stderr_tail, duration_ms, device, created_ms,
                           mutants_killed, mutants_applicable, mutants_survived_json,
                           mutants_not_applicable_json, kernel_killed, kernel_applicable,
                           kernel_equivalent, kernel_survived_json, coverage_json, speed_json,
                           out_of_bounds, bounds_detail)
SELECT jc.id, v.run_id, m.copy_id, v.attempt, v.verdict, v.flags_json, v.detail, v.result_json,
       v.script, v.stderr_tail, v.duration_ms, v.device, v.created_ms, v.mutants_killed,
       v.mutants_applicable, v.mutants_survived_json, v.mutants_not_applicable_json,
       v.kernel_killed, v.kernel_applicable, v.kernel_equivalent, v.kernel_survived_json,
       v.coverage_json, v.speed_json, v.out_of_bounds, v.bounds_detail
FROM copy_of m
JOIN verifications v ON v.sample_id = m.orig_id
JOIN jobs jc ON jc.run_id = v.run_id AND jc.sample_id = m.copy_id
ORDER BY m.copy_id, v.id;
