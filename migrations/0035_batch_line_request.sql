-- kforge schema, version 35: a batch line's request in the text store.
--
-- Batch mode keeps none of a batch's requests in memory while it waits for the batch (hours):
-- each request's body is put into `texts` when it reaches the batch runner, the input file is
-- written from there, and when the line's outcome comes its request is read back from there
-- (libs/llm/src/batch_ledger.cpp). The text is the one llm_calls.request_text and
-- stage_outputs' request later name (stored once, by its SHA-256), so keeping the reference
-- costs a number per line. NULL for lines recorded before this version, which keep their body
-- in request_json until their input file is uploaded.
ALTER TABLE llm_batch_lines ADD COLUMN request_text INTEGER REFERENCES texts(id);
