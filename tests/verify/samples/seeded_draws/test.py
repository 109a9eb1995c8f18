import random


def test_add_on_drawn_inputs():
    # Inputs drawn without a seed of the test's own: the harness seeds the global generators
    # (runner.SAMPLE_SEED) before the sample starts, so every run draws the same ones.
    n = random.randint(1, 130)
    x = [random.uniform(-1.0, 1.0) for _ in range(n)]
    y = [random.uniform(-1.0, 1.0) for _ in range(n)]
    assert add(x, y) == [x[i] + y[i] for i in range(n)]
    seeded = random.Random(20261128)
    assert n == seeded.randint(1, 130), "the run's draws are not the seeded ones: n=%d" % n
