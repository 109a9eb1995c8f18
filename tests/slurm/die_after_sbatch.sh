#!/bin/sh
# Stands in for sbatch (verifier.slurm.sbatch) in the Slurm test: the first call submits the
# array with the real sbatch, then kills (-9) the kforged that called it before it can read the
# job id, the moment a crash would leave an array running that kforged never recorded. Later
# calls are the real sbatch. $SLURMTEST_FAULTS/sbatch/out keeps what sbatch printed.
set -u
if mkdir "$SLURMTEST_FAULTS/sbatch" 2>/dev/null; then
  sbatch "$@" >"$SLURMTEST_FAULTS/sbatch/out.tmp" || exit $?
  mv "$SLURMTEST_FAULTS/sbatch/out.tmp" "$SLURMTEST_FAULTS/sbatch/out"
  kill -9 "$PPID"
  exit 0
fi
exec sbatch "$@"
