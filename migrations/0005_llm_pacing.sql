-- kforge schema, version 5: what the LLM client's run-level signals need.

-- A provider-requested pause of every request (a long Retry-After, e.g. a 503 with
-- Retry-After: 90), as the daemon last saw it: until when (wall ms; 0: none) and why, e.g.
-- "provider asked to wait until 14:03:27 (HTTP 503)". `kforge status` shows it while it lasts.
ALTER TABLE runs ADD COLUMN wait_until_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN wait_reason TEXT;

-- What a run paid the provider is summed from its calls (their tag starts "run=TAG "); replayed
-- calls are counted apart.
CREATE INDEX llm_calls_tag ON llm_calls(tag);
