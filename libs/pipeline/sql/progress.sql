-- Progress of runs, for `kforge status`, systemd's STATUS= line and /metrics. The counts come
-- from the tables that migration 0012's triggers keep (run_job_counts, run_output_totals,
-- run_call_totals, run_verdict_counts), so reading them costs the same whatever the history.

-- name: run_jobs_by_state_stage
SELECT state, stage, n FROM run_job_counts WHERE run_id = ?1 AND n > 0;

-- name: run_usage
SELECT coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
       coalesce(sum(cost_usd), 0), coalesce(sum(n), 0), min(first_ms), max(last_ms)
FROM run_output_totals WHERE run_id = ?1 AND n > 0;

-- What the provider answered for a run (its calls' run_tag, migration 0026; ?1 = the run's tag),
-- network calls apart from replayed ones (answered from the store, unpaid).
-- name: run_calls
SELECT replayed, n, prompt_tokens, completion_tokens, cost_usd
FROM run_call_totals WHERE run_tag = ?1 AND n > 0;

-- name: run_wait
SELECT wait_until_ms, wait_reason FROM runs WHERE id = ?1;

-- Answers read leniently, by what was mended (stage_outputs.mended: comma-separated), and the
-- reasoning and cached prompt tokens of the run's answers.
-- name: run_mended
SELECT mended, count(*) FROM stage_outputs WHERE run_id = ?1 AND mended IS NOT NULL
GROUP BY mended;

-- name: run_reasoning_usage
SELECT coalesce(sum(reasoning_tokens), 0), coalesce(sum(cached_prompt_tokens), 0),
       count(reasoning_text)
FROM stage_outputs WHERE run_id = ?1;

-- name: run_outputs_by_stage_status
SELECT stage, status, n FROM run_output_totals WHERE run_id = ?1 AND n > 0;

-- Errors and warnings by kind: how many, the latest time and message (SQLite takes the bare
-- column from the row holding max()).
-- name: run_errors_by_kind
SELECT kind, count(*), max(created_ms), message FROM job_events
WHERE run_id = ?1 AND level IN ('warn', 'error') AND created_ms >= ?2  -- not vocabulary: event levels
  AND kind NOT IN ('lease_reclaimed')  -- routine: a restarted daemon took its own leases back
GROUP BY kind ORDER BY count(*) DESC, kind;

-- name: run_verdicts
SELECT verdict, n FROM run_verdict_counts WHERE run_id = ?1 AND n > 0;

-- Quality flags on the verification of each sample that passed (no_kernel_launch,
-- mutant_survived, weak_test, weak_inputs, constant_output, cross_compile_failed): each such
-- sample is not verified. A sample's verification is its newest (the view latest_verification,
-- migration 0025), here and below.
-- name: run_quality_flags
SELECT f.value, count(*) FROM latest_verification v, json_each(v.flags_json) f
WHERE v.run_id = ?1 AND v.verdict = :verdict_passed
GROUP BY 1 ORDER BY 2 DESC, 1;

-- Samples whose latest verification, whatever its verdict, is flagged out_of_bounds (a kernel
-- read or wrote outside its buffers: found by the guard-zone check of a passing run, or the run
-- died of an illegal memory access).
-- name: run_out_of_bounds
SELECT count(*) FROM latest_verification v, json_each(v.flags_json) f
WHERE v.run_id = ?1 AND f.value = :flag_out_of_bounds;

-- The speed label of the latest verification of each sample that passed and was timed
-- (verification_speed, migration 0020): its speedup (NULL without a reference) and pass_perf.
-- name: run_speed
SELECT sp.speedup, sp.pass_perf
FROM latest_verification v JOIN verification_speed sp ON sp.verification_id = v.id
WHERE v.run_id = ?1 AND v.verdict = :verdict_passed AND sp.timed = 1
ORDER BY sp.speedup;

-- The speed label's flags (verification_speed.flags_json, migration 0032) over the latest
-- verification of each passing sample: not_timed, library_work, kernel_not_timed, ...
-- name: run_speed_flags
SELECT f.value, count(*)
FROM latest_verification v JOIN verification_speed sp ON sp.verification_id = v.id,
     json_each(sp.flags_json) f
WHERE v.run_id = ?1 AND v.verdict = :verdict_passed
GROUP BY f.value ORDER BY count(*) DESC, f.value;

-- Why the passing samples whose label has no figures were not timed, most frequent first.
-- name: run_not_timed_reasons
SELECT coalesce(sp.reason, ''), count(*)
FROM latest_verification v JOIN verification_speed sp ON sp.verification_id = v.id
WHERE v.run_id = ?1 AND v.verdict = :verdict_passed AND sp.timed = 0
GROUP BY sp.reason ORDER BY count(*) DESC, sp.reason LIMIT 3;

-- Every run's jobs by state, for kforge status.
-- name: jobs_by_state_all
SELECT state, sum(n) FROM run_job_counts GROUP BY state HAVING sum(n) > 0 ORDER BY state;

-- name: jobs_by_run_state
SELECT r.tag, c.state, sum(c.n) FROM run_job_counts c JOIN runs r ON r.id = c.run_id
GROUP BY r.tag, c.state HAVING sum(c.n) > 0;

-- name: verdicts_all
SELECT verdict, sum(n) FROM run_verdict_counts GROUP BY verdict HAVING sum(n) > 0;

-- The times of the most recent finishes (?4 at most, since ?3), newest first: good answers of
-- the last LLM stage (?2) and failed jobs. The rate is taken from the stretch since the last
-- pause among them (progress.cpp).
-- name: run_recent_finish_times
SELECT t FROM (
  SELECT created_ms AS t FROM stage_outputs
  WHERE run_id = ?1 AND stage = ?2 AND status = 'ok' AND created_ms >= ?3  -- not vocabulary: an answer's status
  UNION ALL
  SELECT updated_ms AS t FROM jobs WHERE run_id = ?1 AND state = 'failed' AND updated_ms >= ?3)  -- not vocabulary: a job's state
ORDER BY t DESC LIMIT ?4;

-- Failed jobs by their error kind (as the scheduler stored it: "no_kernels", "python_syntax",
-- "rejected:unknown_kernel", "llm:truncated", "parse", ...), with the newest one's sample and
-- message (SQLite takes the bare columns from the row holding max()).
-- name: run_failures_by_kind
SELECT coalesce(j.error_kind, 'unknown'), count(*), max(j.id), s.key, coalesce(j.error, '')
FROM jobs j JOIN samples s ON s.id = j.sample_id
WHERE j.run_id = ?1 AND j.state = 'failed'  -- not vocabulary: a job's state
GROUP BY 1 ORDER BY 2 DESC, 1;

-- Verdicts other than passed by cause: environment (the verifier's Python lacks a module),
-- infrastructure (the verifier could not run the sample) or sample (the sample's own code),
-- with the newest one's sample and detail.
-- name: run_verdict_causes
SELECT v.verdict,
       CASE WHEN EXISTS (SELECT 1 FROM json_each(v.flags_json) f
                         WHERE f.value = :flag_environment)
            THEN :flag_environment
            WHEN EXISTS (SELECT 1 FROM json_each(v.flags_json) f
                         WHERE f.value = :flag_infrastructure)
            THEN :flag_infrastructure
            ELSE 'sample' END,
       count(*), max(v.id), s.key, coalesce(v.detail, '')
FROM verifications v JOIN samples s ON s.id = v.sample_id
WHERE v.run_id = ?1 AND v.verdict <> :verdict_passed
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2;
