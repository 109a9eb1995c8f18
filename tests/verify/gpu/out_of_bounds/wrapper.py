def scatter(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    scatter_kernel[(1,)](x, out, x.numel(), BLOCK=1024)
    return out
