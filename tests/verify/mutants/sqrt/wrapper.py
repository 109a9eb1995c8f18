def scaled_sqrt(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    if n == 0:
        return out
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    scaled_sqrt_kernel[grid](x, out, scale, n, BLOCK_SIZE=256)
    return out
