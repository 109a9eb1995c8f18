-- kforge schema, version 25: what is read of a verification is in columns and tables, and one
-- view says which verification counts.
--
-- Report, export, the viewer and status read a verification's verdict, flags, mutation scores,
-- cross-compile results (verification_targets, 0014) and speed label (verification_speed, 0020)
-- from columns; what they read beyond those from the harness's report (result_json) is now in
-- the columns and tables below, written once by verify's store (libs/verify/src/store.cpp) when
-- the verification is stored. result_json keeps the full report for debug and the repair prompt;
-- no query reads fields out of it (this migration's backfill is the one place that does).
--
--   mutants_survived_json, mutants_not_applicable_json
--                         the output mutants (report "mutation") that survived the test and that
--                         did not apply, JSON lists of names: NULL where no mutant ran (as
--                         mutants_killed and mutants_applicable, migration 0011)
--   kernel_killed, kernel_applicable, kernel_equivalent
--                         the kernel battery's score (report "mutation"."kernel"): NULL where
--                         the battery did not run
--   kernel_survived_json  the battery's surviving mutants, a JSON list as the report has it
--   coverage_json         the coverage facts of the passing run's launches (report "coverage"),
--                         a JSON object exported as it is
--   speed_json            the harness's whole speed account (report "speed": every kernel's
--                         times, the environment, the reps); the label is verification_speed
--   out_of_bounds         the guard-zone check (report "bounds"): 1 found an access outside the
--                         buffers, 0 checked and found none, NULL not checked
--   bounds_detail         its one line (which kernel, which buffers), NULL when none
--   verification_tests    the test functions the run found, in the report's order, with their
--                         status (passed, failed, ...; NULL when the report gave none) and, for
--                         one that failed, where: the section (code, kernel_wrapper,
--                         unitest_code) and its line
--   verification_launches the launches of each kernel of the sample the test made (report
--                         "triton"."launches"), in the report's order
ALTER TABLE verifications ADD COLUMN mutants_survived_json TEXT;
ALTER TABLE verifications ADD COLUMN mutants_not_applicable_json TEXT;
ALTER TABLE verifications ADD COLUMN kernel_killed INTEGER;
ALTER TABLE verifications ADD COLUMN kernel_applicable INTEGER;
ALTER TABLE verifications ADD COLUMN kernel_equivalent INTEGER;
ALTER TABLE verifications ADD COLUMN kernel_survived_json TEXT;
ALTER TABLE verifications ADD COLUMN coverage_json TEXT;
ALTER TABLE verifications ADD COLUMN speed_json TEXT;
ALTER TABLE verifications ADD COLUMN out_of_bounds INTEGER CHECK (out_of_bounds IN (0, 1));
ALTER TABLE verifications ADD COLUMN bounds_detail TEXT;

CREATE TABLE verification_tests (
  verification_id INTEGER NOT NULL REFERENCES verifications(id) ON DELETE CASCADE,
  ordinal         INTEGER NOT NULL,
  name            TEXT,
  status          TEXT,
  section         TEXT,
  line            INTEGER,
  PRIMARY KEY (verification_id, ordinal)
) WITHOUT ROWID;

CREATE TABLE verification_launches (
  verification_id INTEGER NOT NULL REFERENCES verifications(id) ON DELETE CASCADE,
  ordinal         INTEGER NOT NULL,
  kernel          TEXT NOT NULL,
  launches        INTEGER NOT NULL,
  PRIMARY KEY (verification_id, ordinal)
) WITHOUT ROWID;

-- Which verification counts: a sample's verdict is its newest verification (highest id: attempt
-- numbers start again after a retry, row ids never go back), and a repair round's verdict the
-- newest verification of that round's code. Every reader takes a verification through these.
CREATE VIEW latest_verification AS
SELECT v.* FROM verifications v
WHERE v.id = (SELECT max(x.id) FROM verifications x
              WHERE x.run_id = v.run_id AND x.sample_id = v.sample_id);

CREATE VIEW latest_round_verification AS
SELECT v.* FROM verifications v
WHERE v.id = (SELECT max(x.id) FROM verifications x
              WHERE x.run_id = v.run_id AND x.sample_id = v.sample_id
                AND x.repair_round = v.repair_round);

-- The backfill: what the stored reports say, for the verifications stored before this version.
-- A report that is not JSON (kforge never writes one) leaves its columns NULL.
UPDATE verifications SET
  mutants_survived_json =
    CASE WHEN json_type(result_json, '$.mutation.applicable') IS NOT NULL
         THEN CASE WHEN json_type(result_json, '$.mutation.survived') = 'array'
                   THEN result_json -> '$.mutation.survived' ELSE '[]' END END,
  mutants_not_applicable_json =
    CASE WHEN json_type(result_json, '$.mutation.applicable') IS NOT NULL
         THEN CASE WHEN json_type(result_json, '$.mutation.not_applicable') = 'array'
                   THEN result_json -> '$.mutation.not_applicable' ELSE '[]' END END,
  kernel_killed = CASE WHEN json_type(result_json, '$.mutation.kernel') = 'object'
                       THEN coalesce(result_json ->> '$.mutation.kernel.killed', 0) END,
  kernel_applicable = CASE WHEN json_type(result_json, '$.mutation.kernel') = 'object'
                           THEN coalesce(result_json ->> '$.mutation.kernel.applicable', 0) END,
  kernel_equivalent = CASE WHEN json_type(result_json, '$.mutation.kernel') = 'object'
                           THEN coalesce(result_json ->> '$.mutation.kernel.equivalent', 0) END,
  kernel_survived_json =
    CASE WHEN json_type(result_json, '$.mutation.kernel') = 'object'
         THEN CASE WHEN json_type(result_json, '$.mutation.kernel.survived') = 'array'
                   THEN result_json -> '$.mutation.kernel.survived' ELSE '[]' END END,
  coverage_json = CASE WHEN json_type(result_json, '$.coverage') <> 'null'
                       THEN result_json -> '$.coverage' END,
  speed_json = CASE WHEN json_type(result_json, '$.speed') <> 'null'
                    THEN result_json -> '$.speed' END,
  out_of_bounds = CASE json_type(result_json, '$.bounds.out_of_bounds')
                    WHEN 'true' THEN 1 WHEN 'false' THEN 0 END,
  bounds_detail = CASE WHEN json_type(result_json, '$.bounds.detail') = 'text'
                        AND result_json ->> '$.bounds.detail' <> ''
                       THEN result_json ->> '$.bounds.detail' END
WHERE json_valid(result_json);

INSERT INTO verification_tests (verification_id, ordinal, name, status, section, line)
SELECT v.id, t.key,
       CASE WHEN json_type(t.value, '$.name') = 'text' THEN t.value ->> '$.name' END,
       CASE WHEN json_type(t.value, '$.status') = 'text' THEN t.value ->> '$.status' END,
       CASE WHEN json_type(t.value, '$.where.section') = 'text'
            THEN t.value ->> '$.where.section' END,
       CASE WHEN json_type(t.value, '$.where.line') = 'integer'
            THEN t.value ->> '$.where.line' END
FROM verifications v, json_each(v.result_json, '$.tests') t
WHERE json_valid(v.result_json) AND json_type(v.result_json, '$.tests') = 'array'
  AND t.type = 'object';

INSERT INTO verification_launches (verification_id, ordinal, kernel, launches)
SELECT v.id, row_number() OVER (PARTITION BY v.id ORDER BY l.id), l.key, l.value
FROM verifications v, json_each(v.result_json, '$.triton.launches') l
WHERE json_valid(v.result_json) AND json_type(v.result_json, '$.triton.launches') = 'object'
  AND l.type = 'integer';
