-- kforge schema, version 50: which samples of a run changed since the viewer (kforge serve) last
-- read the run's outcomes, so that a page of a run kforged is working on reads again only those
-- samples instead of the whole run (report's run_outcomes and its parts).
--
-- outcome_changes: per run and sample, the run's change number (seq, 1, 2, ... per run) of the
-- last change to anything the sample's outcome is read from: its job's state, stage, error and
-- repair round, its sample (key and record), its stage outputs, its verifications with their
-- speed labels and cross-compile results. Triggers write it in the same transaction as the change, whichever program or
-- statement makes it, so no writer can leave it out. A reader keeps the run's highest seq at its
-- read and later reads the rows past it. A deleted job moves the run's row of sample_id 0 (no
-- sample has id 0) past every other, then removes its sample's row (numbered first, so that the
-- run's highest seq never goes back): a reader that sees that row past its seq reads the whole
-- run again. One row per job: the table stays the size of the jobs table.
-- A rebuilt table (CREATE new, copy, DROP, RENAME) loses its triggers: a later migration doing
-- that to jobs, stage_outputs, verifications, verification_speed or verification_targets must
-- create them again (tests/report's ViewerChanges checks each is there).
CREATE TABLE outcome_changes (
  run_id    INTEGER NOT NULL,
  sample_id INTEGER NOT NULL,
  seq       INTEGER NOT NULL,
  PRIMARY KEY (run_id, sample_id)
) WITHOUT ROWID;
CREATE INDEX outcome_changes_seq ON outcome_changes(run_id, seq);

-- The rows of every sample already stored: one change each, numbered in id order.
INSERT INTO outcome_changes (run_id, sample_id, seq)
SELECT run_id, sample_id, row_number() OVER (PARTITION BY run_id ORDER BY id) FROM jobs;

CREATE TRIGGER outcome_changes_job_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  VALUES (NEW.run_id, NEW.sample_id,
          (SELECT coalesce(max(seq), 0) + 1 FROM outcome_changes WHERE run_id = NEW.run_id))
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

-- The columns an outcome reads; a lease's owner and expiry alone (renewed every few seconds)
-- change nothing shown.
CREATE TRIGGER outcome_changes_job_update
AFTER UPDATE OF run_id, sample_id, state, stage, error_kind, error, repair_round ON jobs BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  VALUES (NEW.run_id, NEW.sample_id,
          (SELECT coalesce(max(seq), 0) + 1 FROM outcome_changes WHERE run_id = NEW.run_id))
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

-- A job moved to another run or sample (no writer does): its old row goes as a deletion does.
CREATE TRIGGER outcome_changes_job_move AFTER UPDATE OF run_id, sample_id ON jobs
WHEN OLD.run_id IS NOT NEW.run_id OR OLD.sample_id IS NOT NEW.sample_id BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  VALUES (OLD.run_id, 0,
          (SELECT coalesce(max(seq), 0) + 1 FROM outcome_changes WHERE run_id = OLD.run_id))
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
  DELETE FROM outcome_changes WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id;
END;

CREATE TRIGGER outcome_changes_job_delete AFTER DELETE ON jobs BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  VALUES (OLD.run_id, 0,
          (SELECT coalesce(max(seq), 0) + 1 FROM outcome_changes WHERE run_id = OLD.run_id))
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
  DELETE FROM outcome_changes WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id;
END;

-- A sample's key (no writer changes one) or record (imported again): the row of each job of the
-- sample (the viewer's downloads of a run's records are kept by the run's change number).
CREATE TRIGGER outcome_changes_sample AFTER UPDATE ON samples BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT j.run_id, j.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = j.run_id)
  FROM jobs j WHERE j.sample_id = NEW.id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_run_delete AFTER DELETE ON runs BEGIN
  DELETE FROM outcome_changes WHERE run_id = OLD.id;
END;

-- A change to a row of a sample's job (its outputs, its verifications and their tables): the
-- sample's row, while its job is there (a job's deletion takes its rows with it: the run's
-- sample_id 0 row says so).
CREATE TRIGGER outcome_changes_output_insert AFTER INSERT ON stage_outputs BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT NEW.run_id, NEW.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = NEW.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_output_update AFTER UPDATE ON stage_outputs BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT NEW.run_id, NEW.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = NEW.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_output_delete AFTER DELETE ON stage_outputs
WHEN EXISTS (SELECT 1 FROM jobs WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id) BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT OLD.run_id, OLD.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = OLD.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_verification_insert AFTER INSERT ON verifications BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT NEW.run_id, NEW.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = NEW.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_verification_update AFTER UPDATE ON verifications BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT NEW.run_id, NEW.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = NEW.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_verification_delete AFTER DELETE ON verifications
WHEN EXISTS (SELECT 1 FROM jobs WHERE run_id = OLD.run_id AND sample_id = OLD.sample_id) BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT OLD.run_id, OLD.sample_id, coalesce(max(seq), 0) + 1 FROM outcome_changes
  WHERE run_id = OLD.run_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

-- A verification's speed label and cross-compile results: its sample's row (through the
-- verification; none when the verification is gone, whose deletion said so).
CREATE TRIGGER outcome_changes_speed_insert AFTER INSERT ON verification_speed BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = NEW.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_speed_update AFTER UPDATE ON verification_speed BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = NEW.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_speed_delete AFTER DELETE ON verification_speed BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = OLD.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_target_insert AFTER INSERT ON verification_targets BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = NEW.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_target_update AFTER UPDATE ON verification_targets BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = NEW.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;

CREATE TRIGGER outcome_changes_target_delete AFTER DELETE ON verification_targets BEGIN
  INSERT INTO outcome_changes (run_id, sample_id, seq)
  SELECT v.run_id, v.sample_id,
         (SELECT coalesce(max(c.seq), 0) + 1 FROM outcome_changes c WHERE c.run_id = v.run_id)
  FROM verifications v WHERE v.id = OLD.verification_id
  ON CONFLICT (run_id, sample_id) DO UPDATE SET seq = excluded.seq;
END;
