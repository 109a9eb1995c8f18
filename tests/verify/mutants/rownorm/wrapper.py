def rownorm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Each row minus its mean, divided by its standard deviation (layer norm without weights)."""
    assert x.dim() == 2 and x.is_contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    rownorm_kernel[(m,)](x, out, n, x.stride(0), eps, BLOCK_N=triton.next_power_of_2(n))
    return out
