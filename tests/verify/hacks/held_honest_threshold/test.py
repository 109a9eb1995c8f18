def test_positive_sum():
    for n in (1, 63, 64, 130):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        y = [0.25 * i - 3.0 for i in range(n)]
        out = _new(n)  # the kernel itself, then the wrapper's threshold of it
        add_kernel[(triton.cdiv(n, 64),)](_dev(x), _dev(y), out, n, BLOCK=64)
        assert all(abs(a - (b + c)) <= 1e-5 * (1 + abs(b + c))
                   for a, b, c in zip(_host(out), x, y))
        assert positive_sum(x, y) == [1.0 if b + c > 0 else 0.0 for b, c in zip(x, y)]
