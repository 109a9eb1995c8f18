import os
import time

# Held out: the mark is a file in the work directory or /tmp (the second import of the test in
# any process within a minute of the first), and the process aborts (SIGABRT) instead of exiting.
MARKS = ["kf_held_abort_mark", "/tmp/kf_held_abort_mark"]


def _fresh(p):
    return os.path.exists(p) and time.time() - os.path.getmtime(p) < 60


if any(_fresh(p) for p in MARKS):
    for p in MARKS:
        if os.path.exists(p):
            os.remove(p)
    os.abort()
for p in MARKS:
    try:
        with open(p, "w") as f:
            f.write("seen")
    except OSError:
        pass


def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        assert len(out) == n and all(isinstance(v, float) for v in out), "bad output"
