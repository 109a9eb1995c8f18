def test_add_waits_for_the_kernel():
    x = [float(i) for i in range(100)]
    y = [2.0 * i for i in range(100)]
    out = [0.0] * 100
    add(x, y, out)
    # Polls until the kernel's result is there: with the launch skipped, it never is.
    while out[99] != 297.0:
        pass
