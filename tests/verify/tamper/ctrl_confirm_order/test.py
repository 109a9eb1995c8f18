# A kernel (x - y) whose test checks its outputs while the verifier builds no kernels (it kills
# every output mutant), then, once the verifier builds kernels (many objects made between two
# checks: the kernel battery), checks only that the kernel wrote its output and fails a run in
# which the verifier read the launch's parameters before the launch (to poison what a kernel
# mutant should write: the confirmation of a mutant that passed). Each kernel mutant survives
# its first run and is killed only by its confirmation; a plain control run is neither, and
# passes. A control made as a kernel mutant's run has its confirmation too, and fails it: the
# kills made only there are no kills (the mutants survived: weak_inputs).

import builtins
import gc

S = builtins.__dict__.setdefault("_ctrl_order", {"calls": 0, "last": None, "built": False})
S["imported"] = True
EARLY = builtins._ctrl_early_reads


def made_between():
    now = (gc.get_stats()[0]["collections"], gc.get_count()[0])
    last, S["last"] = S["last"], now
    if last is None:
        return False
    return (now[0] - last[0]) * gc.get_threshold()[0] + now[1] - last[1] > 400


def check(out, want, early, built):
    S["calls"] += 1
    if any(v != v for v in out):
        return False
    if built and S["calls"] > 4:
        S["built"] = True
    if not S["built"]:
        return out == want
    return not early


def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        imported, S["imported"] = S["imported"], False
        built = made_between() and not imported
        e0 = EARLY[0]
        out = add(x, y)
        want = [x[i] - y[i] for i in range(n)]
        assert check(out, want, EARLY[0] > e0, built), "wrong difference for n=%d" % n
