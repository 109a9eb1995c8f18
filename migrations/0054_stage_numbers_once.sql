-- kforge schema, version 54: two writes off a pipeline stage's path; what the viewer reads and
-- when it sees a change are as before (issue 51's "kforge-bench-pipeline unchanged": instruction
-- counts per stage in docs/BENCHMARKS.md, about 50,000 of the stage's 4.9 million).
--
-- An answer inserted for a leased job does not number the job. The statement that ends a lease
-- numbers it: pipeline.sql's advance_job sets the job's number itself, and a release, a requeue
-- (an expired lease's too), a cancellation or a deletion is numbered by migration 0053's
-- triggers (they change the job's state, or record the deletion). The checkpoint inserts its
-- answer before ending the lease, in the same transaction, so the number advance_job gives the
-- job covers the answer as well; before, the answer's insert numbered the job a second time
-- (a second read of the run's next number, a second move of the job's entry in jobs_change_seq:
-- about 30,000 instructions a stage). An answer inserted for a job that is not leased (the
-- verifier's jobs, a scoring run's, any other writer's) is numbered as before.
--
-- jobs_run_updated (0043) goes: the viewer's fingerprint of a run read the run's newest job
-- update from it, and each lease and checkpoint moved the job's entry (about 20,000 instructions
-- a stage). The fingerprint holds the run's newest change number (0050, 0053) instead: every
-- statement of libs/*/sql that sets a job's updated_ms also sets a column 0053's trigger numbers
-- (tests/report's ViewerChanges holds every UPDATE of jobs to that), so the number moves
-- whenever the update did. No other query's plan used the index (run_recent_finish_times reads
-- a run's failed jobs through jobs_run_state).

DROP INDEX jobs_run_updated;

DROP TRIGGER outcome_changes_output_insert;
CREATE TRIGGER outcome_changes_output_insert AFTER INSERT ON stage_outputs
WHEN (SELECT j.state FROM jobs j WHERE j.id = NEW.job_id) IS NOT 'leased' BEGIN
  UPDATE jobs SET change_seq = max(coalesce((SELECT max(j.change_seq) FROM jobs j WHERE j.run_id = NEW.run_id), 0),
                       coalesce((SELECT g.seq FROM outcome_changes_gone g WHERE g.run_id = NEW.run_id), 0)) + 1
  WHERE run_id = NEW.run_id AND sample_id = NEW.sample_id;
END;
