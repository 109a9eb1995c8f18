-- kforge schema, version 26: an LLM call names its run in a column.
--
-- A run's calls were found by parsing their log label ("run=TAG sample=... stage=...", GLOB and
-- substr in 0012 and 0018). The LLM client now stores the run the asker gave it
-- (llm::ChatRequest::run) in llm_calls.run_tag when it stores the call: NULL for a call no run
-- asked (kforge verify's, a benchmark's). The label stays free text for logs.
-- run_call_totals is keyed by the run's tag itself (it was "run=TAG").
ALTER TABLE llm_calls ADD COLUMN run_tag TEXT;

-- The calls stored before this version: their run from their label, the one place it is parsed.
UPDATE llm_calls SET run_tag = substr(tag, 5, instr(tag, ' sample=') - 5)
WHERE tag GLOB 'run=* sample=*';

UPDATE run_call_totals SET run_tag = substr(run_tag, 5) WHERE run_tag GLOB 'run=*';

DROP TRIGGER run_call_totals_insert;
CREATE TRIGGER run_call_totals_insert AFTER INSERT ON llm_calls
WHEN NEW.run_tag IS NOT NULL BEGIN
  INSERT INTO run_call_totals
  VALUES (NEW.run_tag, NEW.status = 'replayed', 1, NEW.prompt_tokens, NEW.completion_tokens,
          CASE WHEN NEW.status = 'replayed'
               THEN coalesce((SELECT o.cost_usd FROM llm_calls o WHERE o.id = NEW.replay_of), 0)
               ELSE NEW.cost_usd END)
  ON CONFLICT (run_tag, replayed) DO UPDATE SET
    n = n + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_usd = cost_usd + excluded.cost_usd;
END;

DROP TRIGGER run_call_totals_delete;
CREATE TRIGGER run_call_totals_delete AFTER DELETE ON llm_calls
WHEN OLD.run_tag IS NOT NULL BEGIN
  UPDATE run_call_totals SET
    n = n - 1, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
    completion_tokens = completion_tokens - OLD.completion_tokens,
    cost_usd = cost_usd - CASE WHEN OLD.status = 'replayed'
      THEN coalesce((SELECT o.cost_usd FROM llm_calls o WHERE o.id = OLD.replay_of), 0)
      ELSE OLD.cost_usd END
  WHERE run_tag = OLD.run_tag AND replayed = (OLD.status = 'replayed');
END;
