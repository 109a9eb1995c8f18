import random

_calls = []


def test_add_on_drawn_inputs():
    # Inputs drawn without a seed of the test's own: the harness seeds the global generators
    # (runner.SAMPLE_SEED) before every import of the script, so each import's first call
    # draws the same ones (a later call in the same module draws on from there).
    n = random.randint(1, 130)
    x = [random.uniform(-1.0, 1.0) for _ in range(n)]
    y = [random.uniform(-1.0, 1.0) for _ in range(n)]
    assert add(x, y) == [x[i] + y[i] for i in range(n)]
    if not _calls:
        seeded = random.Random(20261128)
        assert n == seeded.randint(1, 130), "the run's draws are not the seeded ones: n=%d" % n
    _calls.append(n)
