-- kforge schema, version 27: infrastructure requeues of a job at the verifier are counted and
-- capped (verifier.max_requeues), with a growing wait between them (jobs.not_before_ms, which
-- the verifier's lease now honours as the LLM stages' do); past the cap the job ends with an
-- `error` verdict naming the cause.
--   jobs.verify_requeues  infrastructure failures of the job's current verification
ALTER TABLE jobs ADD COLUMN verify_requeues INTEGER NOT NULL DEFAULT 0;
