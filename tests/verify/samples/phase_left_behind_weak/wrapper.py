import os
import random
import sys


def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)
    return out


RAISED = []


def _trace(frame, event, arg):
    return None


def _leave_behind():
    """What the speed phase calls (the declared wrapper) leaves in the process: @LEAVE@."""
    leave = "@LEAVE@"
    if leave == "state":
        closed = open(os.devnull, "w")
        closed.close()
        sys.stdout = closed  # every later print raises
        # (a trace function is tampering: flagged by the integrity guard, tests/verify/tamper)
        random.seed(12345)
        os.environ["KFORGE_LEFT_BEHIND"] = "1"
        os.chdir("/")
    elif leave == "raise" and not RAISED:
        # Once: the speed phase's first call (the later phases call the wrapper as they would).
        RAISED.append(1)
        raise SystemExit("the speed phase made to fail")


def timed_add(x, y):
    out = add(x, y)
    _leave_behind()
    return out


def reference(x, y):
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": timed_add, "reference": reference, "inputs": inputs}
