"""triton.testing without assert_almost_equal (removed from Triton 3, like the real one)."""
import time


def do_bench(fn, warmup=1, rep=1, quantiles=None):
    t = time.perf_counter()
    fn()
    ms = (time.perf_counter() - t) * 1000
    return [ms, ms, ms] if quantiles else ms
