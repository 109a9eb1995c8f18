-- kforge schema, version 21: "the answer that holds a round's code" by the stage's kind, not its
-- name.
--
-- Version 19's code_outputs named the stages generate and repair, so a pipeline whose code stage
-- has another name (prompts/<version>/pipeline.yaml) had no code for export, debug, retry or the
-- verifier. A run records each of its stages' kind in prompts_json ({STAGE: {..., "kind"}},
-- migration 0017); every query that asks what a stage's answer holds reads it through these:
--   stage_output_kinds  each stage output's id, run, sample, job, stage, status, round and
--                       parsed answer, with its stage's kind as the run recorded it (analysis,
--                       code, repair: states.hpp; NULL: none).
--                       A lookup per row, so a query by run and sample keeps its index (a run
--                       whose prompts_json is not JSON, which kforge never writes, is an error
--                       here as in report's find_run).
--   code_outputs        as in version 19: the ok answers that hold a round's code, now those of
--                       a stage of kind code (round 0) or repair (a corrected kernel_wrapper and
--                       unitest_code; an "unfixable" answer holds none).
DROP VIEW code_outputs;

CREATE VIEW stage_output_kinds AS
SELECT o.id, o.run_id, o.sample_id, o.job_id, o.stage, o.status, o.repair_round, o.parsed_text,
       (SELECT json_extract(r.prompts_json, '$."' || o.stage || '".kind') FROM runs r
        WHERE r.id = o.run_id) AS kind
FROM stage_outputs o;

CREATE VIEW code_outputs AS
SELECT id, run_id, sample_id, job_id, stage, repair_round, parsed_text FROM stage_output_kinds
WHERE status = 'ok' AND kind IN ('code', 'repair')
  AND json_extract(kf_text(parsed_text), '$.kernel_wrapper') IS NOT NULL;
