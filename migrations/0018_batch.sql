-- kforge schema, version 17: batch mode's continuation lines and provider files.
--
-- A cut answer (finish_reason length) is asked again with a larger max_tokens as a new line:
-- its custom_id is a new identity (the continuation's, libs/llm/src/identity.cpp), and
-- `continues` names the call it answers (llm_calls.request_sha256); NULL when the custom_id is
-- the call's own identity.
ALTER TABLE llm_batch_lines ADD COLUMN continues TEXT;

-- When the batch's input, output and error files were deleted at the provider (NULL: not yet,
-- or kept with llm.batch.keep_files).
ALTER TABLE llm_batches ADD COLUMN files_deleted_ms INTEGER;

-- A replayed call costs nothing: its row's cost_usd is 0 (a sum over llm_calls is what was
-- paid). What the replay saved, which `kforge status` shows, is the cost of the row it replays:
-- the run's call totals count that for a replayed row.
UPDATE llm_calls SET cost_usd = 0 WHERE status = 'replayed';

DROP TRIGGER run_call_totals_insert;
CREATE TRIGGER run_call_totals_insert AFTER INSERT ON llm_calls
WHEN NEW.tag GLOB 'run=* sample=*' BEGIN
  INSERT INTO run_call_totals
  VALUES (substr(NEW.tag, 1, instr(NEW.tag, ' sample=') - 1), NEW.status = 'replayed', 1,
          NEW.prompt_tokens, NEW.completion_tokens,
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
WHEN OLD.tag GLOB 'run=* sample=*' BEGIN
  UPDATE run_call_totals SET
    n = n - 1, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
    completion_tokens = completion_tokens - OLD.completion_tokens,
    cost_usd = cost_usd - CASE WHEN OLD.status = 'replayed'
      THEN coalesce((SELECT o.cost_usd FROM llm_calls o WHERE o.id = OLD.replay_of), 0)
      ELSE OLD.cost_usd END
  WHERE run_tag = substr(OLD.tag, 1, instr(OLD.tag, ' sample=') - 1)
    AND replayed = (OLD.status = 'replayed');
END;

-- The kept totals of replayed calls, by that definition.
UPDATE run_call_totals SET cost_usd = (
  SELECT coalesce(sum(coalesce(o.cost_usd, 0)), 0) FROM llm_calls c
  LEFT JOIN llm_calls o ON o.id = c.replay_of
  WHERE c.status = 'replayed' AND c.tag GLOB 'run=* sample=*'
    AND substr(c.tag, 1, instr(c.tag, ' sample=') - 1) = run_call_totals.run_tag)
WHERE replayed = 1;
