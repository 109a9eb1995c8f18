# A wrong kernel whose test checks only that the kernel wrote its output (no NaN), then fails
# what it takes for a mutant run, by counting what the process allocated:
# - a kernel mutant's: many objects were made since the previous check (the verifier built,
#   compiled and replayed a mutant kernel), not counting a fresh import;
# - an output mutant's: the verifier read the kernel's parameter names during the launch (its
#   wrapper counts who does: the verifier, to change what the launch wrote).

import builtins
import gc

S = builtins.__dict__.setdefault("_ctrl_gcb", {"calls": 0, "last": None})
S["imported"] = True  # a fresh import: what it does (files read, objects made) is no sign
READS = builtins._ctrl_reads


def made_between():
    now = (gc.get_stats()[0]["collections"], gc.get_count()[0])
    last, S["last"] = S["last"], now
    if last is None:
        return False
    return (now[0] - last[0]) * gc.get_threshold()[0] + now[1] - last[1] > 400


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
        kernel_mutant = made_between() and not imported
        r0 = READS[0]
        out = add(x, y)
        assert check(out, READS[0] > r0, kernel_mutant), "wrong sum for n=%d" % n
