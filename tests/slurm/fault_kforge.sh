#!/bin/sh
# Stands in for kforge on the Slurm test's node (verifier.slurm.kforge): it runs the real
# kforge ($SLURMTEST_KFORGE) with faults for the first two tasks that start:
#   - the first verifies 2 samples of its shard, then exits 3 (a task that fails);
#   - the second verifies 2 samples, then waits to be cancelled (the test scancels it).
# mkdir is atomic, so tasks running side by side each take a different role.
set -u
faults=$SLURMTEST_FAULTS
id="${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID:-?}"
if mkdir "$faults/fail" 2>/dev/null; then
  "$SLURMTEST_KFORGE" "$@" --limit 2
  echo "$id" >"$faults/fail/task"
  exit 3
fi
if mkdir "$faults/hang" 2>/dev/null; then
  "$SLURMTEST_KFORGE" "$@" --limit 2
  echo "$id" >"$faults/hang/task"
  exec sleep 600
fi
exec "$SLURMTEST_KFORGE" "$@"
