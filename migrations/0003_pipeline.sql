-- kforge schema, version 3: what the pipeline daemon needs beyond version 1.

-- A queued job becomes leasable at not_before_ms (a retry's backoff); 0: at once.
ALTER TABLE jobs ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;

-- The history of each job and run: every error of every attempt (retried or final), lease
-- expiries, releases, and run-level events (a run refused because a prompt changed, paused after
-- repeated provider errors). Append-only; `kforge status` shows recent ones by kind.
CREATE TABLE job_events (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_id     INTEGER REFERENCES jobs(id) ON DELETE CASCADE,   -- NULL for a run-level event
  sample_id  INTEGER REFERENCES samples(id),
  stage      TEXT,
  attempt    INTEGER,
  level      TEXT NOT NULL CHECK (level IN ('info', 'warn', 'error')),
  kind       TEXT NOT NULL,     -- e.g. 'llm:timeout', 'parse', 'rejected:no_kernel_launch',
                                -- 'failed', 'lease_expired', 'prompt_changed', 'paused'
  message    TEXT NOT NULL,
  owner      TEXT,              -- the daemon that recorded it
  created_ms INTEGER NOT NULL
);
CREATE INDEX job_events_run ON job_events(run_id, created_ms);
CREATE INDEX job_events_job ON job_events(job_id);

-- A job's earlier attempts at a stage (retry decisions, the answer a retry corrects).
CREATE INDEX stage_outputs_job_stage ON stage_outputs(job_id, stage);
