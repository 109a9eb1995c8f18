-- name: run_by_tag
SELECT id, tag, pipeline, model, state, prompts_json, params_json, created_ms FROM runs
WHERE tag = ?1;

-- name: run_tags
SELECT tag FROM runs ORDER BY created_ms, id;
