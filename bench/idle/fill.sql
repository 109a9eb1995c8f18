-- Ten finished 4,000-sample v2 runs, as a long-used database holds them: per run 4,000 jobs
-- (done), 8,000 stage outputs (analyze and generate, with their request and answer texts),
-- 8,000 LLM calls, 4,000 verifications and 4,000 events (one warning per job). Sizes are of the
-- order real runs store; the texts are filler. The runs ended a day before the run's clock
-- (bench_now), so their events are outside `kforge status`'s 24-hour error window, as most of a
-- long history is. Expects a migrated, empty database and TEMP TABLE bench_now(ms, runs): the
-- number of runs (ten by default in bench/idle/run.sh).
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 4000)
INSERT INTO samples (id, key, code_sha256, code, description_1, description_2, record_json,
                     source, source_index, created_ms, updated_ms)
SELECT n, 'sample' || n, printf('%064d', n), printf('%.*c', 3000, 'c'), 'interface', 'task',
       '{}', 'train_crawl.json', n - 1, 0, 0
FROM i;

WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < (SELECT runs FROM bench_now))
INSERT INTO runs (id, tag, pipeline, model, state, created_ms, updated_ms)
SELECT n, 'run' || n, 'v2', 'model', 'finished', 0, (SELECT ms FROM bench_now) - 86400000
FROM r;

INSERT INTO jobs (id, run_id, sample_id, state, stage, attempts, created_ms, updated_ms)
SELECT (r.id - 1) * 4000 + s.id, r.id, s.id, CASE WHEN s.id % 20 = 0 THEN 'failed' ELSE 'done' END,
       CASE WHEN s.id % 20 = 0 THEN 'generate' ELSE 'done' END, 1, 0, 1000
FROM runs r, samples s;

INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, prompt_version,
                           prompt_sha256, request_sha256, request_text, response_text,
                           parsed_text, prompt_tokens, completion_tokens, cost_usd, created_ms)
SELECT j.id, j.run_id, j.sample_id, st.stage, 1, 'ok', 'v2', printf('%064d', 0),
       printf('%064d', j.id * 2 + st.k), kf_put(printf('%.*c', 4000, 'q')),
       kf_put(printf('%.*c', 1500, 'a')), kf_put('{}'), 1200, 400, 0.001, 1000 + j.id
FROM jobs j, (SELECT 'analyze' AS stage, 0 AS k UNION ALL SELECT 'generate', 1) st;

INSERT INTO llm_calls (request_sha256, tag, url, model, status, attempts, prompt_tokens,
                       completion_tokens, cost_usd, request_text, response_text, created_ms,
                       run_tag)
SELECT printf('%064d', j.id * 2 + st.k),
       'run=run' || j.run_id || ' sample=sample' || j.sample_id || ' stage=' || st.stage ||
         ' attempt=1',
       'http://127.0.0.1:9/v1/chat/completions', 'model', 'ok', 1, 1200, 400, 0.001,
       kf_put(printf('%.*c', 4000, 'q')), kf_put(printf('%.*c', 1500, 'a')), 1000 + j.id,
       'run' || j.run_id
FROM jobs j, (SELECT 'analyze' AS stage, 0 AS k UNION ALL SELECT 'generate', 1) st;

INSERT INTO verifications (job_id, run_id, sample_id, verdict, detail, result_json, script,
                           stderr_tail, duration_ms, created_ms)
SELECT id, run_id, sample_id, CASE WHEN id % 3 = 0 THEN 'failed' ELSE 'passed' END, 'detail',
       '{}', printf('%.*c', 3000, 's'), printf('%.*c', 500, 'e'), 900, 2000
FROM jobs WHERE state = 'done';

INSERT INTO job_events (run_id, job_id, sample_id, stage, attempt, level, kind, message,
                        created_ms)
SELECT run_id, id, sample_id, 'generate', 1, 'warn', 'parse', 'the answer is not JSON', 1000
FROM jobs;
COMMIT;
