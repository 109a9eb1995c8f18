def total(x: torch.Tensor) -> torch.Tensor:
    out = torch.full((1,), 123.0, device=x.device, dtype=torch.float32)  # reset_to_zero clears it
    n = x.numel()
    sum_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
