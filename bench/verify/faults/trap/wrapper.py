def trap(x):
    fault_trap_kernel[(1,)](x, x.numel(), BLOCK=256)
    return x
