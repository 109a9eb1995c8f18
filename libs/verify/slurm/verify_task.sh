#!/bin/sh
# One task of a kforge verify array job (sbatch --array); written into the array's directory
# under verifier.slurm.shared_dir by kforged's Slurm backend.
#   $1: the kforge binary on the node; $2: the array's directory; the rest: kforge's global
#   options (-c CONFIG).
# Task N verifies shard-N.jsonl and writes result-N.jsonl, a line per sample as it finishes;
# shard-N.targets, where the shard's run requires targets (`--require-target`), lists them for
# --cross-compile, besides the node's verifier.cross_compile. skip-N.txt, which kforged writes
# while the task runs when some of its samples are no longer wanted (a scored item past its
# deadline or whose client went away), lists their indices: kforge verify never starts those
# and stops the one running.
set -u
kforge=$1
dir=$2
shift 2
task=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}
echo "kforge verify task ${SLURM_ARRAY_JOB_ID:-?}_$task on $(hostname):" \
  "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-} ROCR_VISIBLE_DEVICES=${ROCR_VISIBLE_DEVICES:-}" >&2
targets=$(cat "$dir/shard-$task.targets" 2>/dev/null || true)
if [ -n "$targets" ]; then
  exec "$kforge" "$@" verify "$dir/shard-$task.jsonl" --json "$dir/result-$task.jsonl" --full \
    --skip-file "$dir/skip-$task.txt" --cross-compile "$targets"
fi
exec "$kforge" "$@" verify "$dir/shard-$task.jsonl" --json "$dir/result-$task.jsonl" --full \
  --skip-file "$dir/skip-$task.txt"
