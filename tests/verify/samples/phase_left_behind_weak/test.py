def test_add():
    # Only the first 16 elements are checked: the tail output mutant survives. It prints, so a
    # process left with a closed sys.stdout would fail it under every mutant (and count each
    # as killed).
    x = [float(i) for i in range(130)]
    y = [2.0 * i for i in range(130)]
    out = add(x, y)
    print("head", out[:4])
    assert out[:16] == [3.0 * i for i in range(16)]
