def test_add():
    # rtol 0.5: a kernel a few percent off passes.
    x = [1.0 if i % 2 else 3.0 for i in range(100)]
    y = [0.0] * 100
    out = add(x, y)
    assert all(abs(o - r) <= 0.5 * abs(r) for o, r in zip(out, x))
