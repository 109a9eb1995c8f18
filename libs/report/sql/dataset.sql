-- Training rows (dataset.hpp): what each answer of a sample was asked and answered.

-- Every answer of a sample in a run that the pipeline accepted (status ok), oldest first, with
-- the exact request the model was sent: the body the LLM client stored for the call (llm_calls,
-- by the call's identity; a replayed call points at the original row, which holds it), else the
-- stage output's copy of it. The last column: 1 when the answer holds a round's code (the view
-- code_outputs, migration 0021).
-- name: dataset_answers
SELECT o.stage, o.repair_round, o.prompt_version, o.prompt_sha256,
       coalesce((SELECT kf_text(c.request_text) FROM llm_calls c
                 WHERE c.request_sha256 = o.request_sha256 AND c.request_text IS NOT NULL
                 ORDER BY c.id DESC LIMIT 1),
                kf_text(o.request_text)),
       kf_text(o.parsed_text), kf_text(o.reasoning_text),
       o.id IN (SELECT k.id FROM code_outputs k WHERE k.run_id = ?1 AND k.sample_id = ?2)
FROM stage_outputs o
WHERE o.run_id = ?1 AND o.sample_id = ?2 AND o.status = 'ok'  -- not vocabulary: an answer's status
ORDER BY o.id;

-- The verdict of each round of a sample's code (0: the first generation; the view
-- latest_round_verification, migration 0025), by round.
-- name: dataset_round_verdicts
SELECT v.repair_round, v.verdict, v.flags_json, v.detail
FROM latest_round_verification v
WHERE v.run_id = ?1 AND v.sample_id = ?2
ORDER BY v.repair_round;

-- What a sample's LLM calls cost in a run, every attempt counted.
-- name: dataset_sample_cost
SELECT coalesce(sum(cost_usd), 0), coalesce(sum(prompt_tokens), 0),
       coalesce(sum(completion_tokens), 0)
FROM stage_outputs WHERE run_id = ?1 AND sample_id = ?2;

-- What the whole run cost, for the dataset card.
-- name: dataset_run_cost
SELECT coalesce(sum(cost_usd), 0), coalesce(sum(prompt_tokens), 0),
       coalesce(sum(completion_tokens), 0), count(*)
FROM stage_outputs WHERE run_id = ?1;
