import sys

# A trace function set at import and never removed: on the thread that runs the sample's code,
# it sees every later call, so the test can count its own calls and compare only after the
# real run's. The verifier flags it and resets it after the import.
_calls = []


def _tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "test_add":
        _calls.append(1)
    return None


sys.settrace(_tracer)


def test_add():
    first = len(_calls) <= 1
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        want = [x[i] + y[i] for i in range(n)]
        if not first:
            assert out == want, "wrong sum for n=%d" % n
