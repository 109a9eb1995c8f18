-- kforge schema, version 44: a run's outcomes (report's run_outcomes, the viewer's samples and
-- A/B pages, kforge compare) read from two covering indexes instead of the tables' rows.
--
-- verifications_newest: per run and sample (and repair round), each verification with what the
-- outcomes read of the newest one: its verdict, flags, detail and kernel-mutant score, and the
-- duration summed over all. A verification's row holds its report and script before the
-- columns added since (the kernel-mutant score lies after both), so reading it from the table
-- reads those too; from this index a run's verdicts are one ordered range, and "a sample's
-- newest verification" (the view latest_verification) the last entry of its sample.
CREATE INDEX verifications_newest ON verifications(
  run_id, sample_id, repair_round, id, verdict, duration_ms, kernel_killed, kernel_applicable,
  flags_json, detail);

-- stage_outputs_sums: per run and sample (and repair round), each stage output with what the
-- outcomes sum (tokens, cost, latency, mended answers) and its stage and status.
CREATE INDEX stage_outputs_sums ON stage_outputs(
  run_id, sample_id, repair_round, stage, status, prompt_tokens, completion_tokens, cost_usd,
  latency_ms, reasoning_tokens, cached_prompt_tokens, mended);
