-- Where each job of a run stands, read in parts that load_outcomes joins by sample: each part
-- one range of an index (the samples of run ?1 whose ids lie in ?2..?3: the whole run, or the
-- samples a change named), with no lookup per job. "Latest" is the newest row (highest id):
-- attempt numbers start again after a retry, row ids never go back.
-- The jobs with their sample's key and near-duplicate group (the last kforge corpus dedup: the
-- group's id and size).
-- name: outcome_jobs
SELECT j.id, j.sample_id, s.key, j.state, j.stage, j.error_kind, j.error, j.repair_round,
       dg.group_id, (SELECT count(*) FROM dedup_groups g WHERE g.group_id = dg.group_id)
FROM jobs j
JOIN samples s ON s.id = j.sample_id
LEFT JOIN dedup_groups dg ON dg.sample_id = j.sample_id
WHERE j.run_id = ?1 AND j.sample_id BETWEEN ?2 AND ?3;

-- Every stage output (migration 0044's covering index stage_outputs_sums): its stage and status
-- and what it cost; summed per sample and per round, the newest of each sample and of its job's
-- stage picked by id.
-- name: outcome_outputs
SELECT sample_id, repair_round, id, stage, status, prompt_tokens, completion_tokens, cost_usd,
       latency_ms, reasoning_tokens, cached_prompt_tokens, mended IS NOT NULL
FROM stage_outputs WHERE run_id = ?1 AND sample_id BETWEEN ?2 AND ?3;

-- A stage output's error (of the few outputs an outcome shows the failure of).
-- name: outcome_output_error
SELECT error_kind, error FROM stage_outputs WHERE id = ?1;

-- Every verification (migration 0044's covering index verifications_newest): the newest of a
-- sample (the view latest_verification's rule) and of each of its rounds (the view
-- latest_round_verification's) picked by id, durations summed.
-- name: outcome_verifications
SELECT sample_id, repair_round, id, verdict, duration_ms, kernel_killed, kernel_applicable,
       flags_json, detail
FROM verifications WHERE run_id = ?1 AND sample_id BETWEEN ?2 AND ?3;

-- The speed labels of the verifications (those of each sample's newest are kept).
-- name: outcome_speed
SELECT v.sample_id, v.id, sp.speedup, sp.pass_perf, sp.timed, sp.flags_json, sp.kernel_share
FROM verifications v JOIN verification_speed sp ON sp.verification_id = v.id
WHERE v.run_id = ?1 AND v.sample_id BETWEEN ?2 AND ?3;

-- The cross-compile results of the verifications (those of each sample's newest are kept).
-- name: outcome_targets
SELECT v.sample_id, v.id, t.target, t.result
FROM verifications v JOIN verification_targets t ON t.verification_id = v.id
WHERE v.run_id = ?1 AND v.sample_id BETWEEN ?2 AND ?3;

-- The run's newest change number (migration 0050's outcome_changes): outcomes read after it
-- hold every change up to it. Read from its two sources (migration 0053: the jobs' numbers and
-- the run's last deletion), each an index's last entry, rather than through the view (which
-- would read every job's entry of the run to find the largest).
-- name: outcome_change_mark
SELECT max(coalesce((SELECT max(change_seq) FROM jobs WHERE run_id = ?1), 0),
           coalesce((SELECT seq FROM outcome_changes_gone WHERE run_id = ?1), 0));

-- The samples of run ?1 changed after change number ?2, with their numbers (sample 0: a job
-- was deleted).
-- name: outcome_changes_since
SELECT sample_id, seq FROM outcome_changes WHERE run_id = ?1 AND seq > ?2;

-- How many jobs run ?1 has (migration 0012's trigger-kept counts): the rows a whole run's read
-- gives, read first to make room for them at once.
-- name: run_job_total
SELECT coalesce(sum(n), 0) FROM run_job_counts WHERE run_id = ?1;
