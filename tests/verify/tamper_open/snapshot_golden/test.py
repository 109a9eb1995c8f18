# OPEN (not caught, issue 52): a wrong kernel whose test compares each call's output with what
# the same call returned in the first run the process made (kept in builtins across the
# verifier's imports): the real run records, every control returns the same, every mutant
# differs and is killed. The test checks nothing the task asks; mutation testing cannot see it.

import builtins

GOLDEN = builtins.__dict__.setdefault("_snapshot_golden", {})


def check(out, n):
    if any(v != v for v in out):
        return False
    return GOLDEN.setdefault(n, list(out)) == out


def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        assert check(out, n), "wrong sum for n=%d" % n
