import builtins


class OutOfMemoryError(RuntimeError):
    """Stands for torch.OutOfMemoryError (torch.cuda.OutOfMemoryError) on the CPU stand-in,
    which has no torch: its name and message are a real one's."""


def allocate_too_much():
    # On a GPU, torch's own error for an allocation no device holds; on the stand-in, its
    # stand-in with torch's words.
    torch = globals().get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.empty(1 << 40, dtype=torch.uint8, device="cuda")  # 1 TiB
    raise OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.72 "
        "GiB of which 1.12 GiB is free. Of the allocated memory 4.80 GiB is allocated by "
        "PyTorch, and 112.00 MiB is reserved by PyTorch but unallocated.")


def test_add():
    # A strong test of a right add. Every run of it after its process's first one that gets as
    # far as a right answer (a control run: the kernel launched) then dies allocating, as a
    # control did on an H200 with 24 workers at 5.2 GiB each; a run with the launches skipped
    # or an output changed fails the comparison first.
    builtins._oom_runs = getattr(builtins, "_oom_runs", 0) + 1
    x = [float(i) for i in range(100)]
    y = [2.0 * i for i in range(100)]
    out = add(x, y)
    assert out == [a + b for a, b in zip(x, y)]
    if builtins._oom_runs > 1:
        allocate_too_much()
