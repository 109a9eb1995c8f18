_SIDE = []


def add(x, y):
    # Honest use of a side stream: the work goes there, and the caller's stream waits for it
    # before the result is handed back (not unseen work).
    if not _SIDE:
        _SIDE.append(torch.cuda.Stream())
    side = _SIDE[0]
    out = torch.empty_like(x)
    n = x.numel()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.current_stream().wait_stream(side)
    return out


def reference(x, y):
    return x + y


def inputs():
    return torch.randn(1 << 24, device="cuda"), torch.randn(1 << 24, device="cuda")


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
