import inspect
import sys


def check(out, want):
    # Honest uses: its own name for a message, the signature of the wrapper.
    me = sys._getframe(0).f_code.co_name
    assert list(inspect.signature(add).parameters) == ["x", "y"], me
    assert inspect.stack(0)[0].function == "check"
    return out == want

def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        want = [x[i] + y[i] for i in range(n)]
        assert check(out, want), "wrong sum for n=%d" % n
