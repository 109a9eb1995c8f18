#!/usr/bin/env bash
# Page times of the viewer (kforge serve) on a large database: the report fixture copied COPIES
# times (default 267: 4,005 samples, runs v1 and v2 over nearly all of them), each page fetched
# REPEAT times (default 5) with curl over loopback; prints the median and the slowest of each,
# and the server's CPU time of the first fetch and per fetch of the others.
# kforge serve reads the two newest runs (v2-qwen, v2) ahead as it starts: the first fetch of
# v2's pages finds them read (or waits for that read); samples_cold is the first samples page of
# v1 (20,040 samples at 1335 copies), which is not read ahead: a run's outcomes read cold.
# samples_moving: v2's first page after 20 of its jobs changed, as while kforged works on it.
# Baseline: the sqlite3 shell running the queries (outcomes.sql's outcome_*) a whole read of a
# run's outcomes runs, over the same run.
# Usage: bench/report/viewer.sh [COPIES] [REPEAT]   (KFORGE picks the binary)
set -euo pipefail
cd "$(dirname "$0")/../.."
kforge="${KFORGE:-build/apps/kforge/kforge}"
copies="${1:-267}"
repeat="${2:-5}"
dir="$(mktemp -d)"
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
cfg="$dir/kforge.yaml"
db="$dir/kforge.db"
printf 'store:\n  path: %s\n' "$db" >"$cfg"
KFORGE="$kforge" bench/report/fill.sh "$cfg" "$copies"
samples="$(sqlite3 "$db" "SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id WHERE r.tag = 'v2'")"

"$kforge" -q -c "$cfg" serve --listen 127.0.0.1:0 >"$dir/serve.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q 'kforge serve: http' "$dir/serve.out" 2>/dev/null && break
  sleep 0.1
done
base="$(grep -o 'http://[^ ]*/' "$dir/serve.out" | head -1)"
[[ -n "$base" ]] || { cat "$dir/serve.out" >&2; exit 1; }
last_page=$(((samples + 49) / 50))
key="$(sqlite3 "$db" "SELECT s.key FROM samples s WHERE s.key LIKE 'copy_transpose.py#%' LIMIT 1" | sed 's/#/%23/')"

# The server's CPU time so far (user + system), in ms: unlike wall time, it does not grow with
# the other processes competing for the machine's two cores.
cpu_ms() {
  python3 -c '
import os, sys
f = open("/proc/%s/stat" % sys.argv[1]).read().rsplit(")", 1)[1].split()
print(int((int(f[11]) + int(f[12])) * 1000 / os.sysconf("SC_CLK_TCK")))' "$pid"
}

# First fetch, median and maximum of REPEAT fetches of one page (wall, ms), the server's CPU
# time for the first fetch and per fetch of the others.
time_page() {
  local path="$1" times=() before first after
  before="$(cpu_ms)"
  for i in $(seq 1 "$repeat"); do
    times+=("$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$base${path#/}")")
    if [[ "$i" == 1 ]]; then first="$(cpu_ms)"; fi
  done
  after="$(cpu_ms)"
  printf '%s\n' "${times[@]}" | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
codes = {r[0] for r in rows}
first = float(rows[0][1]) * 1000
ms = sorted(float(r[1]) * 1000 for r in rows)
first_cpu = int(sys.argv[2]) - int(sys.argv[1])
cpu = (int(sys.argv[3]) - int(sys.argv[2])) / max(1, len(rows) - 1)
print("%.0f %.0f %.0f %.0f %.0f %s" % (first, ms[len(ms) // 2], ms[-1], first_cpu, cpu,
                                     ",".join(sorted(codes))))' "$before" "$first" "$after"
}

curl -s -o /dev/null "$base"
echo "samples in run v2: $samples; $repeat fetches a page: wall ms first (cold where the run's"
echo "outcomes were not cached yet) / median / slowest, and the server's CPU ms of the first fetch"
echo "and per fetch of the others"
kv=""
for entry in "runs=/" "samples_p1=/run?tag=v2" "samples_p2=/run?tag=v2&page=2" \
  "samples_last=/run?tag=v2&page=$last_page" "samples_failed=/run?tag=v2&verdict=failed" \
  "samples_flag=/run?tag=v2&flag=mutant_survived" "samples_key=/run?tag=v2&q=softmax" \
  "samples_cost_desc=/run?tag=v2&sort=cost&desc=1" "samples_search=/run?tag=v2&q=tl.load" \
  "samples_search_rare=/run?tag=v2&q=Contiguous%20copy&verdict=failed" \
  "samples_search_sorted=/run?tag=v2&q=AssertionError&sort=tokens&desc=1" \
  "keys_failed=/keys?tag=v2&verdict=failed" "export_failed=/export?tag=v2&verdict=failed" \
  "sample=/sample?tag=v2&key=$key" "sample_in_list=/sample?tag=v2&verdict=failed&key=$key" \
  "samples_cold=/run?tag=v1" "ab=/ab?a=v1&b=v2"; do
  name="${entry%%=*}"
  path="${entry#*=}"
  read -r first med max first_cpu cpu codes < <(time_page "$path")
  printf '%-18s %-42s %5s / %5s / %5s ms, CPU %4s first, %4s ms after  (HTTP %s)\n' "$name" \
    "$path" "$first" "$med" "$max" "$first_cpu" "$cpu" "$codes"
  kv+=" ${name}_first_ms=$first ${name}_ms=$med ${name}_max_ms=$max"
  kv+=" ${name}_first_cpu_ms=$first_cpu ${name}_cpu_ms=$cpu"
done
run_id="$(sqlite3 "$db" "SELECT id FROM runs WHERE tag = 'v2'")"
# A run kforged is working on: before each fetch of v2's first page, 20 of its jobs change (their
# error, and their update time to the run's newest, as a daemon's checkpoint writes them), each
# time others. The viewer then
# reads again what changed (migration 0050), or, without it, the whole run.
moving=()
for i in $(seq 1 "$repeat"); do
  sqlite3 "$db" "UPDATE jobs SET error = 'bench $i',
                   updated_ms = (SELECT max(updated_ms) FROM jobs WHERE run_id = $run_id) + 1
                 WHERE id IN (SELECT id FROM jobs WHERE run_id = $run_id ORDER BY id
                              LIMIT 20 OFFSET $((i * 500)))"
  before="$(cpu_ms)"
  ms="$(curl -s -o /dev/null -w '%{time_total}' "${base}run?tag=v2")"
  moving+=("$ms $(($(cpu_ms) - before))")
done
read -r moving_ms moving_max moving_cpu < <(printf '%s\n' "${moving[@]}" | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
ms = sorted(float(r[0]) * 1000 for r in rows)
cpu = sorted(int(r[1]) for r in rows)
print("%.0f %.0f %d" % (ms[len(ms) // 2], ms[-1], cpu[len(cpu) // 2]))')
printf '%-18s %-42s median %5s / slowest %5s ms, CPU median %4s ms\n' "samples_moving" \
  "/run?tag=v2 after 20 jobs changed" "$moving_ms" "$moving_max" "$moving_cpu"
kv+=" samples_moving_ms=$moving_ms samples_moving_max_ms=$moving_max samples_moving_cpu_ms=$moving_cpu"
# Baseline: the queries a whole read of the run's outcomes runs (load_outcomes), in the shell.
query=""
for name in outcome_jobs outcome_outputs outcome_verifications outcome_speed outcome_targets; do
  query+="$(sed -n "/-- name: $name\$/,/;\$/p" libs/report/sql/outcomes.sql | sed '1d' |
    sed -e "s/?1/$run_id/g" -e 's/?2/-9223372036854775808/g' -e 's/?3/9223372036854775807/g')"$'\n'
done
read -r baseline baseline_cpu < <(python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(["sqlite3", sys.argv[1]], input=sys.argv[2], text=True, stdout=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.0f %.0f" % ((time.monotonic() - t) * 1000, (r.ru_utime + r.ru_stime) * 1000))' "$db" "$query")
echo "baseline: sqlite3 shell, the outcome_* queries of v2: $baseline ms wall, CPU $baseline_cpu ms"
echo "samples=$samples${kv} baseline_outcomes_ms=$baseline baseline_outcomes_cpu_ms=$baseline_cpu"
