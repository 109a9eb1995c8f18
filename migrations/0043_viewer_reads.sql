-- kforge schema, version 43: what the viewer (kforge serve) reads of a run at 20,000 samples.
--
-- jobs_run_updated: a run's newest job update (part of the fingerprint the viewer keeps a run's
-- outcomes and page parts under, read on every page) from the index's last entry, rather than
-- from every job row of the run.
CREATE INDEX jobs_run_updated ON jobs(run_id, updated_ms);

-- The speed label's kernel share: the part of the timed call's GPU time the sample's own Triton
-- launches took (docs/VERIFIER.md, "The kernels' share of the timed call"), a column beside the
-- speedup so that a run's list shows it without parsing each stored report. Verify's store
-- writes it from now on; the labels stored before are read from their reports here.
ALTER TABLE verification_speed ADD COLUMN kernel_share REAL;

UPDATE verification_speed SET kernel_share = (
  SELECT json_extract(v.result_json, '$.speed.reference.kernel_share') FROM verifications v
  WHERE v.id = verification_speed.verification_id AND json_valid(v.result_json))
WHERE EXISTS (SELECT 1 FROM verifications v
              WHERE v.id = verification_speed.verification_id AND json_valid(v.result_json)
                AND json_type(v.result_json, '$.speed.reference.kernel_share')
                    IN ('real', 'integer'));
