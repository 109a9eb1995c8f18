-- kforge schema, version 8: answers as reasoning models give them.

-- Usage beyond prompt and completion tokens, as providers report it: reasoning tokens (part of
-- completion_tokens) and prompt tokens served from the provider's cache (part of
-- prompt_tokens). cost_usd prices them at llm.prices' reasoning and cached-prompt rates.
ALTER TABLE llm_calls ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN cached_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stage_outputs ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stage_outputs ADD COLUMN cached_prompt_tokens INTEGER NOT NULL DEFAULT 0;

-- The model's reasoning for a stage output (the provider's reasoning field, then the <think>
-- blocks of its content); NULL when it gave none. Never searched for the answer.
ALTER TABLE stage_outputs ADD COLUMN reasoning TEXT;

-- What the extraction mended to read the answer, comma-separated and sorted (e.g.
-- "raw_newlines,trailing_comma"); NULL when the answer was strict JSON or did not parse.
ALTER TABLE stage_outputs ADD COLUMN mended TEXT;
