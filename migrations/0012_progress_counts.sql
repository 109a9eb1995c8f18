-- kforge schema, version 12: progress from kept counts, not from walking stored rows.
--
-- `kforge status`, the daemon's STATUS= line (every 2 s) and /metrics (every 1 s) read these
-- small tables instead of counting jobs, stage outputs, LLM calls and verdicts: an idle daemon
-- over a large history then does no work that grows with it. Triggers keep the counts in the
-- same transaction as the rows they count, so a crash cannot leave them apart; this migration
-- fills them from the rows already stored. A rebuilt table (CREATE new, copy, DROP, RENAME)
-- loses its triggers: a later migration doing that must create them again.

-- Jobs by run, state and stage.
CREATE TABLE run_job_counts (
  run_id INTEGER NOT NULL,
  state  TEXT NOT NULL,
  stage  TEXT NOT NULL,
  n      INTEGER NOT NULL,
  PRIMARY KEY (run_id, state, stage)
) WITHOUT ROWID;

-- Stage outputs by run, stage and status, with their usage; first_ms/last_ms: the oldest and
-- newest created_ms (not lowered by a deletion).
CREATE TABLE run_output_totals (
  run_id            INTEGER NOT NULL,
  stage             TEXT NOT NULL,
  status            TEXT NOT NULL,
  n                 INTEGER NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_usd          REAL NOT NULL,
  first_ms          INTEGER NOT NULL,
  last_ms           INTEGER NOT NULL,
  PRIMARY KEY (run_id, stage, status)
) WITHOUT ROWID;

-- LLM calls by the run part of their tag ("run=TAG", from "run=TAG sample=... stage=..."),
-- replayed apart from network calls. Calls tagged otherwise are not counted.
CREATE TABLE run_call_totals (
  run_tag           TEXT NOT NULL,
  replayed          INTEGER NOT NULL,
  n                 INTEGER NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_usd          REAL NOT NULL,
  PRIMARY KEY (run_tag, replayed)
) WITHOUT ROWID;

-- Verdicts by run.
CREATE TABLE run_verdict_counts (
  run_id  INTEGER NOT NULL,
  verdict TEXT NOT NULL,
  n       INTEGER NOT NULL,
  PRIMARY KEY (run_id, verdict)
) WITHOUT ROWID;

-- Errors and warnings of a run by time, without reading the info events between them.
CREATE INDEX job_events_run_level ON job_events(run_id, level, created_ms, kind);

INSERT INTO run_job_counts (run_id, state, stage, n)
SELECT run_id, state, stage, count(*) FROM jobs GROUP BY run_id, state, stage;

INSERT INTO run_output_totals
SELECT run_id, stage, status, count(*), sum(prompt_tokens), sum(completion_tokens), sum(cost_usd),
       min(created_ms), max(created_ms)
FROM stage_outputs GROUP BY run_id, stage, status;

INSERT INTO run_call_totals
SELECT substr(tag, 1, instr(tag, ' sample=') - 1), status = 'replayed', count(*),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd)
FROM llm_calls WHERE tag GLOB 'run=* sample=*' GROUP BY 1, 2;

INSERT INTO run_verdict_counts (run_id, verdict, n)
SELECT run_id, verdict, count(*) FROM verifications GROUP BY run_id, verdict;

CREATE TRIGGER run_job_counts_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO run_job_counts (run_id, state, stage, n) VALUES (NEW.run_id, NEW.state, NEW.stage, 1)
  ON CONFLICT (run_id, state, stage) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_job_counts_delete AFTER DELETE ON jobs BEGIN
  UPDATE run_job_counts SET n = n - 1
  WHERE run_id = OLD.run_id AND state = OLD.state AND stage = OLD.stage;
END;

CREATE TRIGGER run_job_counts_update AFTER UPDATE OF run_id, state, stage ON jobs
WHEN OLD.run_id IS NOT NEW.run_id OR OLD.state IS NOT NEW.state OR OLD.stage IS NOT NEW.stage
BEGIN
  UPDATE run_job_counts SET n = n - 1
  WHERE run_id = OLD.run_id AND state = OLD.state AND stage = OLD.stage;
  INSERT INTO run_job_counts (run_id, state, stage, n) VALUES (NEW.run_id, NEW.state, NEW.stage, 1)
  ON CONFLICT (run_id, state, stage) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_output_totals_insert AFTER INSERT ON stage_outputs BEGIN
  INSERT INTO run_output_totals
  VALUES (NEW.run_id, NEW.stage, NEW.status, 1, NEW.prompt_tokens, NEW.completion_tokens,
          NEW.cost_usd, NEW.created_ms, NEW.created_ms)
  ON CONFLICT (run_id, stage, status) DO UPDATE SET
    n = n + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_usd = cost_usd + excluded.cost_usd, first_ms = min(first_ms, excluded.first_ms),
    last_ms = max(last_ms, excluded.last_ms);
END;

CREATE TRIGGER run_output_totals_delete AFTER DELETE ON stage_outputs BEGIN
  UPDATE run_output_totals SET
    n = n - 1, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
    completion_tokens = completion_tokens - OLD.completion_tokens,
    cost_usd = cost_usd - OLD.cost_usd
  WHERE run_id = OLD.run_id AND stage = OLD.stage AND status = OLD.status;
END;

CREATE TRIGGER run_call_totals_insert AFTER INSERT ON llm_calls
WHEN NEW.tag GLOB 'run=* sample=*' BEGIN
  INSERT INTO run_call_totals
  VALUES (substr(NEW.tag, 1, instr(NEW.tag, ' sample=') - 1), NEW.status = 'replayed', 1,
          NEW.prompt_tokens, NEW.completion_tokens, NEW.cost_usd)
  ON CONFLICT (run_tag, replayed) DO UPDATE SET
    n = n + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_usd = cost_usd + excluded.cost_usd;
END;

CREATE TRIGGER run_call_totals_delete AFTER DELETE ON llm_calls
WHEN OLD.tag GLOB 'run=* sample=*' BEGIN
  UPDATE run_call_totals SET
    n = n - 1, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
    completion_tokens = completion_tokens - OLD.completion_tokens,
    cost_usd = cost_usd - OLD.cost_usd
  WHERE run_tag = substr(OLD.tag, 1, instr(OLD.tag, ' sample=') - 1)
    AND replayed = (OLD.status = 'replayed');
END;

CREATE TRIGGER run_verdict_counts_insert AFTER INSERT ON verifications BEGIN
  INSERT INTO run_verdict_counts (run_id, verdict, n) VALUES (NEW.run_id, NEW.verdict, 1)
  ON CONFLICT (run_id, verdict) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_verdict_counts_delete AFTER DELETE ON verifications BEGIN
  UPDATE run_verdict_counts SET n = n - 1 WHERE run_id = OLD.run_id AND verdict = OLD.verdict;
END;

-- A deleted run takes its counts along (its rows go by ON DELETE CASCADE).
CREATE TRIGGER run_counts_run_delete AFTER DELETE ON runs BEGIN
  DELETE FROM run_job_counts WHERE run_id = OLD.id;
  DELETE FROM run_output_totals WHERE run_id = OLD.id;
  DELETE FROM run_verdict_counts WHERE run_id = OLD.id;
END;
