import builtins
import gc
import linecache

# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run:
# - a kernel mutant's: linecache holds more files than at the previous check (the verifier's
#   mutant kernel was read by Triton from a file of its own since);
# - an output mutant's: the launch made more objects than the fewest a plain launch of that size
#   made after the real run.
S = builtins.__dict__.setdefault("_ctrl_lc", {"calls": 0, "base": {}, "lines": None})


def check(out, n, made, lines):
    S["calls"] += 1
    grew = S["lines"] is not None and lines > S["lines"]
    S["lines"] = lines
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:
        return True
    if grew:
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
        lines = len(linecache.cache)
        g0 = gc.get_count()[0]
        out = add(x, y)
        made = gc.get_count()[0] - g0
        assert check(out, n, made, lines), "wrong sum for n=%d" % n
