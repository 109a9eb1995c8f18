def check(x):
    fault_assert_kernel[(1,)](x, x.numel(), BLOCK=256)
    return x
