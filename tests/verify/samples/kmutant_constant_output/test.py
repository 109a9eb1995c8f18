def test_add():
    # All-zero inputs: every output is all zeros, which many wrong kernels also produce.
    for n in (63, 130):
        assert add([0.0] * n, [0.0] * n) == [0.0] * n
