-- kforge schema, version 28: the scoring endpoint (POST /v1/score on kforged; docs/OPERATIONS.md
-- "Scoring for RL").
--
-- Each scored item is a job of a run of pipeline 'score' named by the client's tag (the pipeline
-- writes those, libs/pipeline score_jobs), so rollouts are samples that kforge export writes. A
-- batch is what one request asked for; its items answer in the request's order from the
-- verifications their jobs got, or end without one (deadline, cancelled, failed).
CREATE TABLE score_batches (
  id                 INTEGER PRIMARY KEY,
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  reward             TEXT NOT NULL,                 -- the preset (libs/score reward.hpp)
  reward_params_json TEXT NOT NULL DEFAULT '{}',
  deadline_ms        INTEGER NOT NULL,              -- wall clock: every item has ended by then
  created_ms         INTEGER NOT NULL,
  ended_ms           INTEGER                        -- when its last item ended
);

-- One item of a batch. content_key: SHA-256 of what decides its verdict (code, wrapper, test,
-- checks, harness, GPU model): the verdict cache's key, and the sample's key ("score/" || it).
-- outcome NULL: still waiting. 'judged': verification_id answers it (cached: an earlier
-- verification did); 'deadline': the batch's deadline passed first; 'cancelled': the client went
-- away; 'failed': the job ended without a verdict (detail says why).
CREATE TABLE score_items (
  batch_id        INTEGER NOT NULL REFERENCES score_batches(id) ON DELETE CASCADE,
  idx             INTEGER NOT NULL,
  item_id         TEXT NOT NULL,
  content_key     TEXT NOT NULL,
  job_id          INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  verification_id INTEGER REFERENCES verifications(id) ON DELETE SET NULL,
  cached          INTEGER NOT NULL DEFAULT 0,
  outcome         TEXT CHECK (outcome IN ('judged', 'deadline', 'cancelled', 'failed')),
  detail          TEXT,
  created_ms      INTEGER NOT NULL,
  ended_ms        INTEGER,
  PRIMARY KEY (batch_id, idx)
);
CREATE INDEX score_items_open ON score_items(job_id) WHERE outcome IS NULL;
CREATE INDEX score_batches_open ON score_batches(deadline_ms) WHERE ended_ms IS NULL;
