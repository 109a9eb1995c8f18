-- kforge schema, version 48: what the scoring endpoint (libs/score, score.sql) reads of the
-- verifications, by index rather than by scanning them all.
--
-- verifications_job: the ticker settles every open scored item every 100 ms by looking for its
-- job's verdict (settle_judged); without it each open item scanned every verification, under
-- the service's one connection, so that submits and polls queued behind a tick that grew with
-- the database (512 open items against 100,000 verifications: 51 million rows a tick).
-- verifications_sample: the verdict cache (item_cached) looks up the newest verdict of each
-- submitted item's sample; the only index had sample_id second, after run_id.
CREATE INDEX verifications_job ON verifications(job_id);
CREATE INDEX verifications_sample ON verifications(sample_id, id);
