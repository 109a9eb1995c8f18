"""Every call of the sample's code, made the same way in every run, with nothing of the
verifier in sight.

The import of the sample's script, each of its tests in the real run, the skip-launch and
control runs, the output and kernel mutant runs, and the speed label's calls of its wrapper all
go through call(): the function runs in one thread kept for the sample's whole process (its
"runner" thread, started before the sample's first line runs, so thread-local state such as
torch's default device or grad mode carries from the import to every test as it would in one
thread), called by one frame compiled from the source below with a file name and globals that
name nothing of the verifier. What the sample's code sees of its callers is therefore, in every
run: threading's bootstrap frames, then that one frame, then its own. While it runs, the
verifier's modules (kforge_harness and its submodules) are out of sys.modules (put back when it
returns), and sys.modules["__main__"] is a blank stand-in for the harness script; after it
returns, guard.GUARD.check() looks for replaced functions (guard.py). docs/VERIFIER.md, "Trust
model", says what this does not hide.
"""

from __future__ import annotations

import _queue
import builtins
import contextlib
import os
import sys
import threading
import types
from typing import Any, Callable, Iterator

from .guard import GUARD, PACKAGE

_SOURCE = """
def run(inbox, outbox, getpid=getpid, pid=pid, exit=exit):
    while True:
        job = inbox.get()
        if job is None:
            return
        fn, args, kwargs = job
        job = None
        try:
            result = fn(*args, **kwargs)
            if type(result).__name__ == "coroutine":
                import asyncio
                result = asyncio.run(result)
        except BaseException as error:
            if getpid() != pid:
                exit(0)
            outbox.put((False, error))
        else:
            if getpid() != pid:
                exit(0)
            outbox.put((True, result))
        fn = args = kwargs = result = None
"""
THREAD_NAME = "Thread-1"
STACK_BYTES = 64 << 20  # Triton's compiler (MLIR passes) runs on the calling thread's stack

_runner = None  # (pid, thread, inbox, outbox)
_stretch = None  # the phase of a stretch of calls (stretch()) underway on this process
_STANDIN_MAIN = types.ModuleType("__main__")


def _serve_function():
    scope = {"__builtins__": builtins, "__name__": "__main__", "getpid": os.getpid,
             "pid": os.getpid(), "exit": os._exit}
    exec(compile(_SOURCE, "<string>", "exec"), scope)  # noqa: S102 - our own fixed source
    run = scope.pop("run")
    scope.clear()
    scope.update(__builtins__=builtins, __name__="__main__")
    return run


def _start():
    global _runner
    if _runner is not None and _runner[0] == os.getpid() and _runner[1].is_alive():
        return _runner[2], _runner[3]
    inbox, outbox = _queue.SimpleQueue(), _queue.SimpleQueue()
    old = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):
        pass
    try:
        t = threading.Thread(target=_serve_function(), args=(inbox, outbox), name=THREAD_NAME,
                             daemon=True)
        t.start()
    finally:
        try:
            threading.stack_size(old)
        except (ValueError, RuntimeError):
            pass
    _runner = (os.getpid(), t, inbox, outbox)
    return inbox, outbox


def _ours(name):
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _hide():
    saved = {}
    for name in [n for n in list(sys.modules) if _ours(n)]:
        saved[name] = sys.modules.pop(name)
    main = sys.modules.get("__main__")
    if main is not None and main is not _STANDIN_MAIN and \
            os.path.basename(str(getattr(main, "__file__", ""))).startswith("kforge"):
        saved["__main__"] = main
        sys.modules["__main__"] = _STANDIN_MAIN
    return saved


def _restore(saved):
    for name in [n for n in list(sys.modules) if _ours(n) and n not in saved]:
        sys.modules.pop(name, None)  # a copy the sample imported (guard records the import)
    sys.modules.update(saved)


def on_runner(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) (a builtin: no frame of the verifier's for a trace function to see) on the runner
    thread, between calls of the sample's code; None when there is no runner in this process."""
    if _runner is None or _runner[0] != os.getpid() or not _runner[1].is_alive():
        return None
    _runner[2].put((fn, args, {}))
    ok, value = _runner[3].get()
    return value if ok else None


GUARD.on_runner = on_runner


def start() -> None:
    """Starts the runner thread (before the sample's first line runs)."""
    _start()


def call(phase: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs) on the runner thread, the verifier out of sight; returns its result
    or raises its exception. `phase` names the run for guard's findings. Inside a stretch()
    the verifier is already out of sight and guard checks at the stretch's end: only the hop."""
    return _results(_unseen(phase, [(fn, args, kwargs)]))[0]


def call_between(phase: str, before: Callable[[], Any], fn: Callable[..., Any],
                 args: tuple[Any, ...], after: Callable[[], Any]) -> tuple[Any, Any, Any]:
    """before(), fn(*args), after() on the runner thread back to back, queued at once (no hop
    between them: a timer's events around a timed call of the sample's code), each from the
    runner frame, so fn's stack is every other run's. Returns the three results; raises the
    first error after all three ran (the queue stays in step)."""
    got = _results(_unseen(phase, [(before, (), {}), (fn, args, {}), (after, (), {})]))
    return got[0], got[1], got[2]


def _unseen(phase: str, jobs: list[Any]) -> list[tuple[bool, Any]]:
    """The jobs on the runner thread with the verifier out of sight and guard's check after,
    or, inside a stretch(), only the hop (the stretch hides and checks)."""
    if _stretch is not None:
        return _hop(_stretch, jobs)
    saved = _hide()
    try:
        return _hop(phase, jobs)
    finally:
        _restore(saved)
        GUARD.check(phase)


def _hop(phase: str, jobs: list[Any]) -> list[tuple[bool, Any]]:
    """Queues every job (fn, args, kwargs) at once and waits for each one's (ok, value)."""
    inbox, outbox = _start()
    GUARD.phase, GUARD.in_sample = phase, True
    try:
        for job in jobs:
            inbox.put(job)
        return [outbox.get() for _ in jobs]
    finally:
        GUARD.in_sample = False


def _results(got: list[tuple[bool, Any]]) -> list[Any]:
    """The jobs' values, or the first job's error raised (after all of them ran)."""
    for ok, value in got:
        if not ok:
            try:
                raise value
            finally:
                value = got = None
    return [value for _, value in got]


@contextlib.contextmanager
def stretch(phase: str) -> Iterator[None]:
    """Many calls of the sample's code in a row, each from the runner frame as every other run's
    (the speed label's timing loop, kernel-share and profiler calls: docs/VERIFIER.md, "Trust
    model"), at the cost of a thread hop each: the verifier's modules stay out of sys.modules
    for the whole stretch (the verifier's code between the calls runs without them, as it did
    on the runner thread), and guard checks once, at its end, as it did for the phase."""
    global _stretch
    if _stretch is not None:
        yield
        return
    saved = _hide()
    _stretch = phase
    try:
        yield
    finally:
        _stretch = None
        _restore(saved)
        GUARD.check(phase)
