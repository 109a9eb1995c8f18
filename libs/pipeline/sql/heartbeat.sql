-- Daemon liveness: one row per kforged start (migration 0009).

-- name: heartbeat_insert
INSERT INTO daemon_heartbeats (host, pid, owner, version, started_ms, beat_ms, interval_ms,
                               metrics, verifies)
VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8);

-- name: heartbeat_beat
UPDATE daemon_heartbeats SET beat_ms = ?2 WHERE id = ?1;

-- name: heartbeat_stop
UPDATE daemon_heartbeats SET beat_ms = ?2, stopped_ms = ?2 WHERE id = ?1;

-- Rows of other starts older than the last 50 go: the table stays small however often it starts.
-- name: heartbeat_trim
DELETE FROM daemon_heartbeats WHERE id <= (SELECT max(id) FROM daemon_heartbeats) - 50;

-- The latest start.
-- name: heartbeat_latest
SELECT id, host, pid, owner, version, started_ms, beat_ms, interval_ms, metrics, stopped_ms,
       verifies
FROM daemon_heartbeats ORDER BY id DESC LIMIT 1;

-- What a starting daemon takes up: per active run, its jobs for the LLM stages and to verify.
-- name: resume_by_run
SELECT r.tag, sum(j.state IN ('queued', 'leased')), sum(j.state IN ('verify_queued', 'verifying'))
FROM runs r JOIN jobs j ON j.run_id = r.id
WHERE r.state = 'active' AND j.state NOT IN ('done', 'failed', 'cancelled')  -- not vocabulary: job states
GROUP BY r.id ORDER BY r.id;
