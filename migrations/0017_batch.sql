-- kforge schema, version 17: batch mode's continuation lines and provider files.
--
-- A cut answer (finish_reason length) is asked again with a larger max_tokens as a new line:
-- its custom_id is a new identity (the continuation's, libs/llm/src/identity.cpp), and
-- `continues` names the call it answers (llm_calls.request_sha256); NULL when the custom_id is
-- the call's own identity.
ALTER TABLE llm_batch_lines ADD COLUMN continues TEXT;

-- When the batch's input, output and error files were deleted at the provider (NULL: not yet,
-- or kept with llm.batch.keep_files).
ALTER TABLE llm_batches ADD COLUMN files_deleted_ms INTEGER;
