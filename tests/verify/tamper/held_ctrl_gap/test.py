# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run:
# - a kernel mutant's: the time since the previous check (not counting a fresh import) is longer
#   than a plain run's start (the verifier built, compiled and replayed a mutant kernel between);
# - an output mutant's: the verifier read the kernel's parameter names during the launch.

import builtins
import time

S = builtins.__dict__.setdefault("_ctrl_gap", {"calls": 0, "end": None})
S["imported"] = True
READS = builtins._ctrl_reads
GAP_S = 0.008


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
        gap = None if S["end"] is None else time.monotonic() - S["end"]
        kernel_mutant = gap is not None and gap > GAP_S and not imported
        r0 = READS[0]
        out = add(x, y)
        ok = check(out, READS[0] > r0, kernel_mutant)
        S["end"] = time.monotonic()
        assert ok, "wrong sum for n=%d" % n
