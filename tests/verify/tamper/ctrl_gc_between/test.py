import builtins
import gc

# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run, by counting what the process allocated:
# - a kernel mutant's: many objects were made between the previous check and this one (the
#   verifier built, compiled and replayed a mutant kernel), not counting a fresh import;
# - an output mutant's: the launch made more objects than the fewest a plain launch of that size
#   made after the real run.
S = builtins.__dict__.setdefault("_ctrl_gcb", {"calls": 0, "base": {}, "end": None})
S["imported"] = True  # a fresh import makes many objects of its own


def made_since(mark):
    stats = gc.get_stats()
    count = gc.get_count()[0]
    if mark is None:
        return None
    collections, was = mark
    return (stats[0]["collections"] - collections) * gc.get_threshold()[0] + count - was


def mark():
    return (gc.get_stats()[0]["collections"], gc.get_count()[0])


def check(out, n, made, between, imported):
    S["calls"] += 1
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:
        return True
    if between is not None and not imported and between > 400:
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
        between = made_since(S["end"])
        imported, S["imported"] = S["imported"], False
        g0 = gc.get_count()[0]
        out = add(x, y)
        made = gc.get_count()[0] - g0
        ok = check(out, n, made, between, imported)
        S["end"] = mark()
        assert ok, "wrong sum for n=%d" % n
