# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run:
# - a kernel mutant's: Triton's on-disk cache holds more entries than at the previous check (the
#   verifier compiled a mutant kernel since), or, without one (the CPU stand-in), linecache holds
#   more source files; not counting a fresh import;
# - an output mutant's: the verifier read the kernel's parameter names during the launch.

import builtins
import linecache
import os

S = builtins.__dict__.setdefault("_ctrl_jit", {"calls": 0, "last": None})
S["imported"] = True
READS = builtins._ctrl_reads


def compiled():
    d = os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton",
                                                          "cache")
    try:
        now = len(os.listdir(d)) + len(linecache.cache)
    except OSError:
        now = len(linecache.cache)
    last, S["last"] = S["last"], now
    return last is not None and now > last


def check(out, read, kernel_mutant):
    S["calls"] += 1
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:  # the real run
        return True
    return not read and not kernel_mutant


def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        imported, S["imported"] = S["imported"], False
        kernel_mutant = compiled() and not imported
        r0 = READS[0]
        out = add(x, y)
        assert check(out, READS[0] > r0, kernel_mutant), "wrong sum for n=%d" % n
