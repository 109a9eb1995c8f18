-- kforge schema, version 21: "the answer that holds a round's code" by the stage's kind, not its
-- name.
--
-- Version 19's code_outputs named the stages generate and repair, so a pipeline whose code stage
-- has another name (prompts/<version>/pipeline.yaml) had no code for export, debug, retry or the
-- verifier. A run records each of its stages' kind in prompts_json ({STAGE: {..., "kind"}},
-- migration 0017); the view run_stage_kinds reads them as rows, and every query that asks what a
-- stage's answer holds joins it:
--   run_stage_kinds  (run_id, stage, kind): one row per recorded stage with a kind (analysis,
--                    code, repair; states.hpp). The retry template has none and no row.
--   code_outputs     as in version 19: the ok answers that hold a round's code, now those of a
--                    stage of kind code (round 0) or repair (a corrected kernel_wrapper and
--                    unitest_code; an "unfixable" answer holds none).
DROP VIEW code_outputs;

CREATE VIEW run_stage_kinds AS
SELECT r.id AS run_id, s.key AS stage, json_extract(s.value, '$.kind') AS kind
FROM runs r,
     json_each(CASE WHEN json_valid(r.prompts_json) THEN r.prompts_json ELSE '{}' END) s
WHERE s.type = 'object' AND json_type(s.value, '$.kind') = 'text';

CREATE VIEW code_outputs AS
SELECT o.id, o.run_id, o.sample_id, o.job_id, o.stage, o.repair_round, o.parsed_text
FROM stage_outputs o
JOIN run_stage_kinds k ON k.run_id = o.run_id AND k.stage = o.stage
WHERE o.status = 'ok' AND k.kind IN ('code', 'repair')
  AND json_extract(kf_text(o.parsed_text), '$.kernel_wrapper') IS NOT NULL;
