def copy(x: torch.Tensor) -> torch.Tensor:
    """What the descriptions said (a copy), not what the code does."""
    m, n = x.shape
    z = torch.empty_like(x)
    kernel[(1,)](x, x.stride(0), z, z.stride(0), BLOCK_M=m, BLOCK_N=n)
    return z
