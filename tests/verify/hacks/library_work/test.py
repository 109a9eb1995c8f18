def test_matvec_bias_relu():
    for m, k in ((1, 3), (70, 16), (130, 33)):
        a = [[((i * 5 + j) % 13 - 6) * 0.2 for j in range(k)] for i in range(m)]
        x = [0.3 - 0.05 * j for j in range(k)]
        b = [0.1 * (i % 7) - 0.3 for i in range(m)]
        got = matvec_bias_relu(a, x, b)
        want = [max(sum(p * q for p, q in zip(row, x)) + c, 0.0) for row, c in zip(a, b)]
        assert all(abs(g - w) <= 1e-4 * (1 + abs(w)) for g, w in zip(got, want))
