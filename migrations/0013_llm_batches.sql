-- kforge schema, version 13: batch mode (llm.mode: batch).
--
-- A batch is recorded before each step at the provider and after it, so a killed daemon knows
-- where it stopped and never pays for a line twice:
--   uploading  the row and its lines exist; the input file may or may not be uploaded
--              (a restart looks for the file by its name, kforge-KEY.jsonl, before uploading)
--   uploaded   input_file_id is known; the batch may or may not be created (a restart lists the
--              provider's batches and adopts the one whose metadata.kforge_batch is KEY)
--   submitted  batch_id is known; polled until the provider ends it
--   done       its output and error files are downloaded and every line's outcome is stored
-- Lines are the requests, by the client's identity (custom_id = request_sha256). An answered
-- line is handed to the client, which records it in llm_calls like any answer; a later request
-- with the same identity is answered from there, so an output is applied once.
CREATE TABLE llm_batches (
  id              INTEGER PRIMARY KEY,
  key             TEXT NOT NULL UNIQUE,   -- kforge's name for it, sent as metadata.kforge_batch
  url             TEXT NOT NULL,          -- the chat completions URL its lines are for
  model           TEXT NOT NULL,
  state           TEXT NOT NULL
                  CHECK (state IN ('uploading', 'uploaded', 'submitted', 'done')),
  provider_status TEXT,                   -- validating, in_progress, completed, expired, ...
  input_file_id   TEXT,
  batch_id        TEXT,
  output_file_id  TEXT,
  error_file_id   TEXT,
  lines           INTEGER NOT NULL,
  bytes           INTEGER NOT NULL,
  completed       INTEGER NOT NULL DEFAULT 0,  -- the provider's request_counts
  failed          INTEGER NOT NULL DEFAULT 0,
  poll_errors     INTEGER NOT NULL DEFAULT 0,
  error           TEXT,                   -- why the batch ended without every answer
  created_ms      INTEGER NOT NULL,
  submitted_ms    INTEGER,
  finished_ms     INTEGER,
  updated_ms      INTEGER NOT NULL
);
CREATE INDEX llm_batches_open ON llm_batches(state) WHERE state <> 'done';

CREATE TABLE llm_batch_lines (
  batch        INTEGER NOT NULL REFERENCES llm_batches(id),
  custom_id    TEXT NOT NULL,             -- the request's identity (llm_calls.request_sha256)
  tag          TEXT NOT NULL DEFAULT '',
  -- pending: sent, no outcome yet; answered: the provider's answer is in response_raw;
  -- failed: no answer (error says why); it goes into a later batch or interactively;
  -- applied: handed to the client, which recorded it.
  state        TEXT NOT NULL CHECK (state IN ('pending', 'answered', 'failed', 'applied')),
  request_json TEXT,                      -- until the input file is uploaded
  http_status  INTEGER,
  response_raw TEXT,                      -- until the client has recorded the answer
  error        TEXT,
  PRIMARY KEY (batch, custom_id)
);
CREATE INDEX llm_batch_lines_custom ON llm_batch_lines(custom_id);
