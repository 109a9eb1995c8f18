-- What verify's store writes beside a verification's report (migration 0025), read back as one
-- line of text per verification, each value as SQL quotes it (NULL, 3, 'text').

-- name: columns_of
SELECT quote(mutants_killed) || '|' || quote(mutants_applicable) || '|' || quote(kernel_killed) ||
       '|' || quote(kernel_applicable) || '|' || quote(kernel_equivalent) || '|' ||
       quote(kernel_survived_json) || '|' || quote(coverage_json) || '|' || quote(speed_json) ||
       '|' || quote(out_of_bounds) || '|' || quote(bounds_detail) || '|' ||
       quote(mutants_survived_json) || '|' || quote(mutants_not_applicable_json)
FROM verifications WHERE id = ?1;

-- name: tests_of
SELECT coalesce(group_concat(ordinal || ':' || quote(name) || ':' || quote(status) || ':' ||
                             quote(section) || ':' || quote(line), ' '), '')
FROM (SELECT * FROM verification_tests WHERE verification_id = ?1 ORDER BY ordinal);

-- name: launches_of
SELECT coalesce(group_concat(ordinal || ':' || kernel || '=' || launches, ' '), '')
FROM (SELECT * FROM verification_launches WHERE verification_id = ?1 ORDER BY ordinal);

-- name: report_of
SELECT result_json FROM verifications WHERE id = ?1;

-- A verification as a kforge before migration 0025 stored it: its report and mutation score.
-- name: insert_before_columns
INSERT INTO verifications (run_id, sample_id, verdict, flags_json, result_json, created_ms,
                           mutants_killed, mutants_applicable)
VALUES (1, 1, 'passed', '[]', ?1, 1, ?2, ?3);

-- name: second_sample
INSERT INTO samples (id, key, code_sha256, code, record_json, source, source_index, created_ms,
                     updated_ms)
VALUES (2, 'vector_mul', 'def', 'code', '{}', 'test.json', 1, 1, 1);

-- Which verification counts for each sample of run ?1, and for each of its rounds.
-- name: latest_of_run
SELECT coalesce(group_concat(sample_id || '=' || id, ' '), '')
FROM (SELECT sample_id, id FROM latest_verification WHERE run_id = ?1 ORDER BY sample_id);

-- name: latest_of_rounds
SELECT coalesce(group_concat(sample_id || '/' || repair_round || '=' || id, ' '), '')
FROM (SELECT sample_id, repair_round, id FROM latest_round_verification WHERE run_id = ?1
      ORDER BY sample_id, repair_round);
