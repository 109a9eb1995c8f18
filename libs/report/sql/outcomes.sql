-- Where each job of a run stands, one row per sample, by sample key: the latest output of the
-- stage the job is at (fo), the latest output of any stage (lo), the sample's verification (v:
-- its newest, as the view latest_verification of migration 0025 says), its speed label (with
-- migration 0043's kernel share), its near-duplicate group (the last kforge corpus dedup: the
-- group's id and size), and sums over every attempt. "Latest" is the newest row (highest id):
-- attempt numbers start again after a retry, row ids never go back.
-- The run's verifications (v) and stage outputs (t) are each read once, grouped by sample, from
-- migration 0044's covering indexes: a verification's newest row is the one max(id) picks (SQLite
-- takes the group's other bare columns from that row), rather than a lookup per job. The output
-- of the job's stage is the latest output when that is of the same stage (nearly always), else
-- looked up.
-- name: run_outcomes
WITH
v AS (
  SELECT sample_id, max(id) AS id, verdict, flags_json, detail, kernel_killed, kernel_applicable,
         sum(duration_ms) AS duration_ms, count(*) AS runs
  FROM verifications WHERE run_id = ?1 GROUP BY sample_id),
t AS (
  SELECT sample_id, max(id) AS last_id, sum(prompt_tokens) AS prompt_tokens,
         sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd,
         sum(latency_ms) AS latency_ms, count(*) AS calls, sum(mended IS NOT NULL) AS mended,
         sum(reasoning_tokens) AS reasoning_tokens,
         sum(cached_prompt_tokens) AS cached_prompt_tokens
  FROM stage_outputs WHERE run_id = ?1 GROUP BY sample_id)
SELECT s.id, s.key, j.state, j.stage, j.error_kind, j.error,
       fo.status, fo.error_kind, fo.error,
       v.verdict, v.flags_json, v.detail,
       coalesce(t.prompt_tokens, 0), coalesce(t.completion_tokens, 0), coalesce(t.cost_usd, 0),
       coalesce(t.latency_ms, 0), coalesce(t.calls, 0),
       coalesce(v.duration_ms, 0), coalesce(v.runs, 0), j.id,
       lo.stage, lo.status, lo.error_kind, lo.error, j.repair_round,
       coalesce(t.mended, 0), coalesce(t.reasoning_tokens, 0), coalesce(t.cached_prompt_tokens, 0),
       (SELECT json_group_object(c.target, c.result) FROM verification_targets c
        WHERE c.verification_id = v.id),
       v.kernel_killed, v.kernel_applicable,
       sp.speedup, sp.pass_perf, sp.timed, sp.flags_json, sp.kernel_share,
       dg.group_id, (SELECT count(*) FROM dedup_groups g WHERE g.group_id = dg.group_id)
FROM jobs j
JOIN samples s ON s.id = j.sample_id
LEFT JOIN dedup_groups dg ON dg.sample_id = j.sample_id
LEFT JOIN t ON t.sample_id = j.sample_id
LEFT JOIN stage_outputs lo ON lo.id = t.last_id
LEFT JOIN stage_outputs fo ON fo.id = CASE WHEN lo.stage = j.stage THEN lo.id ELSE (
  SELECT max(o.id) FROM stage_outputs o
  WHERE o.run_id = j.run_id AND o.sample_id = j.sample_id AND o.stage = j.stage) END
LEFT JOIN v ON v.sample_id = j.sample_id
LEFT JOIN verification_speed sp ON sp.verification_id = v.id
WHERE j.run_id = ?1
ORDER BY s.key;

-- How many jobs run ?1 has (migration 0012's trigger-kept counts): the rows run_outcomes gives,
-- read first to make room for them at once.
-- name: run_job_total
SELECT coalesce(sum(n), 0) FROM run_job_counts WHERE run_id = ?1;

-- Per sample and repair round (0: the first generation): the verdict of that round's code (the
-- view latest_round_verification, migration 0025).
-- name: run_round_verdicts
SELECT v.sample_id, v.repair_round, v.verdict, v.flags_json FROM latest_round_verification v
WHERE v.run_id = ?1
ORDER BY v.sample_id, v.repair_round;

-- Per sample and repair round: what the round's LLM calls cost (round 0 holds analyze and
-- generate), every attempt included.
-- name: run_round_costs
SELECT sample_id, repair_round, sum(cost_usd), sum(prompt_tokens + completion_tokens),
       sum(latency_ms)
FROM stage_outputs WHERE run_id = ?1
GROUP BY sample_id, repair_round ORDER BY sample_id, repair_round;
