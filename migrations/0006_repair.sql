-- kforge schema, version 6: repair rounds. A sample whose verdict is not "verified" goes back to
-- the LLM with the verifier's evidence, up to the run's repair_rounds (runs.params_json). Round 0
-- is the first generation; round N the N-th repair. A job's current round, and the round each
-- stage output and each verdict belongs to, are recorded so that every round is a checkpoint of
-- its own and a verdict always names the code it judged.
ALTER TABLE jobs ADD COLUMN repair_round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stage_outputs ADD COLUMN repair_round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE verifications ADD COLUMN repair_round INTEGER NOT NULL DEFAULT 0;
