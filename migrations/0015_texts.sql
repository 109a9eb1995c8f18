-- kforge schema, version 15: each distinct prompt and answer text stored once.
--
-- Before, every stage output held its request, raw answer, parsed answer and reasoning, and the
-- LLM client's audit row held the same request and raw answer again. Now those texts live in
-- `texts`, one row per distinct text (addressed by the SHA-256 of its bytes, compressed with zstd
-- from 256 bytes on: libs/store texts.hpp), and rows refer to them by id. Readers use
-- kf_text(id), writers kf_put(text): SQL functions every kforge connection registers.
--
-- The whole conversion is this one migration, one transaction: a crash at any point leaves the
-- old schema with every row, or the new one. Columns are added and dropped in place (ALTER
-- TABLE), never by rebuilding a table, so migration 0012's count triggers on llm_calls and
-- stage_outputs stay as they are; the UPDATEs below change no counted column.
--
-- Dropping columns leaves the rewritten tables' pages sparse; the line below asks
-- store::migrate() to VACUUM once it committed, when it converted an existing database (best
-- effort: if that fails or is interrupted, the database is migrated and only keeps its size).
-- kforge: vacuum after

CREATE TABLE texts (
  id     INTEGER PRIMARY KEY,
  sha256 BLOB NOT NULL UNIQUE,    -- SHA-256 of the text's bytes (32 bytes), whatever the codec
  size   INTEGER NOT NULL,        -- the text's length in bytes
  codec  TEXT NOT NULL CHECK (codec IN ('plain', 'zstd')),
  dict   INTEGER REFERENCES texts(id),  -- 'zstd' against this text as a raw-content dictionary
  body   BLOB NOT NULL            -- 'plain': the text itself; 'zstd': one zstd frame of it
);

-- The dictionaries new texts are compressed against: texts (the pipeline registers its prompt
-- templates, which make up most of every request), the latest registered first. A text keeps
-- the id of the dictionary it used, so a new one changes nothing stored.
CREATE TABLE text_dictionaries (
  text_id    INTEGER PRIMARY KEY REFERENCES texts(id),
  used_ms    INTEGER NOT NULL     -- when it was last registered
);

ALTER TABLE llm_calls ADD COLUMN request_text INTEGER REFERENCES texts(id);   -- was request_json
ALTER TABLE llm_calls ADD COLUMN response_text INTEGER REFERENCES texts(id);  -- was response_raw
UPDATE llm_calls SET request_text = kf_put(request_json), response_text = kf_put(response_raw)
WHERE request_json IS NOT NULL OR response_raw IS NOT NULL;
ALTER TABLE llm_calls DROP COLUMN request_json;
ALTER TABLE llm_calls DROP COLUMN response_raw;

ALTER TABLE stage_outputs ADD COLUMN request_text INTEGER REFERENCES texts(id);   -- request_json
ALTER TABLE stage_outputs ADD COLUMN response_text INTEGER REFERENCES texts(id);  -- response_raw
ALTER TABLE stage_outputs ADD COLUMN parsed_text INTEGER REFERENCES texts(id);    -- parsed_json
ALTER TABLE stage_outputs ADD COLUMN reasoning_text INTEGER REFERENCES texts(id); -- reasoning
UPDATE stage_outputs SET request_text = kf_put(request_json), response_text = kf_put(response_raw),
                         parsed_text = kf_put(parsed_json), reasoning_text = kf_put(reasoning);
ALTER TABLE stage_outputs DROP COLUMN request_json;
ALTER TABLE stage_outputs DROP COLUMN response_raw;
ALTER TABLE stage_outputs DROP COLUMN parsed_json;
ALTER TABLE stage_outputs DROP COLUMN reasoning;
