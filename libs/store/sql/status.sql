-- name: runs_overview
SELECT r.id, r.tag, r.pipeline, r.model, r.state, r.created_ms,
       (SELECT count(*) FROM jobs j WHERE j.run_id = r.id)
FROM runs r ORDER BY r.created_ms, r.id;

-- name: jobs_by_state
SELECT state, count(*) FROM jobs WHERE run_id = ?1 GROUP BY state ORDER BY state;

-- name: jobs_by_state_all
SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state;
