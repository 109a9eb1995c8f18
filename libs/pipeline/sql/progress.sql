-- Progress of runs, for `kforge status`, systemd's STATUS= line and /metrics.

-- name: run_jobs_by_state_stage
SELECT state, stage, count(*) FROM jobs WHERE run_id = ?1 GROUP BY state, stage;

-- name: run_usage
SELECT coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
       coalesce(sum(cost_usd), 0), count(*), min(created_ms), max(created_ms)
FROM stage_outputs WHERE run_id = ?1;

-- What the provider answered for a run (its calls' tags start "run=TAG "; ?1 = "run=TAG ",
-- ?2 = "run=TAG!"), network calls apart from replayed ones (answered from the store, unpaid).
-- name: run_calls
SELECT status = 'replayed', count(*), coalesce(sum(prompt_tokens), 0),
       coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0)
FROM llm_calls WHERE tag >= ?1 AND tag < ?2 GROUP BY 1;

-- name: run_wait
SELECT wait_until_ms, wait_reason FROM runs WHERE id = ?1;

-- Answers read leniently, by what was mended (stage_outputs.mended: comma-separated), and the
-- reasoning and cached prompt tokens of the run's answers.
-- name: run_mended
SELECT mended, count(*) FROM stage_outputs WHERE run_id = ?1 AND mended IS NOT NULL
GROUP BY mended;

-- name: run_reasoning_usage
SELECT coalesce(sum(reasoning_tokens), 0), coalesce(sum(cached_prompt_tokens), 0),
       count(reasoning)
FROM stage_outputs WHERE run_id = ?1;

-- name: run_outputs_by_stage_status
SELECT stage, status, count(*) FROM stage_outputs WHERE run_id = ?1 GROUP BY stage, status;

-- The most recent finishes (?4 at most, since ?3): how many and the oldest one's time. The rate
-- is taken over them, so a stop or a slow start long ago does not drag it down.
-- name: run_recent_finishes
SELECT count(*), coalesce(min(t), 0) FROM (
  SELECT t FROM (
    SELECT created_ms AS t FROM stage_outputs
    WHERE run_id = ?1 AND stage = ?2 AND status = 'ok' AND created_ms >= ?3
    UNION ALL
    SELECT updated_ms AS t FROM jobs WHERE run_id = ?1 AND state = 'failed' AND updated_ms >= ?3)
  ORDER BY t DESC LIMIT ?4);

-- Errors and warnings by kind: how many, the latest time and message (SQLite takes the bare
-- column from the row holding max()).
-- name: run_errors_by_kind
SELECT kind, count(*), max(created_ms), message FROM job_events
WHERE run_id = ?1 AND level <> 'info' AND created_ms >= ?2
  AND kind NOT IN ('lease_reclaimed')  -- routine: a restarted daemon took its own leases back
GROUP BY kind ORDER BY count(*) DESC, kind;

-- name: run_verdicts
SELECT verdict, count(*) FROM verifications WHERE run_id = ?1 GROUP BY verdict;

-- name: jobs_by_run_state
SELECT r.tag, j.state, count(*) FROM jobs j JOIN runs r ON r.id = j.run_id
GROUP BY r.tag, j.state;

-- name: verdicts_all
SELECT verdict, count(*) FROM verifications GROUP BY verdict;
