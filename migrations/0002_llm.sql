-- kforge schema, version 2: the LLM client's audit log.
-- One row per logical call (all its HTTP attempts), written before the caller sees the result.
-- A row with status 'ok' is a good response: a later request with the same request_sha256 is
-- answered from it with no network call. The API key is never stored: request_json is the body
-- that was POSTed; headers are not recorded.
CREATE TABLE llm_calls (
  id                INTEGER PRIMARY KEY,
  request_sha256    TEXT NOT NULL,          -- identity: endpoint, model, messages, sampling
  tag               TEXT NOT NULL DEFAULT '',
  url               TEXT NOT NULL,
  model             TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('ok', 'error', 'replayed')),
  error_kind        TEXT,                   -- 'http', 'timeout', 'parse', 'length', ...
  error             TEXT,
  http_status       INTEGER,                -- of the last attempt (NULL: no response)
  attempts          INTEGER NOT NULL DEFAULT 0,
  latency_ms        INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd          REAL NOT NULL DEFAULT 0,
  finish_reason     TEXT,
  request_json      TEXT,                   -- NULL for a replay (the original row holds it)
  response_raw      TEXT,                   -- the last response body (NULL for a replay)
  replay_of         INTEGER REFERENCES llm_calls(id),
  created_ms        INTEGER NOT NULL
);
CREATE INDEX llm_calls_request ON llm_calls(request_sha256, status);
CREATE INDEX llm_calls_created ON llm_calls(created_ms);
