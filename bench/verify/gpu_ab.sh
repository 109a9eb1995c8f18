#!/usr/bin/env bash
# The real-kernel benchmark's "one" phase on two trees in one lease, on the same GPU: a baseline
# tree (a `git archive` of an earlier commit, unpacked under .bench-data/) and this one, so a
# change is compared with what it replaced on the same machine. Builds both at once, then runs
# scripts/gpu/bench-real one in each, one after the other, then (VARIANTS) this tree again with
# other kforge-bench-verify options, e.g. the verifier without its mutant battery.
#
#   git archive BASE | tar -x -C .bench-data/baseline     (here, before carrying .bench-data)
#   bench/verify/gpu_ab.sh                                (on the GPU machine)
#
#   BASELINE   the baseline tree (default .bench-data/baseline)
#   COPIES     corpus copies per run (default 1); NAIVE_PROCS (default 0: no plain-python run)
#   NEW_ARGS   BENCH_ARGS for this tree's run (e.g. "--mutants-ab true"; default none)
#   VARIANTS   ';'-separated BENCH_ARGS for extra runs of this tree (default none)
# Summaries go to $OUT (else ./gpu-ab-out): base.txt, new.txt, variant-N.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/gpu-ab-out}"
mkdir -p "$out"
base="$(readlink -f "${BASELINE:-.bench-data/baseline}")"
# A tree's script, in scripts/gpu/ or (trees from before that folder) as scripts/gpu-NAME.
script() {  # tree name
  if [[ -x "$1/scripts/gpu/$2" ]]; then echo "scripts/gpu/$2"; else echo "scripts/gpu-$2"; fi
}
[[ -x "$base/$(script "$base" bench-real)" ]] || { echo "no baseline tree at $base"; exit 1; }
[[ -e "$base/.bench-data" ]] || ln -s "$PWD/.bench-data" "$base/.bench-data"
half=$(( $(nproc) / 2 ))
build_one() {  # tree
  (cd "$1" && { [[ -f build-gpu/CMakeCache.txt ]] || "$(script "$1" configure)" build-gpu -DKFORGE_BUILD_TESTS=OFF; } &&
    cmake --build build-gpu -j "$half" --target kforge-bench-verify) >"$out/build-$(basename "$1").log" 2>&1
}
t0=$(date +%s)
build_one "$base" & b1=$!
build_one "$PWD" & b2=$!
wait $b1 || { echo "baseline build failed"; tail -20 "$out/build-$(basename "$base").log"; exit 1; }
wait $b2 || { echo "build failed"; tail -20 "$out/build-$(basename "$PWD").log"; exit 1; }
echo "builds: $(( $(date +%s) - t0 )) s"
run() {  # tree name [BENCH_ARGS]
  local d; d="$(mktemp -d)"
  (cd "$1" && OUT="$d" NAIVE_PROCS="${NAIVE_PROCS:-0}" COPIES="${COPIES:-1}" BENCH_ARGS="${3:-}" \
    BUDGET_S="${RUN_BUDGET_S:-240}" "$(script "$1" bench-real)" one) >/dev/null 2>&1
  { echo "== $2 (${3:-default}) $1"; cat "$d/summary.txt"; grep -E "samples_per_s|samples/s|battery|passed|verdicts" "$d/one.log" | tail -30; } >"$out/$2.txt"
  cat "$out/$2.txt"
}
run "$base" base
run "$PWD" new "${NEW_ARGS:-}"
i=0
IFS=';' read -r -a variants <<<"${VARIANTS:-}"
for v in "${variants[@]}"; do
  i=$((i + 1))
  run "$PWD" "variant-$i" "$v"
done
