-- A query file made to have one of each finding of scripts/check-sql-vocabulary (ctest
-- store.sql_vocabulary_finds): 'passed' in a comment is not one.

-- name: spelled
SELECT count(*) FROM verifications WHERE verdict = 'passed';

-- name: in_a_pattern
SELECT count(*) FROM verifications WHERE flags_json LIKE '%"out_of_bounds"%';

-- name: unknown_token
SELECT count(*) FROM verifications WHERE verdict = :verdict_pased;

-- name: fine
SELECT count(*) FROM verifications v JOIN jobs j ON j.id = v.job_id
WHERE v.verdict = :verdict_passed AND j.state = 'failed';  -- not vocabulary: a job's state
