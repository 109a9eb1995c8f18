def test_scale():
    x = [float(i) for i in range(200)]
    assert scale(x) == [3.0 * i for i in range(200)]
    assert scale_kernel.bench_runs == 0, "verify mode must not benchmark every config"
