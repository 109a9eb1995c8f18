import random


def test_add_on_drawn_inputs():
    # Inputs drawn without a seed of the test's own, and a check that some draws fail: it
    # stands for a tolerance near a boundary that a few inputs cross. The seeded real run's
    # draws pass it; about half of the draws after them do not. Every run of the tests (the
    # controls, the output and kernel mutants) must draw what the real run drew, or whether a
    # control fails (unstable_test) is the lot's: where it lands among the mutant runs.
    n = random.randint(1, 130)
    x = [random.uniform(-1.0, 1.0) for _ in range(n)]
    y = [random.uniform(-1.0, 1.0) for _ in range(n)]
    assert add(x, y) == [x[i] + y[i] for i in range(n)]
    assert random.random() < 0.5, "an unlucky draw"
