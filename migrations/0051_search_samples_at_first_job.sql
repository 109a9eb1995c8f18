-- kforge schema, version 51: a sample's own texts (its code and descriptions) enter the search
-- index (search_text, migration 0036) when the sample gets its first job, not when it is
-- imported.
--
-- The viewer searches the samples of a run (viewer.sql's viewer_search keeps only the run's
-- samples), so a sample no run holds is never searched for. Indexing every imported sample made
-- `kforge import` about 6x costlier (the trigram index of ~5 KB of code a sample, row by row);
-- a corpus is often imported whole and run in part. Now:
--   - a job inserted for a sample whose texts are not in the index puts them there, in the
--     writer's own transaction (kforge run create, the scoring endpoint's items, any later path
--     that makes jobs: every sample a run holds is in the index, as before);
--   - `kforge run create` first indexes every sample not yet in the index in one statement
--     (pipeline.sql's search_index_samples), which costs about half of the same rows one by one;
--     the trigger then finds them there;
--   - an update of a sample's texts replaces them in the index only when they are there (a
--     sample in no run yet is indexed with its new texts when it gets its first job);
--   - a deleted sample takes its texts with it, as before.
-- The rowid scheme (samples.id * 4) and the answers' and verdicts' triggers are unchanged. A
-- database migrated from version 50 keeps the texts of samples no run holds; they are never
-- matched against a run they are not in.

DROP TRIGGER search_samples_insert;
DROP TRIGGER search_samples_update;

CREATE TRIGGER search_samples_update AFTER UPDATE OF code, description_1, description_2 ON samples
WHEN EXISTS (SELECT 1 FROM search_text WHERE rowid = old.id * 4)
BEGIN
  DELETE FROM search_text WHERE rowid = old.id * 4;
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  VALUES (new.id * 4, coalesce(new.code, '') || char(10) || coalesce(new.description_1, '') || char(10) || coalesce(new.description_2, ''), NULL,
          new.id);
END;

CREATE TRIGGER search_jobs_insert AFTER INSERT ON jobs
WHEN NOT EXISTS (SELECT 1 FROM search_text WHERE rowid = new.sample_id * 4)
BEGIN
  INSERT INTO search_text (rowid, body, run_id, sample_id)
  SELECT id * 4, coalesce(code, '') || char(10) || coalesce(description_1, '') || char(10) || coalesce(description_2, ''), NULL, id
  FROM samples WHERE id = new.sample_id;
END;
