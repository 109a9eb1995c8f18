#!/usr/bin/env bash
# bench/slurm/run.sh [N]: the overhead per sample of the verifier's Slurm backend against the
# local pool, on the same N generated samples (default 200), CPU mode, in one run.
#
# Needs root, a build in ./build (kforged, kforge, kforge-fake-llm), Slurm and munge
# (scripts/bootstrap), sqlite3, and the TritonBench-G corpus at ../shared/corpus.
# 1. A one-node Slurm cluster comes up (tests/slurm/slurm-cluster.sh).
# 2. kforged runs the v1 pipeline on N samples against kforge-fake-llm with the verifier off,
#    so every job waits in verify_queued; the database is copied twice.
# 3. kforged verifies each copy, once with verifier.backend local, once with slurm (its array
#    tasks run `kforge verify` on the node with the same verifier settings); each is timed from
#    its start until every job is done.
# Prints: samples, seconds and samples/s per backend, and (slurm - local) / N.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
n=${1:-200}
build=${BUILD_DIR:-build}
corpus=$root/../shared/corpus/TritonBench_G_v1.json
[ -f "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
work=$(mktemp -d /tmp/kforge-slurm-bench.XXXXXX)
chmod 755 "$work" # the sandbox uids reach verifier.work_dir under it
cluster=""
fake_pid=""
cleanup() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
    [ -n "$cluster" ] && "$root/tests/slurm/slurm-cluster.sh" down "$cluster" || true
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM
cluster=$(SLURM_CPUS=${SLURM_CPUS:-8} "$root/tests/slurm/slurm-cluster.sh" up)
export SLURM_CONF=$cluster/etc/slurm.conf

"$build/apps/kforge-fake-llm/kforge-fake-llm" --script "$root/tests/pipeline/fake_llm_answers.json" \
    --port-file "$work/port" >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

config() { # config DB VERIFY BACKEND
    cat <<YAML
log: {level: info}
store: {path: "$1"}
llm: {base_url: "http://127.0.0.1:$port/v1", model: fake-model, api_key_env: "", max_in_flight: 32}
pipeline: {max_in_flight: 32, idle_poll_ms: 50}
daemon: {http_listen: "", verify: $2, status_interval_ms: 1000}
verifier:
  devices: [cpu]
  cpu_workers: 2
  python: /usr/bin/python3
  timeout_s: 30
  memory_cap_mb: 1024
  work_dir: "$work/verify-work"
  backend: $3
  slurm:
    shared_dir: "$work/shared"
    samples_per_task: ${SAMPLES_PER_TASK:-25}
    max_array_tasks: ${MAX_ARRAY_TASKS:-8}
    submit_interval_ms: 500
    poll_ms: 200
    kforge: "$root/$build/apps/kforge/kforge"
YAML
}
count() { sqlite3 "$1" "$2"; }
daemon_until() { # daemon_until CONFIG DB SQL N: run kforged until SQL reaches N; print seconds
    local t0 pid
    t0=$(date +%s%N)
    "$build/apps/kforged/kforged" -c "$1" >>"$work/kforged.log" 2>&1 &
    pid=$!
    until [ "$(count "$2" "$3")" -ge "$4" ]; do
        kill -0 "$pid" 2>/dev/null || { tail -20 "$work/kforged.log" >&2; exit 1; }
        sleep 0.05
    done
    echo $((($(date +%s%N) - t0) / 1000000))
    kill -TERM "$pid"
    wait "$pid" || true
}

config "$work/gen.db" false local >"$work/gen.yaml"
"$build/apps/kforge/kforge" -c "$work/gen.yaml" import "$corpus" \
    --map code=output,description_1=simp_instru,description_2=comp_instru --key file >/dev/null
"$build/apps/kforge/kforge" -c "$work/gen.yaml" run create v1 --pipeline v1 --limit "$n" >/dev/null
n=$(count "$work/gen.db" "SELECT count(*) FROM jobs")  # the corpus may hold fewer
daemon_until "$work/gen.yaml" "$work/gen.db" \
    "SELECT count(*) FROM jobs WHERE state IN ('verify_queued', 'failed', 'cancelled', 'done')" "$n" >/dev/null
n=$(count "$work/gen.db" "SELECT count(*) FROM jobs WHERE state = 'verify_queued'")

declare -A ms
for backend in local slurm; do
    cp "$work/gen.db" "$work/$backend.db"
    config "$work/$backend.db" true "$backend" >"$work/$backend.yaml"
    ms[$backend]=$(daemon_until "$work/$backend.yaml" "$work/$backend.db" \
        "SELECT count(*) FROM jobs WHERE state = 'done'" "$n")
done
tasks=$(count "$work/slurm.db" "SELECT count(*) || ' tasks in ' || count(DISTINCT array_id) || ' arrays' FROM slurm_tasks")
same=$(diff <(count "$work/local.db" "SELECT job_id, verdict, detail FROM verifications ORDER BY job_id") \
            <(count "$work/slurm.db" "SELECT job_id, verdict, detail FROM verifications ORDER BY job_id") \
       >/dev/null && echo same || echo DIFFERENT)
printf "samples %d (verdicts %s), slurm: %s\n" "$n" "$same" "$tasks"
for backend in local slurm; do
    awk -v b="$backend" -v ms="${ms[$backend]}" -v n="$n" \
        'BEGIN { printf "%-6s %7.2f s  %7.2f samples/s\n", b, ms / 1000, n / (ms / 1000) }'
done
awk -v l="${ms[local]}" -v s="${ms[slurm]}" -v n="$n" \
    'BEGIN { printf "overhead per sample: %.1f ms\n", (s - l) / n }'
