import math


def golden(x):
    m = max(x)
    e = [math.exp(v - m) for v in x]
    return [v / sum(e) for v in e]


def test_softmax():
    # logits of both signs, within a few units (as randn gives): never above ~88
    for n in (1, 70, 200):
        x = [((i * 53) % 19 - 9) * 0.31 for i in range(n)]
        got = softmax(x)
        want = golden(x)
        assert len(got) == n
        for a, b in zip(got, want):
            assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9), (n, a, b)


def test_softmax_kernel():
    # the kernel itself, launched directly, on the same small logits
    for n in (1, 70, 200):
        x = [((i * 53) % 19 - 9) * 0.31 for i in range(n)]
        out = _new(n)
        softmax_kernel[(1,)](_dev(x), out, n, BLOCK=256)
        for a, b in zip(_host(out), golden(x)):
            assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9), (n, a, b)
