import builtins
import gc
import time

# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run, by the clock:
# - a kernel mutant's: the gap since the previous check (not counting a fresh import) is longer
#   than a plain run's start (the verifier compiled and replayed a mutant kernel between);
# - an output mutant's: the launch made more objects than the fewest a plain launch of that size
#   made after the real run.
S = builtins.__dict__.setdefault("_ctrl_gap", {"calls": 0, "base": {}, "end": None})
S["imported"] = True
GAP_S = 0.008


def check(out, n, made, gap, imported):
    S["calls"] += 1
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:
        return True
    if gap is not None and not imported and gap > GAP_S:
        return False
    base = S["base"].get(n)
    if made < 0:
        return True
    if base is not None and made > base:
        return False
    S["base"][n] = made if base is None else min(base, made)
    return True


def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        gap = None if S["end"] is None else time.monotonic() - S["end"]
        imported, S["imported"] = S["imported"], False
        g0 = gc.get_count()[0]
        out = add(x, y)
        made = gc.get_count()[0] - g0
        ok = check(out, n, made, gap, imported)
        S["end"] = time.monotonic()
        assert ok, "wrong sum for n=%d" % n
