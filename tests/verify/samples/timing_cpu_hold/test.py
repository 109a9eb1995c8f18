import time


def test_add_slowly():
    # A long test: its process uses the device (holds the shared lock) while it runs.
    time.sleep(0.4)
    x = [0.25 * i for i in range(100)]
    got = add(x, x)
    time.sleep(0.2)
    assert got == [a + a for a in x]
