-- The viewer (kforge serve): what its pages read beyond the outcomes and a sample's rows.

-- Every run, newest first, with its jobs' progress and cost from the trigger-kept counts
-- (migration 0012): no page of the runs list walks a run's rows.
-- name: viewer_runs
SELECT r.id, r.tag, r.pipeline, r.model, r.state, r.created_ms, r.updated_ms,
       coalesce((SELECT sum(n) FROM run_job_counts c WHERE c.run_id = r.id), 0),
       coalesce((SELECT sum(n) FROM run_job_counts c
                 WHERE c.run_id = r.id AND c.state IN ('done', 'failed')), 0),  -- not vocabulary: job states
       coalesce((SELECT sum(cost_usd) FROM run_output_totals t WHERE t.run_id = r.id), 0),
       coalesce((SELECT sum(prompt_tokens + completion_tokens) FROM run_output_totals t
                 WHERE t.run_id = r.id), 0)
FROM runs r ORDER BY r.created_ms DESC, r.id DESC;

-- Where a run's open jobs are: state and stage of the jobs that have not ended, with counts.
-- name: viewer_run_phase
SELECT stage, state, n FROM run_job_counts
WHERE run_id = ?1 AND state NOT IN ('done', 'failed', 'cancelled') AND n > 0  -- not vocabulary: job states
ORDER BY n DESC, stage;

-- The verdict of each sample of a run (the view latest_verification, migration 0025), counted by
-- verdict, and how many of each carry no flag (passed with none: verified).
-- name: viewer_run_verdicts
SELECT v.verdict, count(*), sum(json_array_length(v.flags_json) = 0) FROM latest_verification v
WHERE v.run_id = ?1
GROUP BY v.verdict ORDER BY count(*) DESC, v.verdict;

-- The flags on the verdict of each sample of a run, counted by flag (the runs page shows the
-- quality flags and the two that say the verdict is the verifier's own doing, environment and
-- infrastructure, apart).
-- name: viewer_run_flags
SELECT f.value, count(*) FROM latest_verification v, json_each(v.flags_json) f
WHERE v.run_id = ?1
GROUP BY f.value ORDER BY count(*) DESC, f.value;

-- A verification's cross-compile results (migration 0014), by target.
-- name: viewer_targets
SELECT target, result, error, kernel FROM verification_targets
WHERE verification_id = ?1 ORDER BY target;

-- What changes when anything the outcomes of a run read changes (ViewCache): its jobs by state
-- and stage, its stage outputs by stage and status with the newest, and its verdicts by kind
-- (migration 0012's counts), when the near-duplicate groups were last computed, and the run's
-- newest change number (migration 0050: any change to what a sample's outcome reads, whichever
-- writer made it, moves it, a job's update included (migration 0054: it replaces the jobs'
-- newest update); read from its sources, migration 0053, as outcome_change_mark is).
-- name: viewer_run_fingerprint
SELECT (SELECT group_concat(state || '/' || stage || '=' || n) FROM run_job_counts
        WHERE run_id = ?1),
       (SELECT group_concat(stage || '/' || status || '=' || n || '@' || last_ms)
        FROM run_output_totals WHERE run_id = ?1),
       coalesce((SELECT group_concat(verdict || '=' || n) FROM run_verdict_counts
                 WHERE run_id = ?1), '') || '/' || coalesce((SELECT computed_ms FROM dedup_state), '-'),
       max(coalesce((SELECT max(change_seq) FROM jobs WHERE run_id = ?1), 0),
           coalesce((SELECT seq FROM outcome_changes_gone WHERE run_id = ?1), 0));

-- The samples of a run one of whose texts holds ?2, a quoted FTS5 string of the word ?3
-- (search_text, migration 0036): the sample's own texts (no run; indexed with its first job,
-- migration 0051, so every sample a run holds is there) and the run's answers and verdicts. Only
-- the matches' rowids are read from the index (id * 4 + kind, the row the text came from):
-- reading their run_id or sample_id would read each match's stored text as well, and a word in
-- most samples matches tens of thousands of texts. The rows they came from say the run and the
-- sample. The run's answers stored since kforged last indexed (above the watermark, migration
-- 0052) are not in the index yet: their texts are read and matched here by kf_search_holds,
-- which runs the index's own tokenizer, so they are found as the index would find them.
-- name: viewer_search
WITH m(id) AS MATERIALIZED (
  SELECT rowid FROM search_text WHERE search_text MATCH ?2
  UNION ALL
  SELECT text_id FROM search_output_texts
  WHERE id > (SELECT outputs_upto FROM search_indexed) AND run_id = ?1 AND kf_search_holds(body, ?3))
SELECT m.id / 4 FROM m WHERE m.id % 4 = 0
UNION
SELECT o.sample_id FROM m JOIN stage_outputs o ON o.id = m.id / 4
WHERE m.id % 4 = 1 AND o.run_id = ?1
UNION
SELECT v.sample_id FROM m JOIN verifications v ON v.id = m.id / 4
WHERE m.id % 4 = 2 AND v.run_id = ?1;

-- A sample's descriptions (the instruction texts it was imported with).
-- name: viewer_sample_description
SELECT description_1, description_2 FROM samples WHERE id = ?1;

-- The other runs that hold sample ?1 (not run ?2), newest first.
-- name: viewer_sample_other_runs
SELECT r.tag FROM jobs j JOIN runs r ON r.id = j.run_id
WHERE j.sample_id = ?1 AND j.run_id <> ?2
ORDER BY r.created_ms DESC, r.id DESC;

-- The near-duplicate group of sample ?1 at the last kforge corpus dedup (dedup_groups): each
-- member with its key, the member it is most similar to and how similar, and whether run ?2
-- holds it; the group's id first.
-- name: viewer_sample_group
SELECT m.group_id, m.sample_id, s.key, m.similarity, m.exact, l.key,
       EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = ?2 AND j.sample_id = m.sample_id)
FROM dedup_groups g
JOIN dedup_groups m ON m.group_id = g.group_id
JOIN samples s ON s.id = m.sample_id
LEFT JOIN samples l ON l.id = m.linked_to
WHERE g.sample_id = ?1
ORDER BY m.sample_id
LIMIT 201;

-- When the near-duplicate groups were last computed (kforge corpus dedup): a new grouping may
-- change any run's groups, so a run's kept outcomes are then read whole again.
-- name: viewer_dedup_stamp
SELECT (SELECT computed_ms FROM dedup_state);
