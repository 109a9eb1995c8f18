-- kforge schema, version 7: the verifier's Slurm backend (verifier.backend: slurm). Each sbatch
-- --array submission, its tasks and the jobs in each task's shard are checkpointed here, so a
-- restarted kforged finds its array jobs and goes on watching them instead of resubmitting.
CREATE TABLE slurm_arrays (
  id            INTEGER PRIMARY KEY,
  slurm_job_id  TEXT,                  -- what sbatch --parsable printed; NULL until it accepted
  dir           TEXT NOT NULL,         -- under verifier.slurm.shared_dir: shards, results, logs
  owner         TEXT NOT NULL,         -- the kforged that submitted or took it over
  tasks         INTEGER NOT NULL,
  created_ms    INTEGER NOT NULL,
  submitted_ms  INTEGER,
  ended_ms      INTEGER                -- every task ended and was accounted for
);
CREATE INDEX slurm_arrays_open ON slurm_arrays(ended_ms);

CREATE TABLE slurm_tasks (
  array_id     INTEGER NOT NULL REFERENCES slurm_arrays(id) ON DELETE CASCADE,
  task         INTEGER NOT NULL,       -- SLURM_ARRAY_TASK_ID; its shard is shard-<task>.jsonl
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  -- pending | running | completed | failed | cancelled | timeout | node_fail | lost
  state        TEXT NOT NULL DEFAULT 'pending',
  slurm_state  TEXT,                   -- JobState as scontrol printed it
  exit_code    TEXT,                   -- ExitCode as scontrol printed it
  samples      INTEGER NOT NULL,
  stored       INTEGER NOT NULL DEFAULT 0,   -- verdicts stored from its result file
  requeued     INTEGER NOT NULL DEFAULT 0,   -- samples sent back to the queue when it ended
  updated_ms   INTEGER NOT NULL,
  ended_ms     INTEGER,
  PRIMARY KEY (array_id, task)
);
CREATE INDEX slurm_tasks_state ON slurm_tasks(state);

CREATE TABLE slurm_task_jobs (
  array_id  INTEGER NOT NULL,
  task      INTEGER NOT NULL,
  idx       INTEGER NOT NULL,          -- the record's index in the shard (0-based)
  job_id    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt   INTEGER NOT NULL,          -- the verification attempt its verdict is stored as
  outcome   TEXT,                      -- NULL while waiting; stored | requeued | dropped
  PRIMARY KEY (array_id, task, idx),
  FOREIGN KEY (array_id, task) REFERENCES slurm_tasks(array_id, task) ON DELETE CASCADE
);
CREATE INDEX slurm_task_jobs_job ON slurm_task_jobs(job_id);

-- The latest problem talking to Slurm (kind 'submit': sbatch refused; 'watch': scontrol failed),
-- cleared when the same call works again. `kforge status` shows these as alerts.
CREATE TABLE slurm_alerts (
  kind        TEXT PRIMARY KEY,
  message     TEXT NOT NULL,
  count       INTEGER NOT NULL DEFAULT 1,
  since_ms    INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL
);
