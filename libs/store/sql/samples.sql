-- name: sample_by_key
SELECT id, code_sha256, record_json, description_1, description_2 FROM samples WHERE key = ?1;

-- name: insert_sample
INSERT INTO samples (key, code_sha256, code, description_1, description_2, record_json, source,
                     source_index, created_ms, updated_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9);

-- name: update_sample
UPDATE samples SET code_sha256 = ?2, code = ?3, description_1 = ?4, description_2 = ?5,
                   record_json = ?6, source = ?7, source_index = ?8, updated_ms = ?9
WHERE key = ?1;

-- name: count_samples
SELECT count(*) FROM samples;
