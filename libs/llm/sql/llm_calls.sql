-- name: good_response
SELECT id, kf_text(response_text), cost_usd, prompt_tokens, completion_tokens FROM llm_calls
WHERE request_sha256 = ?1 AND status = 'ok' ORDER BY id DESC LIMIT 1;  -- not vocabulary: an LLM call's status

-- name: has_good_response
SELECT 1 FROM llm_calls WHERE request_sha256 = ?1 AND status = 'ok' LIMIT 1;  -- not vocabulary: an LLM call's status

-- name: last_cut
-- The largest max_tokens a request was sent with and cut at (its answer ended at the limit).
SELECT max(CAST(json_extract(kf_text(request_text), '$.max_tokens') AS INTEGER)) FROM llm_calls
WHERE request_sha256 = ?1 AND status = 'error' AND error_kind = 'truncated';  -- not vocabulary: an LLM call's status

-- name: same_error
-- A failed result line already recorded (an import of the same file again).
SELECT 1 FROM llm_calls WHERE request_sha256 = ?1 AND status = 'error' AND error = ?2 LIMIT 1;  -- not vocabulary: an LLM call's status

-- name: insert_call
INSERT INTO llm_calls (request_sha256, tag, url, model, status, error_kind, error, http_status,
                       attempts, latency_ms, prompt_tokens, completion_tokens, cost_usd,
                       finish_reason, request_text, response_text, replay_of, created_ms,
                       reasoning_tokens, cached_prompt_tokens, run_tag)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, kf_put(?15), kf_put(?16), ?17,
        ?18, ?19, ?20, nullif(?21, ''));
