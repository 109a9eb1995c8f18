-- kforge schema, version 19: one definition of "the answer that holds a round's code".
--
-- A job's code is written by an LLM stage: generate's answer at round 0, and each repair round's
-- corrected kernel_wrapper and unitest_code. An answer that failed, or a repair that answered
-- "unfixable", holds none. Every query that needs the code reads this view:
--   - the code of round N (pipeline round_code, what the verifier runs): the newest row of the
--     job at repair_round N;
--   - the code the job holds now (kforge retry --stage verify): the job's newest row. After a
--     retry from generate, a new round-0 generation is newer than the earlier repair rounds;
--   - what an export shows (report export_rows, debug): the newest row, or a generation attempt
--     newer than it (a failed generation is shown as the sample's latest attempt).
CREATE VIEW code_outputs AS
SELECT id, run_id, sample_id, job_id, stage, repair_round, parsed_text FROM stage_outputs
WHERE status = 'ok' AND stage IN ('generate', 'repair')
  AND json_extract(kf_text(parsed_text), '$.kernel_wrapper') IS NOT NULL;
