def store_far(x):
    fault_store_far_kernel[(1,)](x, x.numel(), BLOCK=1024)
    return x
