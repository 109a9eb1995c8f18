def test_add_runs():
    # Checks only that the kernel runs: the skip-launch run passes. A fresh import of the script
    # with its launches made (the fresh control run) dies of an out-of-bounds load; the lot
    # places that control before or after the skip-launch run, and the flags must not follow it.
    for n in (1, 64, 130):
        out = add([float(i) for i in range(n)], [2.0 * i for i in range(n)])
        assert len(out) == n
