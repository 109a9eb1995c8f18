"""What a phase may leave behind in the sample's process, saved before each phase and put back
after it (docs/VERIFIER.md, "Phases").

Every phase runs the sample's own code (its tests, its wrapper, its kernels) in one process, so
whatever that code or the phase changes in the process reaches the phases after it: a timing
graph capture that failed part-way left a CUDA generator marked as capturing, and every later
mutant run of the process failed and was counted as a kill. So each phase after the first
starts from the state the first left (the first phase, the sample's tests, sets the process up:
the harness's Triton hooks, the sample's imports and their module-level switches, which the
later runs of the same tests rely on; after it only the capture check runs):

  restored, silently    Python's, numpy's and torch's random states (CPU and each CUDA
                        generator, graph-safe: a generator left capturing gets a fresh state)
  restored, reported    sys.stdout / stderr / stdin, the working directory, os.environ (PYTORCH_CUDA_ALLOC_CONF among
                        it), the recursion limit, torch's grad mode, default dtype,
                        deterministic-algorithms and TF32/cuDNN switches, the current CUDA
                        stream, the per-process memory fraction, Triton's launch hooks and the
                        harness's own patches of JITFunction.run / Autotuner.run
  checked               a CUDA graph capture still under way on the current stream: nothing in
                        the process can end it, so the phases after it do not run in this
                        process (State.after returns it as `spoiled`)

Functions are not this module's: the functions a verdict depends on, the trace and profile
functions among them (on the verifier's thread, the sample's runner thread and threading's),
are checked in one place, the integrity guard (kforge_harness/guard.py), which flags a change
`tampered` and resets the trace and profile functions; sequence.Phases calls it after every
phase, blind.call after every call of the sample's code.

What differed and was put back is returned by State.after (the report's "phase_state": phase ->
list of what it left behind); the random states are not listed, a phase that draws random
numbers changes them by design.
"""

from __future__ import annotations

import io
import os
import random
import sys
from typing import Any, Callable, Optional

Saved = dict[str, Any]


def _torch() -> Any:
    return sys.modules.get("torch")


def _cuda_ready(torch: Any) -> bool:
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a torch without its cuda module
        return False


class Setting:
    """One piece of process state: get() reads it, put(value) sets it back. `quiet`: restored
    without being reported (the random states). `same(a, b)`: whether two reads are equal.
    """

    def __init__(self, name: str, get: Callable[[], Any], put: Callable[[Any], None],
                 quiet: bool = False, same: Optional[Callable[[Any, Any], bool]] = None) -> None:
        self.name = name
        self.get = get
        self.put = put
        self.quiet = quiet
        self.same = same or (lambda a, b: a is b or a == b)


def _identity(a: Any, b: Any) -> bool:
    return a is b


def _python_settings() -> list[Setting]:
    out = [
        Setting("random state", random.getstate, random.setstate, quiet=True),
        Setting("sys.stdout", lambda: sys.stdout, lambda v: setattr(sys, "stdout", v),
                same=_identity),
        Setting("sys.stderr", lambda: sys.stderr, lambda v: setattr(sys, "stderr", v),
                same=_identity),
        Setting("sys.stdin", lambda: sys.stdin, lambda v: setattr(sys, "stdin", v),
                same=_identity),
        Setting("working directory", os.getcwd, os.chdir),
        Setting("os.environ", lambda: dict(os.environ), _put_environ),
        Setting("recursion limit", sys.getrecursionlimit, sys.setrecursionlimit),
    ]
    np = sys.modules.get("numpy")
    if np is not None and hasattr(getattr(np, "random", None), "get_state"):
        out.append(Setting("numpy random state", np.random.get_state, np.random.set_state,
                           quiet=True, same=lambda a, b: False))
    return out


def _put_environ(saved: dict[str, str]) -> None:
    for k in [k for k in os.environ if k not in saved]:
        del os.environ[k]
    for k, v in saved.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


def _attr(obj: Any, name: str, label: str) -> Optional[Setting]:
    """An attribute of a module or class as a Setting (None where it has none)."""
    if obj is None or not hasattr(obj, name):
        return None
    return Setting(label, lambda: getattr(obj, name), lambda v: setattr(obj, name, v),
                   same=_identity)


def _switch(obj: Any, name: str, label: str) -> Optional[Setting]:
    """A boolean switch of a module (torch.backends) as a Setting."""
    if obj is None or not hasattr(obj, name):
        return None
    return Setting(label, lambda: bool(getattr(obj, name)), lambda v: setattr(obj, name, v))


def _triton_settings() -> list[Setting]:
    if "triton" not in sys.modules:
        return []
    out: list[Optional[Setting]] = []
    knobs = getattr(sys.modules["triton"], "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    for hook in ("launch_enter_hook", "launch_exit_hook", "jit_post_compile_hook",
                 "jit_cache_hook"):
        out.append(_attr(runtime, hook, "triton.knobs.runtime." + hook))
    jit = sys.modules.get("triton.runtime.jit")
    out.append(_attr(getattr(jit, "JITFunction", None), "run", "triton JITFunction.run"))
    tuner = sys.modules.get("triton.runtime.autotuner")
    out.append(_attr(getattr(tuner, "Autotuner", None), "run", "triton Autotuner.run"))
    compiler = sys.modules.get("triton.compiler.compiler")
    kernel = getattr(compiler, "CompiledKernel", None)
    for hook in ("launch_enter_hook", "launch_exit_hook"):
        out.append(_attr(kernel, hook, "triton CompiledKernel." + hook))
    return [s for s in out if s is not None]


def _torch_settings(torch: Any) -> list[Setting]:
    out: list[Optional[Setting]] = [
        Setting("torch random state", torch.get_rng_state, torch.set_rng_state, quiet=True,
                same=lambda a, b: False),
        Setting("torch grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
        Setting("torch default dtype", torch.get_default_dtype, torch.set_default_dtype),
        Setting("torch deterministic algorithms", torch.are_deterministic_algorithms_enabled,
                torch.use_deterministic_algorithms),
    ]
    backends = getattr(torch, "backends", None)
    matmul = getattr(getattr(backends, "cuda", None), "matmul", None)
    cudnn = getattr(backends, "cudnn", None)
    out.append(_switch(matmul, "allow_tf32", "torch.backends.cuda.matmul.allow_tf32"))
    for name in ("allow_tf32", "benchmark", "deterministic"):
        out.append(_switch(cudnn, name, "torch.backends.cudnn." + name))
    if _cuda_ready(torch):
        out += _cuda_settings(torch)
    return [s for s in out if s is not None]


def _cuda_settings(torch: Any) -> list[Optional[Setting]]:
    cuda = torch.cuda
    out: list[Optional[Setting]] = [
        Setting("CUDA generators", lambda: _generator_states(torch), _put_generators,
                quiet=True, same=lambda a, b: False),
        Setting("current CUDA stream", cuda.current_stream, cuda.set_stream,
                same=lambda a, b: a == b),
    ]
    fraction = getattr(getattr(cuda, "memory", None), "get_per_process_memory_fraction", None)
    if callable(fraction):
        out.append(Setting("CUDA memory fraction", fraction,
                           lambda v: cuda.set_per_process_memory_fraction(v)))
    return out


def _generator_states(torch: Any) -> list[tuple[Any, Any]]:
    """Copies of the CUDA generators' states (graph-safe: a generator that a failed capture left
    marked as capturing gets a fresh state object back, with the seed and offset of before)."""
    return [(g, g.clone_state()) for g in torch.cuda.default_generators]


def _put_generators(states: list[tuple[Any, Any]]) -> None:
    for g, state in states:
        g.graphsafe_set_state(state)


def capture_under_way() -> bool:
    """Whether the current CUDA stream is capturing a graph (False without CUDA)."""
    torch = _torch()
    if not _cuda_ready(torch):
        return False
    try:
        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001
        return False


def _reopen_closed_std() -> list[str]:
    """sys.stdout or sys.stderr closed by the phase (the objects themselves, not replaced):
    opened again on a copy of descriptor 1 or 2."""
    left = []
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if not getattr(getattr(sys, name), "closed", False):
            continue
        try:
            stream = io.TextIOWrapper(os.fdopen(os.dup(fd), "wb", buffering=0),
                                      write_through=True)
        except OSError as e:
            left.append("sys.%s closed (not reopened: %s)" % (name, e))
            continue
        setattr(sys, name, stream)
        left.append("sys.%s closed (reopened)" % name)
    return left


class State:
    """The process's state around one phase: before() saves it, after() puts back what
    differs and says what that was."""

    def __init__(self) -> None:
        self.settings: list[Setting] = []
        self.saved: list[tuple[Setting, Any]] = []

    def before(self, sets_up: bool = False) -> None:
        """Saves the state. `sets_up`: the phase that runs the sample's tests first; what it
        leaves (the harness's hooks, the sample's module-level switches such as
        torch.backends.cuda.matmul.allow_tf32 or the default dtype, which the later runs of the
        same tests rely on) is the state the later phases start from: nothing is saved, only
        checked (a capture under way) after it."""
        self.saved = []
        if sets_up:
            return
        self.settings = _python_settings() + _triton_settings()
        torch = _torch()
        if torch is not None and hasattr(torch, "get_rng_state"):
            self.settings += _torch_settings(torch)
        for s in self.settings:
            try:
                self.saved.append((s, s.get()))
            except Exception:  # noqa: BLE001 - a setting this build lacks: not guarded
                pass

    def after(self) -> tuple[list[str], Optional[str]]:
        """Puts back each saved setting. Returns (what the phase left behind, in words; why the
        process cannot go on, or None)."""
        left: list[str] = []
        for s, value in self.saved:
            try:
                now = s.get()
                changed = not s.same(now, value)
            except Exception as e:  # noqa: BLE001 - cannot read it: put it back anyway
                changed, now = True, e
            if not changed and not s.quiet:
                continue
            try:
                s.put(value)
            except Exception as e:  # noqa: BLE001
                left.append("%s (not restored: %s: %s)" % (s.name, type(e).__name__,
                                                           str(e)[:200]))
                continue
            if changed and not s.quiet:
                left.append(s.name)
        left += _reopen_closed_std()
        spoiled = None
        if capture_under_way():
            spoiled = "a CUDA graph capture is still under way on the current stream"
            left.append("CUDA graph capture under way")
        return left, spoiled
