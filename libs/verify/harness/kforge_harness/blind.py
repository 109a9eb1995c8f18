"""Every call of the sample's code, made the same way in every run, with nothing of the
verifier in sight.

The import of the sample's script, each of its tests in the real run, the skip-launch and
control runs, the output and kernel mutant runs, and the speed label's calls of its wrapper all
go through call(): the function runs in one thread kept for the sample's whole process (its
"runner" thread, started before the sample's first line runs, so thread-local state such as
torch's default device or grad mode carries from the import to every test as it would in one
thread), called by one frame compiled from the source below with a file name and globals that
name nothing of the verifier. What the sample's code sees of its callers is therefore, in every
run: threading's bootstrap frames, then that one frame, then its own. Each call is a batch of
steps (a test's call; a timed rep's start, call and end; a builtin of the verifier's) that the
frame takes whole from its inbox and runs in one C-level pass before it hands the results back:
while a step runs no local of the frame holds a step or a result, both queues are empty, and a
result the sample's code puts on them is not taken for the call's (_batch). While it runs, the
verifier's modules (kforge_harness and its submodules) are out of sys.modules (put back when it
returns), and sys.modules["__main__"] is a blank stand-in for the harness script; after it
returns, guard.GUARD.check() looks for replaced functions (guard.py). docs/VERIFIER.md, "Trust
model", says what this does not hide.
"""

from __future__ import annotations

import _queue
import builtins
import contextlib
import functools
import itertools
import operator
import os
import sys
import threading
import types
from typing import Any, Callable, Iterator

from . import gpulock
from .guard import GUARD, PACKAGE

_SOURCE = """
def run(inbox, outbox, getpid=getpid, pid=pid, exit=exit, call=call, list=list, map=map):
    while True:
        try:
            outbox.put(((True, list(map(call, inbox.get()))), getpid() == pid or exit(0))[0])
        except BaseException as error:
            if getpid() != pid:
                exit(0)
            outbox.put((False, error))
"""
THREAD_NAME = "Thread-1"
STACK_BYTES = 64 << 20  # Triton's compiler (MLIR passes) runs on the calling thread's stack

_runner = None  # (pid, thread, inbox, outbox)
_stretch = None  # the phase of a stretch of calls (stretch()) underway on this process
_STANDIN_MAIN = types.ModuleType("__main__")


def _serve_function():
    scope = {"__builtins__": builtins, "__name__": "__main__", "getpid": os.getpid,
             "pid": os.getpid(), "exit": os._exit, "call": operator.call}
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
    gpulock.set_runner(t.ident)  # the lock's watcher reaches the sample's code there
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
    ok, value = _batch(_runner[2], _runner[3], (functools.partial(fn, *args),))
    return value[0] if ok else None


def _batch(inbox: Any, outbox: Any, steps: tuple[Callable[[], Any], ...]) -> tuple[bool, Any]:
    """Hands the steps to the runner as one batch and waits for its (ok, values). The batch ends
    with a step of the verifier's own (a C-level one) that returns a token made for it: a result
    without it (a sample that put one of its own into the outbox while its code ran, or a batch
    of its own into the inbox) is not taken for the call's, is dropped and recorded (guard:
    tampered), and the call's own is waited for."""
    token = object()
    inbox.put(steps + (itertools.repeat(token).__next__,))
    while True:
        ok, got = outbox.get()
        if not ok:
            return False, got
        if isinstance(got, list) and got and got[-1] is token:
            got.pop()
            return True, got
        GUARD.out_of_step(GUARD.phase)


GUARD.on_runner = on_runner


def start() -> None:
    """Starts the runner thread (before the sample's first line runs)."""
    _start()


def call(phase: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs) on the runner thread, the verifier out of sight; returns its result
    or raises its exception. `phase` names the run for guard's findings. Inside a stretch()
    the verifier is already out of sight and guard checks at the stretch's end: only the hop."""
    return _unseen(phase, (functools.partial(fn, *args, **kwargs),))[0]


def call_between(phase: str, before: Callable[[], Any], fn: Callable[..., Any],
                 args: tuple[Any, ...], after: Callable[[], Any]) -> tuple[Any, Any, Any]:
    """before(), fn(*args), after() on the runner thread back to back, handed over at once (no
    hop between them: a timer's events around a timed call of the sample's code), each from the
    runner frame, so fn's stack is every other run's. Returns the three results; raises the
    first error, after() run in any case (a profiler's exit, a stream's end: once more on the
    runner thread, a hop later, where an error stopped the batch before it)."""
    done: list[bool] = []
    try:
        got = _unseen(phase, (before, functools.partial(fn, *args),
                              functools.partial(_after_once, done, after)))
    except BaseException:
        if not done:
            try:
                _unseen(phase, (after,))
            except Exception:  # noqa: BLE001 - the first error is the one raised
                pass
        raise
    return got[0], got[1], got[2]


def _after_once(done: list[bool], after: Callable[[], Any]) -> Any:
    done.append(True)
    return after()


def _unseen(phase: str, steps: tuple[Callable[[], Any], ...]) -> list[Any]:
    """The steps on the runner thread with the verifier out of sight and guard's check after,
    or, inside a stretch(), only the hop (the stretch hides and checks)."""
    if _stretch is not None:
        return _hop(_stretch, steps)
    saved = _hide()
    try:
        return _hop(phase, steps)
    finally:
        _restore(saved)
        GUARD.check(phase)


def _hop(phase: str, steps: tuple[Callable[[], Any], ...]) -> list[Any]:
    """The steps (zero-argument callables) run by the runner frame in one C-level pass
    (list(map(operator.call, steps))): the whole batch leaves the inbox before the first step
    runs and no local of the runner frame holds a step, a result or the batch, so what a sample
    can reach from its frames while its step runs (the runner frame's locals, the queues'
    lengths and contents, the thread) is the same in a test call, a timed call and a call of the
    verifier's own (on_runner). A coroutine a step returned (an async test) is run to its end
    there too (asyncio.run, a second batch). Returns the steps' values or raises the first
    step's error."""
    inbox, outbox = _start()
    GUARD.phase, GUARD.in_sample = phase, True
    try:
        ok, got = _batch(inbox, outbox, steps)
        if ok and any(type(v).__name__ == "coroutine" for v in got):
            import asyncio
            for k, v in enumerate(got):
                if type(v).__name__ == "coroutine":
                    ok, ran = _batch(inbox, outbox, (functools.partial(asyncio.run, v),))
                    if not ok:
                        got = ran
                        break
                    got[k] = ran[0]
    finally:
        GUARD.in_sample = False
    if not ok:
        try:
            raise got
        finally:
            got = None
    return got


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
