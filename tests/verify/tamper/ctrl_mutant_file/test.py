import builtins
import gc
import os

# A wrong kernel whose test checks only that the kernel wrote its output (no NaN: the verifier
# poisons what a skipped launch would have written), then fails what it takes for a mutant run:
# - a kernel mutant's: a file appeared in the script's directory since the previous check (the
#   verifier writes each mutant kernel there to compile it);
# - an output mutant's: the launch made more objects than the fewest a plain launch of that size
#   made after the real run (the mutator's work after the launch).
# The real run (its first four checks) and every run that looks plain pass.
S = builtins.__dict__.setdefault("_ctrl_file", {"calls": 0, "base": {}, "files": None})


def check(out, n, made, files):
    S["calls"] += 1
    new = S["files"] is not None and bool(files - S["files"])
    S["files"] = files
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:
        return True
    if new:
        return False
    base = S["base"].get(n)
    if made < 0:
        return True
    if base is not None and made > base:
        return False
    S["base"][n] = made if base is None else min(base, made)
    return True


def test_add():
    here = os.path.dirname(os.path.abspath(__file__))
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        files = set(os.listdir(here))
        g0 = gc.get_count()[0]
        out = add(x, y)
        made = gc.get_count()[0] - g0
        assert check(out, n, made, files), "wrong sum for n=%d" % n
