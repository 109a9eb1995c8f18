import builtins


class OutOfMemoryError(RuntimeError):
    """Stands for torch.OutOfMemoryError on the CPU stand-in (no torch): a real one's name."""


def test_add():
    # A strong test of a right add: a run whose answer is wrong (a mutant run) fails the
    # comparison, until the builtins._oom_from-th such run (in the process), which dies
    # allocating instead: a mutant run out of GPU memory, which is no kill. Control runs get the
    # right answer and pass, wherever the lot puts them.
    x = [float(i) for i in range(100)]
    y = [2.0 * i for i in range(100)]
    out = add(x, y)
    if out != [a + b for a, b in zip(x, y)]:
        builtins._oom_wrong = getattr(builtins, "_oom_wrong", 0) + 1
        if builtins._oom_wrong >= getattr(builtins, "_oom_from", 1 << 30):
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 MiB")
        raise AssertionError("wrong sum")
