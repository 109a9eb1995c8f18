import builtins
import gc

# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run by the order of the runs: a run that passed its tests under a
# kernel mutant is made again at once with the mutant's outputs poisoned first (its
# confirmation), and nothing is built between the two. So it passes every run that follows a
# build, and fails a run that follows one it passed with nothing built (counted in objects)
# between: the mutant survives its first run and is killed by its confirmation. The output
# mutants are told apart by what their launch allocates (more objects than a plain launch).
S = builtins.__dict__.setdefault("_ctrl_order", {"calls": 0, "base": {}, "end": None,
                                                 "passed": 0, "last_passed": False})
S["imported"] = True


def made_since(mark):
    if mark is None:
        return None
    collections, was = mark
    return (gc.get_stats()[0]["collections"] - collections) * gc.get_threshold()[0] + \
        gc.get_count()[0] - was


def check(out, n, made, between, imported):
    S["calls"] += 1
    if any(v != v for v in out):
        return False
    if S["calls"] <= 4:
        return True
    built = between is not None and between > 400
    if n == 1 and S["last_passed"] and not built and not imported:
        return False  # the confirmation of a run it passed
    if built:
        return True
    base = S["base"].get(n)
    if made < 0:
        return True
    if base is not None and made > base:
        return False
    S["base"][n] = made if base is None else min(base, made)
    return True


def test_add():
    S["run_ok"] = False
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        between = made_since(S["end"])
        imported, S["imported"] = S["imported"], False
        g0 = gc.get_count()[0]
        out = add(x, y)
        made = gc.get_count()[0] - g0
        ok = check(out, n, made, between, imported)
        S["end"] = (gc.get_stats()[0]["collections"], gc.get_count()[0])
        if n == 1:
            S["last_passed"] = False
        assert ok, "wrong sum for n=%d" % n
    S["last_passed"] = True
