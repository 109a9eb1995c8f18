#!/usr/bin/env bash
# The CPU an idle kforged spends on a database with finished 4,000-sample runs
# (bench/idle/fill.sql: 40,000 jobs, 80,000 stage outputs and LLM calls, 40,000 verifications).
# Usage: bench/idle/run.sh [SECONDS]   (default 60; KFORGED picks the binary, KFORGE the CLI,
# KFORGE_BENCH_SQL the SQL runner: fill.sql stores its texts with kf_put(), so it needs schema 15
# or later; KFORGE_IDLE_VERIFY=1 runs the verifier too, a warm pool of two CPU workers with the
# tests' stand-in Triton, as a daemon with daemon.verify on idles; KFORGE_IDLE_RUNS the number of
# finished runs, 10 by default: 50 make a database of about 1 GB)
# Prints the database's size and the daemon's user+system CPU over SECONDS after a 5 s settle,
# as a percentage of one core; then how long the idle daemon takes to lease the first job of a
# run `kforge run create` makes (pickup_ms); the last line as key=value.
set -euo pipefail
cd "$(dirname "$0")/../.."
kforged="${KFORGED:-build/apps/kforged/kforged}"
kforge="${KFORGE:-build/apps/kforge/kforge}"
verify="${KFORGE_IDLE_VERIFY:-0}"
runs="${KFORGE_IDLE_RUNS:-10}"
seconds="${1:-60}"
dir="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
db="$dir/kforge.db"
cat >"$dir/kforge.yaml" <<YAML
store:
  path: $db
llm:
  base_url: http://127.0.0.1:9/v1
  model: model
  api_key_env: ""
daemon:
  http_listen: ""
  verify: false
log:
  file: $dir/kforged.log
YAML
if [[ "$verify" == "1" ]]; then
  sed -i 's/^  verify: false/  verify: true/' "$dir/kforge.yaml"
  cat >>"$dir/kforge.yaml" <<YAML
verifier:
  devices: [cpu]
  cpu_workers: 2
  python: /usr/bin/python3
  python_path: ["$PWD/tests/verify/fake_triton"]
  preload: [triton, triton.language]
  work_dir: $dir/verify-work
YAML
fi

# The schema, from the kforged measured (it migrates the database at start), then the rows.
"$kforged" -c "$dir/kforge.yaml" >"$dir/kforged.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  sqlite3 "$db" 'SELECT 1 FROM runs LIMIT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""
now_ms="$(($(date +%s) * 1000))"
{
  echo "CREATE TEMP TABLE bench_now(ms INTEGER, runs INTEGER);"
  echo "INSERT INTO bench_now VALUES ($now_ms, $runs);"
  cat bench/idle/fill.sql
} | "${KFORGE_BENCH_SQL:-build/bench/kforge-bench-sql}" "$db" >/dev/null
db_mb="$(du -m "$db" | cut -f1)"

"$kforged" -c "$dir/kforge.yaml" >"$dir/kforged.out" 2>&1 &
pid=$!
sleep 5
kill -0 "$pid" || { cat "$dir/kforged.out"; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz="$(getconf CLK_TCK)"
t0="$(ticks)"
s0="$(date +%s.%N)"
sleep "$seconds"
t1="$(ticks)"
s1="$(date +%s.%N)"
# A new run, made as a user makes it: how long until the idle daemon leases its first job.
"$kforge" -c "$dir/kforge.yaml" -q run create pickup --pipeline v2 --limit 1 >/dev/null
c0="$(date +%s%N)"
pickup_ms=""
for _ in $(seq 1000); do
  left="$(sqlite3 "$db" "SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id
                         WHERE r.tag = 'pickup' AND j.state = 'queued' AND j.attempts = 0")"
  if [[ "$left" == "0" ]]; then
    pickup_ms="$((($(date +%s%N) - c0) / 1000000))"
    break
  fi
  sleep 0.01
done
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""
cpu_pct="$(python3 -c "print(f'{100 * ($t1 - $t0) / $hz / ($s1 - $s0):.2f}')")"
cpu_s="$(python3 -c "print(f'{($t1 - $t0) / $hz:.2f}')")"
echo "database: ${db_mb} MB, $runs finished runs of 4,000 samples"
echo "idle kforged (verifier $([[ "$verify" == 1 ]] && echo on || echo off)): ${cpu_s} s of CPU in ${seconds} s: ${cpu_pct}% of a core"
echo "a new run's first job leased ${pickup_ms:-never (10 s)} ms after run create returned"
echo "db_mb=$db_mb runs=$runs verify=$verify seconds=$seconds cpu_s=$cpu_s cpu_pct=$cpu_pct pickup_ms=${pickup_ms:-none}"
