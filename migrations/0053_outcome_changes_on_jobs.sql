-- kforge schema, version 53: the viewer's change numbers (migration 0050's outcome_changes) are
-- kept on the jobs' own rows, so that a pipeline stage no longer writes a row of another table in
-- each of its transactions (about 0.1 ms a stage: issue 51, docs/BENCHMARKS.md).
--
-- What a reader sees is unchanged: outcome_changes is now a view with the same columns (run_id,
-- sample_id, seq) and the same meaning (a run's change number of the last change to anything a
-- sample's outcome is read from; sample_id 0: a job of the run was deleted, read the run whole),
-- read by report's outcomes.sql and viewer.sql as before. Its rows come from:
--   - jobs.change_seq: the run's change number of the job's sample, indexed by
--     (run_id, change_seq) so that a run's newest number and the samples past a number are read
--     from the index;
--   - outcome_changes_gone: per run, the number of its last deleted (or moved) job, past every
--     number the run's jobs had then (the deleted job's included).
-- The next number of a run is one past the larger of its jobs' newest and its deletion's. Who
-- numbers what:
--   - the statements a stage runs (pipeline.sql's lease_jobs and advance_job, and insert_job)
--     set change_seq themselves, in the row they write anyway: no other row, no other table;
--   - every other write is numbered by a trigger, whichever program or statement makes it, so no
--     writer can leave it out: an update of a column an outcome reads that did not set
--     change_seq itself; a job inserted without one; a change to the job's sample, stage outputs,
--     verifications, speed labels or cross-compile results (their job's row: an answer's insert
--     numbers its job again in the checkpoint's transaction, whose pages are already written).
-- A rebuilt table (CREATE new, copy, DROP, RENAME) loses its triggers: a later migration doing
-- that to jobs, stage_outputs, verifications, verification_speed or verification_targets must
-- create them again (tests/report's ViewerChanges checks each is there).

ALTER TABLE jobs ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET change_seq = coalesce((SELECT c.seq FROM outcome_changes c
                                       WHERE c.run_id = jobs.run_id AND c.sample_id = jobs.sample_id), 0);
CREATE INDEX jobs_change_seq ON jobs(run_id, change_seq);

CREATE TABLE outcome_changes_gone (
  run_id INTEGER PRIMARY KEY,
  seq    INTEGER NOT NULL
);
INSERT INTO outcome_changes_gone (run_id, seq)
SELECT run_id, seq FROM outcome_changes WHERE sample_id = 0;

DROP TRIGGER outcome_changes_job_insert;
DROP TRIGGER outcome_changes_job_update;
DROP TRIGGER outcome_changes_job_move;
DROP TRIGGER outcome_changes_job_delete;
DROP TRIGGER outcome_changes_sample;
DROP TRIGGER outcome_changes_run_delete;
DROP TRIGGER outcome_changes_output_insert;
DROP TRIGGER outcome_changes_output_update;
DROP TRIGGER outcome_changes_output_delete;
DROP TRIGGER outcome_changes_verification_insert;
DROP TRIGGER outcome_changes_verification_update;
DROP TRIGGER outcome_changes_verification_delete;
DROP TRIGGER outcome_changes_speed_insert;
DROP TRIGGER outcome_changes_speed_update;
DROP TRIGGER outcome_changes_speed_delete;
DROP TRIGGER outcome_changes_target_insert;
DROP TRIGGER outcome_changes_target_update;
DROP TRIGGER outcome_changes_target_delete;
DROP INDEX outcome_changes_seq;
DROP TABLE outcome_changes;

CREATE VIEW outcome_changes AS
SELECT run_id, sample_id, change_seq AS seq FROM jobs
UNION ALL
SELECT run_id, 0, seq FROM outcome_changes_gone;

-- A job inserted without its number (insert_job sets it).
CREATE TRIGGER outcome_changes_job_insert AFTER INSERT ON jobs WHEN NEW.change_seq = 0 BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE id = NEW.id;
END;

-- The columns an outcome reads, by a statement that did not number the change itself; a lease's
-- owner and expiry alone (renewed every few seconds) change nothing shown.
CREATE TRIGGER outcome_changes_job_update
AFTER UPDATE OF run_id, sample_id, state, stage, error_kind, error, repair_round ON jobs
WHEN NEW.change_seq IS OLD.change_seq BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE id = NEW.id;
END;

-- A job moved to another run or sample (no writer does): its old place goes as a deletion does.
CREATE TRIGGER outcome_changes_job_move AFTER UPDATE OF run_id, sample_id ON jobs
WHEN OLD.run_id IS NOT NEW.run_id OR OLD.sample_id IS NOT NEW.sample_id BEGIN
  INSERT INTO outcome_changes_gone (run_id, seq)
  VALUES (OLD.run_id, max(max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = OLD.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = OLD.run_id), 0)) + 1, OLD.change_seq + 1))
  ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_job_delete AFTER DELETE ON jobs BEGIN
  INSERT INTO outcome_changes_gone (run_id, seq)
  VALUES (OLD.run_id, max(max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = OLD.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = OLD.run_id), 0)) + 1, OLD.change_seq + 1))
  ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq;
END;

-- A sample's key (no writer changes one) or record (imported again): each job of the sample
-- (the viewer's downloads of a run's records are kept by the run's change number).
CREATE TRIGGER outcome_changes_sample AFTER UPDATE ON samples BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE sample_id = NEW.id;
END;

CREATE TRIGGER outcome_changes_run_delete AFTER DELETE ON runs BEGIN
  DELETE FROM outcome_changes_gone WHERE run_id = OLD.id;
END;

-- A change to a row of a sample's job (its outputs, its verifications and their tables): the
-- job's number, while the job is there (a job's deletion numbers the run's deletion).
CREATE TRIGGER outcome_changes_output_insert AFTER INSERT ON stage_outputs BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE run_id = NEW.run_id AND sample_id = NEW.sample_id;
END;

CREATE TRIGGER outcome_changes_output_update AFTER UPDATE ON stage_outputs BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE run_id = NEW.run_id AND sample_id = NEW.sample_id;
END;

CREATE TRIGGER outcome_changes_output_delete AFTER DELETE ON stage_outputs BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = OLD.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = OLD.run_id), 0)) + 1
  WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id;
END;

CREATE TRIGGER outcome_changes_verification_insert AFTER INSERT ON verifications BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE run_id = NEW.run_id AND sample_id = NEW.sample_id;
END;

CREATE TRIGGER outcome_changes_verification_update AFTER UPDATE ON verifications BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE run_id = NEW.run_id AND sample_id = NEW.sample_id;
END;

CREATE TRIGGER outcome_changes_verification_delete AFTER DELETE ON verifications BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = OLD.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = OLD.run_id), 0)) + 1
  WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id;
END;

-- A verification's speed label and cross-compile results: its job's number (through the
-- verification; none when the verification is gone, whose deletion numbered it).
CREATE TRIGGER outcome_changes_speed_insert AFTER INSERT ON verification_speed BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = NEW.verification_id);
END;

CREATE TRIGGER outcome_changes_speed_update AFTER UPDATE ON verification_speed BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = NEW.verification_id);
END;

CREATE TRIGGER outcome_changes_speed_delete AFTER DELETE ON verification_speed BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = OLD.verification_id);
END;

CREATE TRIGGER outcome_changes_target_insert AFTER INSERT ON verification_targets BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = NEW.verification_id);
END;

CREATE TRIGGER outcome_changes_target_update AFTER UPDATE ON verification_targets BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = NEW.verification_id);
END;

CREATE TRIGGER outcome_changes_target_delete AFTER DELETE ON verification_targets BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = jobs.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = jobs.run_id), 0)) + 1
  WHERE (run_id, sample_id) IN (SELECT v.run_id, v.sample_id FROM verifications v
                                WHERE v.id = OLD.verification_id);
END;
