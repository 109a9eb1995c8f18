-- kforge schema, version 24: the verifier's vocabularies as tables, one row per name, seeded from
-- the files that are the one list of each (libs/verify/harness/kforge_harness/vocabulary/*.txt;
-- tests/store/vocabulary_test.cpp holds these rows to them, and C++'s tables in
-- store/vocabulary.hpp and store/states.hpp to both). A query that needs the names reads these
-- tables; a name added to a file comes with a migration that adds its row.
--   verdict_names        the verdicts (verifications.verdict)
--   flag_names           the quality flags (verifications.flags_json holds a list of them)
--   target_result_names  what a cross-compile target came to (verification_targets.result)
--   stage_kind_names     the kinds of an LLM stage (runs.prompts_json, a stage's "kind")
-- A verification whose flags are not all in flag_names is refused (the triggers below): a flag
-- renamed on one side is an error, never a row no query recognises.
CREATE TABLE verdict_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE) WITHOUT ROWID;
INSERT INTO verdict_names (name, position) VALUES
  ('passed', 1), ('failed', 2), ('error', 3), ('timeout', 4), ('crashed', 5), ('invalid', 6),
  ('skipped', 7);

CREATE TABLE flag_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE) WITHOUT ROWID;
INSERT INTO flag_names (name, position) VALUES
  ('no_kernel_launch', 1), ('mutant_survived', 2), ('weak_test', 3), ('weak_inputs', 4),
  ('constant_output', 5), ('out_of_bounds', 6), ('infrastructure', 7), ('environment', 8),
  ('slow', 9), ('cross_compile_failed', 10);

CREATE TABLE target_result_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE)
  WITHOUT ROWID;
INSERT INTO target_result_names (name, position) VALUES
  ('ok', 1), ('error', 2), ('unavailable', 3), ('not_run', 4);

CREATE TABLE stage_kind_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE)
  WITHOUT ROWID;
INSERT INTO stage_kind_names (name, position) VALUES ('analysis', 1), ('code', 2), ('repair', 3);

CREATE TRIGGER verifications_flags_known_insert BEFORE INSERT ON verifications
WHEN EXISTS (SELECT 1 FROM json_each(NEW.flags_json) f
             WHERE f.value NOT IN (SELECT name FROM flag_names))
BEGIN
  SELECT RAISE(ABORT, 'verifications.flags_json: a flag that is not in flag_names');
END;

CREATE TRIGGER verifications_flags_known_update BEFORE UPDATE OF flags_json ON verifications
WHEN EXISTS (SELECT 1 FROM json_each(NEW.flags_json) f
             WHERE f.value NOT IN (SELECT name FROM flag_names))
BEGIN
  SELECT RAISE(ABORT, 'verifications.flags_json: a flag that is not in flag_names');
END;
