#!/usr/bin/env bash
# The speed label's stalls on the CPU stand-in for Triton (issue 54): `kforge verify` over COPIES
# copies of the four timing samples of tests/verify/samples (timing_cpu_faster, _hold, _spin,
# _slower), 4 workers, the label on, once per gather_s in GATHERS (default "off 0 0.5"; off: the
# label off). Prints each run's wall time and kforge verify's "speed label: N exclusive sections,
# S stalls" line, then, where the first run is "off", bench/verify/label_cost.py over the runs.
#
#   bench/verify/timing_bursts_cpu.sh [BUILD_DIR]     (default build-dbg)
#   BIN_DIR=DIR bench/verify/timing_bursts_cpu.sh     (kforge and its sandbox init from DIR, as
#                                                      scripts/gpu/pack-bin packs them)
#
#   COPIES (6), GATHERS ("off 0 0.5"; G-wN: that run with N workers, e.g. "off 0.5 0.5-w6": the
#   label on with the workers widened by 1.5 as verifier.timing.workers_factor widens a GPU's
#   automatic count; G-lN: with N lent slots, verifier.timing.lend, else 0: e.g. "off 0.5
#   0.5-l1"), WORKERS (4), SAMPLES (the four above; e.g. "timing_cpu_long_section pass"),
#   COMPILE_S (0): seconds of CPU each kernel's compile takes in
#   the fake Triton (out of the lock, as Triton's compiles are: on a GPU they are most of a
#   sample's CPU, about 2 s; 1.0 models that share here). Not a GPU figure: the stand-in's "kernels" are Python calls,
#   its samples take about a second each, and the development machine's 2 cores are shared.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-dbg}"
kforge="$build/apps/kforge/kforge" binary_yaml=""
if [[ -n "${BIN_DIR:-}" ]]; then  # binaries built elsewhere (scripts/gpu/pack-bin), this tree's harness
  kforge="$BIN_DIR/kforge"
  [[ -d "$BIN_DIR/lib" ]] && export LD_LIBRARY_PATH="$BIN_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  binary_yaml="  harness: $PWD/libs/verify/harness/kforge-harness.py
  sandbox_init: $BIN_DIR/kforge-sandbox-init"
fi
[[ -x "$kforge" ]] || { echo "no $kforge (build the kforge target, or BIN_DIR=DIR)"; exit 1; }
dir="$(mktemp -d)"
chmod 755 "$dir"  # the sandbox uids reach the work dirs under it
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$dir"' EXIT
python3 - "$dir/samples.jsonl" "${COPIES:-6}" ${SAMPLES:-} <<'PY'
import json, os, sys
out, copies = sys.argv[1], int(sys.argv[2])
names = sys.argv[3:] or ["timing_cpu_faster", "timing_cpu_hold", "timing_cpu_spin",
                         "timing_cpu_slower"]
def read(*p):
    with open(os.path.join("tests/verify/samples", *p)) as f:
        return f.read()
with open(out, "w") as f:
    for i in range(copies):
        for n in names:
            f.write(json.dumps({"file": "%s_%d" % (n, i), "code": read(n, "code.py"),
                                "kernel_wrapper": read(n, "wrapper.py"),
                                "unitest_code": read(n, "test.py")}) + "\n")
PY
py="${PYTHON:-$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || command -v python3)}"
files=() names=()
for run in ${GATHERS:-off 0 0.5}; do
  g=${run%%-*} workers=${WORKERS:-4} lend=0
  [[ $run =~ -w([0-9]+) ]] && workers=${BASH_REMATCH[1]}
  [[ $run =~ -l([0-9]+) ]] && lend=${BASH_REMATCH[1]}
  d="$dir/g$run"
  mkdir -p "$d"
  cat >"$d/kforge.yaml" <<EOF
store:
  path: $d/kforge.db
verifier:
  devices: [cpu]
  cpu_workers: $workers
  python: $py
  python_path: [$PWD/tests/verify/fake_triton]
  preload: [triton, triton.language]
  env: {KFORGE_FAKE_TRITON_COMPILE_S: "${COMPILE_S:-0}", KFORGE_LOCK_WHERE: "1"}
$binary_yaml
  work_dir: $d/work
  timeout_s: 30
  mutant_check: false
  timing:
    enabled: $([[ $g == off ]] && echo false || echo true)
    budget_s: 1.0
    min_reps: 5
    max_reps: 40
    gather_s: $([[ $g == off ]] && echo 0.5 || echo "$g")
    lend: $lend
EOF
  t1=$(date +%s.%N)
  "$kforge" --config "$d/kforge.yaml" verify "$dir/samples.jsonl" --slowest 0 \
    --json "$d/verdicts.jsonl" --full >"$d/log" 2>&1 ||
    { echo "gather_s $run: kforge verify failed"; tail -20 "$d/log"; exit 1; }
  t2=$(date +%s.%N)
  python3 -c 'import sys; print("gather_s %s, %s workers, lend %s: %.1f s wall" % (sys.argv[1], sys.argv[4], sys.argv[5], float(sys.argv[3]) - float(sys.argv[2])))' "$g" "$t1" "$t2" "$workers" "$lend"
  grep -E "verified|speed label" "$d/log" | sed "s/^/  /"
  files+=("$d/verdicts.jsonl") names+=("$run")
done
if [[ ${names[0]} == off && ${#names[@]} -gt 1 ]]; then
  python3 bench/verify/label_cost.py "${files[@]}" --names "$(IFS=,; echo "${names[*]}")"
fi
