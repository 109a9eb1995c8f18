#!/usr/bin/env bash
# Fills a new database with the report test fixture (tests/report/fixtures) copied COPIES times
# by scale.sql: runs v1 and v2 over about 15 x COPIES samples. Usage:
#   bench/report/fill.sh CONFIG COPIES   (the database is the one CONFIG names; KFORGE and
#   KFORGE_BENCH_SQL pick the binaries)
set -euo pipefail
cd "$(dirname "$0")/../.."
kforge="${KFORGE:-build/apps/kforge/kforge}"
# The fill scripts use kforge's SQL functions (kf_put), which the sqlite3 shell lacks.
bench_sql="${KFORGE_BENCH_SQL:-build/bench/kforge-bench-sql}"
cfg="$1"
copies="$2"
db="$(sed -n 's/^  path: //p' "$cfg")"
"$kforge" -q -c "$cfg" import tests/report/fixtures/corpus.json \
  --map code=output,description_1=simp_instru,description_2=comp_instru,key=file >/dev/null
"$bench_sql" "$db" tests/report/fixtures/ab_runs.sql
{
  echo "CREATE TEMP TABLE bench_scale(copies INTEGER); INSERT INTO bench_scale VALUES ($copies);"
  cat bench/report/scale.sql
} | "$bench_sql" "$db"
