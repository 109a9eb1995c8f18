-- kforge schema, version 36: full-text search over what a sample is and what became of it, for
-- the viewer's search box (kforge serve, libs/report viewer_search.cpp).
--
-- `search_text` is an FTS5 table with the trigram tokenizer: any run of three or more characters
-- matches, case-insensitively, inside words and across punctuation (a search for "l.load(" finds
-- tl.load(x)), as a curator searches code. Its rows are the texts, each under a rowid derived
-- from the row it was read from, so that triggers can replace and delete it without a scan:
--   samples.id * 4          the sample's code and its two descriptions (run_id NULL: every run)
--   stage_outputs.id * 4 + 1  the wrapper and test of an answer that holds code (the view
--                           code_outputs of migration 0019: status ok, generate or repair)
--   verifications.id * 4 + 2  the verifier's one-line detail and the tail of its stderr
-- The triggers keep it current as samples are imported or updated and as answers and verdicts
-- arrive; a row deleted (a run deleted, its rows by cascade) takes its text with it. Answers are
-- read through kf_text(), which every kforge connection registers (migration 0015).

CREATE VIRTUAL TABLE search_text USING fts5(
  body, run_id UNINDEXED, sample_id UNINDEXED, tokenize = 'trigram'
);

INSERT INTO search_text (rowid, body, run_id, sample_id)
SELECT id * 4, coalesce(code, '') || char(10) || coalesce(description_1, '') || char(10) || coalesce(description_2, ''), NULL, id FROM samples;

INSERT INTO search_text (rowid, body, run_id, sample_id)
SELECT o.id * 4 + 1,
       coalesce(json_extract(kf_text(o.parsed_text), '$.kernel_wrapper'), '') || char(10) || coalesce(json_extract(kf_text(o.parsed_text), '$.unitest_code'), ''),
       o.run_id, o.sample_id
FROM code_outputs o;

INSERT INTO search_text (rowid, body, run_id, sample_id)
SELECT id * 4 + 2, coalesce(detail, '') || char(10) || coalesce(stderr_tail, ''), run_id, sample_id
FROM verifications WHERE detail IS NOT NULL OR stderr_tail IS NOT NULL;

CREATE TRIGGER search_samples_insert AFTER INSERT ON samples BEGIN
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  VALUES (new.id * 4, coalesce(new.code, '') || char(10) || coalesce(new.description_1, '') || char(10) || coalesce(new.description_2, ''), NULL,
          new.id);
END;

CREATE TRIGGER search_samples_update AFTER UPDATE OF code, description_1, description_2 ON samples
BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4;
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  VALUES (new.id * 4, coalesce(new.code, '') || char(10) || coalesce(new.description_1, '') || char(10) || coalesce(new.description_2, ''), NULL,
          new.id);
END;

CREATE TRIGGER search_samples_delete AFTER DELETE ON samples BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4;
END;

-- Stage outputs are written once (never updated): the code of an answer that holds any.
CREATE TRIGGER search_outputs_insert AFTER INSERT ON stage_outputs
WHEN new.status = 'ok' AND new.stage IN ('generate', 'repair') AND new.parsed_text IS NOT NULL
BEGIN
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  SELECT new.id * 4 + 1, coalesce(json_extract(p, '$.kernel_wrapper'), '') || char(10) || coalesce(json_extract(p, '$.unitest_code'), ''), new.run_id, new.sample_id
  FROM (SELECT kf_text(new.parsed_text) AS p)
  WHERE json_valid(p) AND json_extract(p, '$.kernel_wrapper') IS NOT NULL;
END;

CREATE TRIGGER search_outputs_delete AFTER DELETE ON stage_outputs BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4 + 1;
END;

CREATE TRIGGER search_verifications_insert AFTER INSERT ON verifications
WHEN new.detail IS NOT NULL OR new.stderr_tail IS NOT NULL BEGIN
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  VALUES (new.id * 4 + 2, coalesce(new.detail, '') || char(10) || coalesce(new.stderr_tail, ''), new.run_id,
          new.sample_id);
END;

CREATE TRIGGER search_verifications_update AFTER UPDATE OF detail, stderr_tail ON verifications
BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4 + 2;
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  SELECT new.id * 4 + 2, coalesce(new.detail, '') || char(10) || coalesce(new.stderr_tail, ''), new.run_id,
         new.sample_id
  WHERE new.detail IS NOT NULL OR new.stderr_tail IS NOT NULL;
END;

CREATE TRIGGER search_verifications_delete AFTER DELETE ON verifications BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4 + 2;
END;
