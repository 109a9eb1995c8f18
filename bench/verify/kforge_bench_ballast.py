"""Preloaded by kforge-bench-verify --worker-ballast-mb in the CPU variant: the worker holds
KFORGE_BENCH_BALLAST_MB MiB of anonymous memory, every page touched, as a worker that imported
torch does, so what a fork of the worker costs scales as it does on a GPU machine."""
import os

_MB = int(os.environ.get("KFORGE_BENCH_BALLAST_MB", "0"))
BALLAST = bytearray(_MB << 20)
for _i in range(0, len(BALLAST), 4096):
    BALLAST[_i] = 1
