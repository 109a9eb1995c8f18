import time


def _spin(seconds):
    # CPU work in Python between launches: the lock's watcher steps the process out for a
    # waiting timing sample at its next bytecode.
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        sum(range(100))


def test_add_after_cpu_work():
    _spin(0.5)
    x = [0.25 * i for i in range(100)]
    got = add(x, x)
    _spin(0.3)
    assert got == [a + a for a in x]
