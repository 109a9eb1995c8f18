#!/usr/bin/env python3
"""Replays N pipeline stages' writes on a copy of a finished run's database (kforge-bench-pipeline
--keep DIR: DIR/kforge.db), with the statements of a tree's pipeline.sql, prepared once: leases of
50 jobs (lease_jobs), then per job one transaction holding advance_job and a generate answer's
insert (a copy of a stored answer, its texts already stored: no kf_put). Run it under callgrind
for each variant of the schema (an index or trigger dropped, a migration applied); the variants
run the same Python, so the difference of their counts is the SQL's. Subtract a run with N = 0.

  sqlite3 COPY.db "UPDATE jobs SET state = 'queued', stage = 'generate', lease_owner = NULL,
                   lease_expires_ms = NULL, not_before_ms = 0 WHERE run_id = 1"
  valgrind --tool=callgrind --callgrind-out-file=cg.N /usr/bin/python3 stage_writes.py \\
      COPY.db N libs/pipeline/sql/pipeline.sql [answer-first]

answer-first: the answer's insert before advance_job (the checkpoint's order from migration 0054).
/usr/bin/python3: the system's Python, whose sqlite3 module uses the system's libsqlite3 (as
kforged does); a pyenv shim would be counted instead of Python.
"""

import re
import sqlite3
import sys

INSERT_ANSWER = (
    "INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, prompt_version, "
    "prompt_sha256, request_sha256, request_text, response_text, parsed_text, error_kind, error, "
    "prompt_tokens, completion_tokens, cost_usd, latency_ms, created_ms, repair_round, "
    "reasoning_tokens, cached_prompt_tokens, reasoning_text, mended) "
    "SELECT ?1, run_id, ?2, stage, attempt, status, prompt_version, prompt_sha256, request_sha256, "
    "request_text, response_text, parsed_text, error_kind, error, prompt_tokens, completion_tokens, "
    "cost_usd, latency_ms, ?3, repair_round, reasoning_tokens, cached_prompt_tokens, reasoning_text, "
    "mended FROM stage_outputs WHERE id = ?4")


def named(text: str, name: str) -> str:
    m = re.search(r"-- name: " + name + r"\n(.*?;)\n", text, re.S)
    if not m:
        raise SystemExit(f"stage_writes: no query {name}")
    return m.group(1)


def main() -> None:
    db_path, n, sql_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    answer_first = len(sys.argv) > 4 and sys.argv[4] == "answer-first"
    text = open(sql_path, encoding="utf-8").read()
    lease, advance = named(text, "lease_jobs"), named(text, "advance_job")
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA foreign_keys=ON")
    answer = con.execute("SELECT id FROM stage_outputs WHERE stage = 'generate' AND status = 'ok' "
                         "ORDER BY id LIMIT 1").fetchone()[0]
    now = 1_800_000_000_000
    done = 0
    while done < n:
        now += 1
        rows = con.execute(lease, (1, "host:1", now + 60000, now, min(50, n - done))).fetchall()
        if not rows:
            break
        for (job_id, _run_id, sample_id, _stage, _attempts, _round) in sorted(rows):
            now += 1
            con.execute("BEGIN IMMEDIATE")
            if answer_first:
                con.execute(INSERT_ANSWER, (job_id, sample_id, now, answer))
            cur = con.execute(advance,
                              (job_id, "host:1", "verify_queued", "verify", 0, 0, None, None, now))
            assert cur.rowcount == 1
            if not answer_first:
                con.execute(INSERT_ANSWER, (job_id, sample_id, now, answer))
            con.execute("COMMIT")
            done += 1
    print("stages", done)


if __name__ == "__main__":
    main()
