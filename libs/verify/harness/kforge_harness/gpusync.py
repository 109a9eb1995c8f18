"""One "wait for this process's GPU work" for the whole harness: the output battery's probes, the
runner's end of a test, the kernel replays, the bounds check, the lock's hand-over and the speed
label all call synchronize(), so that each decides the same way whether there is anything to
wait for."""

from __future__ import annotations

import sys


def synchronize() -> None:
    """Waits for every stream of this process's CUDA (or HIP) context, where torch is loaded and
    has initialised it; nothing otherwise (no torch, the CPU stand-in, CUDA never touched).
    Raises what the wait raises: a lost context is how context_lost() tells one."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        ready = torch.cuda.is_initialized()
    except AttributeError:  # a torch without its cuda module (a stand-in)
        return
    if ready:
        torch.cuda.synchronize()


def synchronize_quietly() -> None:
    """synchronize() that swallows the wait's error: for the lock's hand-over, where a broken
    context is the sample's to meet at its next call."""
    try:
        synchronize()
    except Exception:  # noqa: BLE001
        pass


def capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph (no synchronise may run then)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized() and
                    torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001
        return False
