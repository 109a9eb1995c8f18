-- kforge schema, version 1.
-- Times are integer milliseconds since the Unix epoch (UTC). JSON columns hold UTF-8 JSON text.

-- Imported corpus records. `record_json` is the original record with every field, in order.
CREATE TABLE samples (
  id            INTEGER PRIMARY KEY,
  key           TEXT NOT NULL UNIQUE,
  code_sha256   TEXT NOT NULL,
  code          TEXT NOT NULL,
  description_1 TEXT,
  description_2 TEXT,
  record_json   TEXT NOT NULL,
  source        TEXT NOT NULL,          -- the file it was imported from
  source_index  INTEGER NOT NULL,       -- its record index in that file
  created_ms    INTEGER NOT NULL,
  updated_ms    INTEGER NOT NULL
);
CREATE INDEX samples_code_sha256 ON samples(code_sha256);

-- A tagged output set: one pipeline version, one model, fixed prompt texts.
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  tag          TEXT NOT NULL UNIQUE,
  pipeline     TEXT NOT NULL,           -- 'v1' | 'v2'
  model        TEXT NOT NULL,
  params_json  TEXT NOT NULL DEFAULT '{}',   -- sampling parameters and limits it was created with
  prompts_json TEXT NOT NULL DEFAULT '{}',   -- {stage: {"version": ..., "sha256": ...}}
  state        TEXT NOT NULL DEFAULT 'active'
               CHECK (state IN ('active', 'paused', 'cancelled', 'finished')),
  created_ms   INTEGER NOT NULL,
  updated_ms   INTEGER NOT NULL
);

-- One job per run and sample. `stage` is the next thing to do; `state` says whether it can be
-- leased ('queued'), is held ('leased', with owner and expiry), waits for the verifier
-- ('verify_queued' / 'verifying'), or has ended ('done', 'failed', 'cancelled').
CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  sample_id        INTEGER NOT NULL REFERENCES samples(id),
  state            TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'leased', 'verify_queued', 'verifying', 'done',
                                    'failed', 'cancelled')),
  stage            TEXT NOT NULL,       -- 'analyze' | 'generate' | 'verify' | 'done'
  attempts         INTEGER NOT NULL DEFAULT 0,   -- attempts at the current stage
  lease_owner      TEXT,
  lease_expires_ms INTEGER,
  error_kind       TEXT,                -- last error's kind, for a failed or retried job
  error            TEXT,
  created_ms       INTEGER NOT NULL,
  updated_ms       INTEGER NOT NULL,
  UNIQUE (run_id, sample_id)
);
CREATE INDEX jobs_run_state ON jobs(run_id, state);
CREATE INDEX jobs_state_lease ON jobs(state, lease_expires_ms);

-- Every stage attempt: the exact request, the raw response, the parsed JSON and its cost.
CREATE TABLE stage_outputs (
  id                INTEGER PRIMARY KEY,
  job_id            INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  sample_id         INTEGER NOT NULL REFERENCES samples(id),
  stage             TEXT NOT NULL,
  attempt           INTEGER NOT NULL,
  status            TEXT NOT NULL
                    CHECK (status IN ('ok', 'llm_error', 'parse_error', 'rejected')),
  prompt_version    TEXT NOT NULL,
  prompt_sha256     TEXT NOT NULL,
  request_sha256    TEXT,
  request_json      TEXT NOT NULL,
  response_raw      TEXT,
  parsed_json       TEXT,
  error_kind        TEXT,
  error             TEXT,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd          REAL NOT NULL DEFAULT 0,
  latency_ms        INTEGER NOT NULL DEFAULT 0,
  created_ms        INTEGER NOT NULL
);
CREATE INDEX stage_outputs_run_sample ON stage_outputs(run_id, sample_id, stage);

-- Every verification attempt of a generated sample.
CREATE TABLE verifications (
  id          INTEGER PRIMARY KEY,
  job_id      INTEGER REFERENCES jobs(id) ON DELETE CASCADE,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  sample_id   INTEGER NOT NULL REFERENCES samples(id),
  attempt     INTEGER NOT NULL DEFAULT 1,
  verdict     TEXT NOT NULL
              CHECK (verdict IN ('passed', 'failed', 'error', 'timeout', 'crashed', 'invalid',
                                 'skipped')),
  flags_json  TEXT NOT NULL DEFAULT '[]',   -- e.g. ["no_kernel_launch"]
  detail      TEXT,                         -- one line: the assertion, exception or signal
  result_json TEXT,                         -- the harness's full report
  script      TEXT,                         -- the exact script that ran
  stderr_tail TEXT,
  duration_ms INTEGER NOT NULL DEFAULT 0,
  device      TEXT,
  created_ms  INTEGER NOT NULL
);
CREATE INDEX verifications_run_sample ON verifications(run_id, sample_id);
