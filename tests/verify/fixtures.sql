-- Rows the verifications table refers to (runs and samples), for store tests.
INSERT INTO samples (id, key, code_sha256, code, record_json, source, source_index, created_ms,
                     updated_ms)
VALUES (1, 'vector_add', 'abc', 'code', '{}', 'test.json', 0, 1, 1);
INSERT INTO runs (id, tag, pipeline, model, created_ms, updated_ms)
VALUES (1, 'v2-test', 'v2', 'model-x', 1, 1);
