#!/usr/bin/env bash
# The CPU an idle kforged spends on a database with ten finished 4,000-sample runs
# (bench/idle/fill.sql: 40,000 jobs, 80,000 stage outputs and LLM calls, 40,000 verifications).
# Usage: bench/idle/run.sh [SECONDS]   (default 60; KFORGED picks the binary, KFORGE_BENCH_SQL
# the SQL runner: fill.sql stores its texts with kf_put(), so it needs schema 15 or later)
# Prints the database's size and the daemon's user+system CPU over SECONDS after a 5 s settle,
# as a percentage of one core; the last line as key=value.
set -euo pipefail
cd "$(dirname "$0")/../.."
kforged="${KFORGED:-build/apps/kforged/kforged}"
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
  echo "CREATE TEMP TABLE bench_now(ms INTEGER); INSERT INTO bench_now VALUES ($now_ms);"
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
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""
cpu_pct="$(python3 -c "print(f'{100 * ($t1 - $t0) / $hz / ($s1 - $s0):.2f}')")"
cpu_s="$(python3 -c "print(f'{($t1 - $t0) / $hz:.2f}')")"
echo "database: ${db_mb} MB, 10 finished runs of 4,000 samples"
echo "idle kforged: ${cpu_s} s of CPU in ${seconds} s: ${cpu_pct}% of a core"
echo "db_mb=$db_mb seconds=$seconds cpu_s=$cpu_s cpu_pct=$cpu_pct"
