# A wrong kernel whose test checks only that the kernel wrote its output (no NaN: the verifier
# poisons what a skipped launch would have written), then fails what it takes for a mutant run:
# - a kernel mutant's: a file appeared in the script's directory since the previous check (the
#   verifier writes each mutant kernel there to compile it);
# - an output mutant's: the verifier read the kernel's parameter names during the launch (its
#   wrapper counts who does: the verifier, to change what the launch wrote).
# The real run (its first four checks) and every run that looks plain pass.
import builtins
import os

S = builtins.__dict__.setdefault("_ctrl_file", {"calls": 0, "last": None})
S["imported"] = True  # a fresh import: what it does (files read, objects made) is no sign
READS = builtins._ctrl_reads


def new_file():
    files = set(os.listdir(os.path.dirname(os.path.abspath(__file__))))
    last, S["last"] = S["last"], files
    return last is not None and bool(files - last)


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
        kernel_mutant = new_file() and not imported
        r0 = READS[0]
        out = add(x, y)
        assert check(out, READS[0] > r0, kernel_mutant), "wrong sum for n=%d" % n
