-- kforge schema, version 32: the speed label's flags as a vocabulary table, seeded from
-- libs/verify/harness/kforge_harness/vocabulary/speed_flags.txt (the same names, the same order;
-- tests/store/vocabulary_test.cpp holds the two together). Any of them keeps pass_perf false:
--   perf_suspect, not_reproduced, unseen_work, calls_reference  (migration 0020's four)
--   library_work      the sample's own Triton launches took less than
--                     verifier.timing.min_kernel_share of the timed wrapper call's GPU time
--   kernel_not_timed  the timed wrapper call launched none of the sample's kernels
--   not_timed         the label has no figures (timing failed, the inputs are too large for the
--                     worker, the GPU was busy; verification_speed.reason says which)
-- A speed row whose flags are not all in speed_flag_names is refused (the triggers below).
CREATE TABLE speed_flag_names (name TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE)
  WITHOUT ROWID;
INSERT INTO speed_flag_names (name, position) VALUES
  ('perf_suspect', 1), ('not_reproduced', 2), ('unseen_work', 3), ('calls_reference', 4),
  ('library_work', 5), ('kernel_not_timed', 6), ('not_timed', 7);

CREATE TRIGGER verification_speed_flags_known_insert BEFORE INSERT ON verification_speed
WHEN EXISTS (SELECT 1 FROM json_each(NEW.flags_json) f
             WHERE f.value NOT IN (SELECT name FROM speed_flag_names))
BEGIN
  SELECT RAISE(ABORT, 'verification_speed.flags_json: a flag that is not in speed_flag_names');
END;

CREATE TRIGGER verification_speed_flags_known_update BEFORE UPDATE OF flags_json
  ON verification_speed
WHEN EXISTS (SELECT 1 FROM json_each(NEW.flags_json) f
             WHERE f.value NOT IN (SELECT name FROM speed_flag_names))
BEGIN
  SELECT RAISE(ABORT, 'verification_speed.flags_json: a flag that is not in speed_flag_names');
END;
