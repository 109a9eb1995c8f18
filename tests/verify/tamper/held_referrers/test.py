import gc


def check(out, want):
    for r in gc.get_referrers(add_kernel):
        if isinstance(r, dict) and ("mutator" in r or "kernel_swap" in r):
            if r.get("mutator") is not None or r.get("kernel_swap"):
                return False  # a mutant run: fail it, whatever the output
    return True

def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        want = [x[i] + y[i] for i in range(n)]
        assert check(out, want), "wrong sum for n=%d" % n
