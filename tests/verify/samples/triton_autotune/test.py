def test_scale():
    x = [float(i + 1) for i in range(200)]
    assert scale(x) == [3.0 * (i + 1) for i in range(200)]
    assert scale_kernel.bench_runs == 0, "verify mode must not benchmark every config"
