-- The verifier's Slurm backend (slurm_backend.cpp): array jobs, their tasks and the jobs in
-- each task's shard (migrations/0007_slurm.sql). The jobs themselves are the VerifyQueue's: no
-- query here reads or writes them.

-- name: slurm_in_flight
SELECT count(*) FROM slurm_task_jobs tj
JOIN slurm_tasks t ON t.array_id = tj.array_id AND t.task = tj.task
WHERE t.ended_ms IS NULL AND tj.outcome IS NULL;

-- name: slurm_new_array
INSERT INTO slurm_arrays (dir, owner, tasks, created_ms) VALUES ('', ?1, 0, ?2) RETURNING id;

-- name: slurm_array_set_dir
UPDATE slurm_arrays SET dir = ?2, tasks = ?3 WHERE id = ?1;

-- name: slurm_new_task
INSERT INTO slurm_tasks (array_id, task, run_id, samples, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5);

-- name: slurm_new_task_job
INSERT INTO slurm_task_jobs (array_id, task, idx, job_id, attempt) VALUES (?1, ?2, ?3, ?4, ?5);

-- name: slurm_array_submitted
UPDATE slurm_arrays SET slurm_job_id = ?2, submitted_ms = ?3 WHERE id = ?1;

-- name: slurm_delete_array
DELETE FROM slurm_arrays WHERE id = ?1;

-- name: slurm_open_arrays
SELECT id, slurm_job_id, dir FROM slurm_arrays
WHERE ended_ms IS NULL AND slurm_job_id IS NOT NULL AND owner = ?1 ORDER BY id;

-- name: slurm_live_tasks
SELECT task, state, run_id FROM slurm_tasks
WHERE array_id = ?1 AND ended_ms IS NULL ORDER BY task;

-- The jobs the live tasks of an array have not settled yet, by task, with their place in the
-- shard (the backend asks its queue which of them it still holds: a task holding none is
-- scancelled, the others are listed in the task's skip file).
-- name: slurm_open_task_jobs
SELECT tj.task, tj.job_id, tj.idx FROM slurm_task_jobs tj
JOIN slurm_tasks t ON t.array_id = tj.array_id AND t.task = tj.task
WHERE tj.array_id = ?1 AND t.ended_ms IS NULL AND tj.outcome IS NULL ORDER BY tj.task, tj.idx;

-- name: slurm_task_job
SELECT job_id, attempt FROM slurm_task_jobs
WHERE array_id = ?1 AND task = ?2 AND idx = ?3 AND outcome IS NULL;

-- name: slurm_set_outcome
UPDATE slurm_task_jobs SET outcome = ?4
WHERE array_id = ?1 AND task = ?2 AND idx = ?3 AND outcome IS NULL;

-- name: slurm_task_counts
UPDATE slurm_tasks SET stored = stored + ?3, requeued = requeued + ?4, updated_ms = ?5
WHERE array_id = ?1 AND task = ?2;

-- name: slurm_task_state
UPDATE slurm_tasks SET state = ?3, slurm_state = ?4, exit_code = ?5, updated_ms = ?6
WHERE array_id = ?1 AND task = ?2 AND ended_ms IS NULL;

-- name: slurm_task_end
UPDATE slurm_tasks SET state = ?3, slurm_state = ?4, exit_code = ?5, updated_ms = ?6,
                       ended_ms = ?6
WHERE array_id = ?1 AND task = ?2 AND ended_ms IS NULL;

-- name: slurm_unfinished
SELECT idx, job_id FROM slurm_task_jobs
WHERE array_id = ?1 AND task = ?2 AND outcome IS NULL ORDER BY idx;

-- name: slurm_times_requeued
SELECT count(*) FROM slurm_task_jobs WHERE job_id = ?1 AND outcome = 'requeued';

-- name: slurm_array_end
UPDATE slurm_arrays SET ended_ms = ?2
WHERE id = ?1 AND ended_ms IS NULL
  AND NOT EXISTS (SELECT 1 FROM slurm_tasks WHERE array_id = ?1 AND ended_ms IS NULL);

-- Arrays an earlier kforged inserted but crashed before sbatch accepted: nothing runs them.
-- Arrays whose sbatch an earlier kforged may have run, dying before it recorded the job id.
-- name: slurm_unsubmitted_arrays
SELECT id, dir FROM slurm_arrays WHERE slurm_job_id IS NULL AND ended_ms IS NULL AND dir != '';

-- name: slurm_drop_unsubmitted_jobs
UPDATE slurm_task_jobs SET outcome = 'dropped'
WHERE outcome IS NULL AND array_id IN (SELECT id FROM slurm_arrays
                                       WHERE slurm_job_id IS NULL AND ended_ms IS NULL);

-- name: slurm_drop_unsubmitted_tasks
UPDATE slurm_tasks SET state = 'lost', ended_ms = ?1, updated_ms = ?1
WHERE ended_ms IS NULL AND array_id IN (SELECT id FROM slurm_arrays
                                        WHERE slurm_job_id IS NULL AND ended_ms IS NULL);

-- name: slurm_drop_unsubmitted_arrays
UPDATE slurm_arrays SET ended_ms = ?1 WHERE slurm_job_id IS NULL AND ended_ms IS NULL;

-- The jobs in live tasks of an earlier kforged of this daemon (owner GLOB ?1): the backend
-- adopts them (VerifyQueue::adopt) before the others it was verifying are taken back.
-- name: slurm_adoptable_jobs
SELECT DISTINCT tj.job_id FROM slurm_task_jobs tj
JOIN slurm_tasks t ON t.array_id = tj.array_id AND t.task = tj.task
JOIN slurm_arrays a ON a.id = t.array_id
WHERE t.ended_ms IS NULL AND tj.outcome IS NULL AND a.owner GLOB ?1 ORDER BY tj.job_id;

-- name: slurm_adopt_arrays
UPDATE slurm_arrays SET owner = ?1 WHERE ended_ms IS NULL AND owner GLOB ?2;

-- name: slurm_alert_set
INSERT INTO slurm_alerts (kind, message, count, since_ms, updated_ms) VALUES (?1, ?2, 1, ?3, ?3)
ON CONFLICT (kind) DO UPDATE SET message = excluded.message, count = count + 1,
                                 updated_ms = excluded.updated_ms;

-- name: slurm_alert_clear
DELETE FROM slurm_alerts WHERE kind = ?1;

-- name: slurm_alerts
SELECT kind, message, count, since_ms, updated_ms FROM slurm_alerts ORDER BY kind;

-- name: slurm_tasks_by_state
SELECT state, count(*) FROM slurm_tasks GROUP BY state ORDER BY state;

-- The live tasks of one run, as Slurm names them (ARRAYID_TASK), for `kforge run cancel`.
-- name: slurm_run_tasks
SELECT a.slurm_job_id || '_' || t.task FROM slurm_tasks t JOIN slurm_arrays a ON a.id = t.array_id
WHERE t.run_id = ?1 AND t.ended_ms IS NULL AND a.slurm_job_id IS NOT NULL ORDER BY a.id, t.task;

-- A later array holds the job too: this row is stale and must not touch the job.
-- name: slurm_newer_open
SELECT count(*) FROM slurm_task_jobs WHERE job_id = ?1 AND outcome IS NULL AND array_id > ?2;
