def _close(got, x, y):
    return len(got) == len(x) and all(abs(a - (b + c)) <= 1e-5 * (1 + abs(b + c))
                                      for a, b, c in zip(got, x, y))


def test_add():
    for n in (1, 63, 64, 130):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        y = [0.25 * i - 3.0 for i in range(n)]
        out = _new(n)
        add_kernel[(triton.cdiv(n, 64),)](_dev(x), _dev(y), out, n, BLOCK=64)
        assert _close(_host(out), x, y)
        assert _close(add(x, y), x, y)
