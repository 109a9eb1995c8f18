"""The pool's two modes: a long-lived worker that forks a child per sample, and fresh (one
process per sample). See docs/VERIFIER.md for the protocol on the control socket.

  pool -> worker  {"op": "run", "id": N, "request": "/dir/request.json"} + 3 fds
                  {"op": "prepare", "id": N, "prep": "/dir/prep.json"} + 4 fds (the 4th: the
                      read end of the pipe on which the pool later sends the request; see
                      prestarted_main)
                  {"op": "exit"}
                  (declared, with their descriptors, in worker_ops.txt: read_op checks each
                  message against it and the worker ends on one it does not declare; the pool
                  builds each through its typed writer)
  worker -> pool  {"event": "ready", "pid": P, "modules": {...}, "probe": {...}, ...}
                  {"event": "started", "id": N, "pid": CHILD}
                  {"event": "finished", "id": N, "status": RAW_WAIT_STATUS, "maxrss_kb": K,
                   "cpu_ms": USER_PLUS_SYSTEM_MS, "elapsed_ms": MS}
                  (declared, field by field, in worker_events.txt: send_event checks each event
                  against it, and the pool parses each through it)
The child writes its report to its result pipe as one line of JSON before it exits. When the
request asks for the mutant run in the same process ("mutant_run": "same_process") and the sample
passed having launched its kernels, the report says "mutant_phase": true and a second line
follows: the report of the mutant runs (mutants.run_mutant).
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import io
import itertools
import json
import os
import signal
import socket
import sys
import time
from typing import Any, NoReturn, Optional

from . import HARNESS_VERSION, cudasync, gpulock, phases, report_schema
from .contain import contain
from .mutants import wants_mutant_run
from .phases.sequence import Phases, cpu_s
from .pipes import (bad_request, flush_std, put_first_on_path, read_all, read_json,
                    write_report)
from .runner import kernel_options, module_available
from .shapes import Json

def _sandbox(spec, report, result_fd, keep):
    """Confines this process (contain()); `keep`: the descriptors that stay open besides stdio.
    A spec contain() refuses, or a layer that must hold and does not, ends the sample here with
    an error verdict (phase "sandbox") naming why."""
    try:
        contain(spec, report, keep)
    except Exception as e:
        report.update(verdict=report_schema.VERDICT.error, phase="sandbox", detail="sandbox setup failed: %s" % e)
        write_report(result_fd, report)
        os._exit(3)
    faulthandler.enable(file=sys.stderr, all_threads=False)


def child_main(request_path: str, result_fd: int) -> NoReturn:
    """In a fresh child: sandbox, run, report. Exits the process."""
    started = (time.monotonic(), cpu_s())
    report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
    request = read_json(request_path, report, result_fd)
    _sandbox(request.get("sandbox"), report, result_fd, [result_fd])
    set_cuda_sync(request, report)
    run_and_report(request, report, result_fd, started)


def set_cuda_sync(spec: Json, report: Json) -> None:
    """How this process will wait for its GPU (verifier.cuda_sync, as the pool's request or
    prep says: `cuda_sync` and `gpu_vendor`), set before it has a CUDA context and recorded in
    report["sandbox"]["cuda_sync"] (an open object of the report: diagnostics). Where the pool
    said nothing (a request a tool wrote), nothing is done or recorded. Never fails the sample:
    cudasync.apply says why where it could not."""
    if "cuda_sync" not in spec:
        return
    report.setdefault("sandbox", {})["cuda_sync"] = cudasync.apply(
        spec.get("cuda_sync"), spec.get("gpu_vendor", "cpu"))


def warm_up_gpu() -> Json:
    """What every sample would otherwise do first: create the CUDA context (with the allocator)
    and load Triton's driver module. Returns a note for the report."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"gpu": "torch not loaded"}
    t0, c0 = time.monotonic(), time.process_time()
    out = {}
    try:
        if not torch.cuda.is_available():
            return {"gpu": "no CUDA/HIP device visible"}
        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        out["gpu"] = "ready"
    except Exception as e:  # noqa: BLE001 - the sample will meet the same error and report it
        return {"gpu": "failed: %s: %s" % (type(e).__name__, str(e)[:300])}
    if "triton" in sys.modules:
        try:
            from triton.runtime import driver
            active = driver.active
            active.get_current_device()
            getattr(active, "utils", None)
            active.get_current_target()
        except Exception as e:  # noqa: BLE001
            out["triton_driver"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])
        try:
            # What the first compile in a process asks once (ptxas --version, cached per process).
            from triton.backends.nvidia import compiler as nv_compiler
            version = getattr(nv_compiler, "get_ptxas_version", None)
            if version is not None:
                try:
                    version(driver.active.get_current_target().arch)
                except TypeError:
                    version()
        except Exception:  # noqa: BLE001 - not NVIDIA, or another Triton: the sample pays it
            pass
    out["ms"] = int((time.monotonic() - t0) * 1000)
    out["cpu_ms"] = int((time.process_time() - c0) * 1000)  # every thread's (the driver's too)
    return out


def precompute_triton_key() -> Optional[Json]:
    """Triton keys its cache with a hash of its own sources and libtriton.so (about 400 MB),
    computed once per process on the first compile (0.4 s of CPU on an H200 host). Computed here,
    in the worker before it forks, every sample inherits it instead of hashing again. Returns a
    note for the worker's ready event, or None where triton is not loaded."""
    if "triton" not in sys.modules:
        return None
    for modname in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            fn = getattr(importlib.import_module(modname), "triton_key", None)
        except Exception:  # noqa: BLE001 - another Triton layout: try the next place
            continue
        if not callable(fn):
            continue
        t0, c0 = time.monotonic(), time.process_time()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the sample will compute (and meet) it itself
            return {"where": modname, "failed": "%s: %s" % (type(e).__name__, str(e)[:200])}
        return {"where": modname, "ms": int((time.monotonic() - t0) * 1000),
                "cpu_ms": int((time.process_time() - c0) * 1000)}
    return {"where": None}


def prestarted_main(prep_path: str, result_fd: int, go_fd: int) -> NoReturn:
    """A child started ahead of its sample: sandbox, CUDA context, then it waits. The pool writes
    the request (JSON) to go_fd and closes it; EOF with nothing written means: not needed, exit.
    The sample's deadline starts when the pool sends it, so the warm-up is off its clock."""
    report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
    prep = read_json(prep_path, report, result_fd)
    declared(prep_path, "prep", prep, report, result_fd)
    _sandbox(prep.get("sandbox"), report, result_fd, [result_fd, go_fd])
    put_first_on_path(prep.get("python_path", []))
    set_cuda_sync(prep, report)  # before warm_up_gpu makes the context
    warm = warm_up_gpu() if prep.get("gpu") else {"gpu": "not asked"}
    t_wait = time.monotonic()
    data = read_all(go_fd)
    os.close(go_fd)
    if not data.strip():
        os._exit(0)
    started = (time.monotonic(), cpu_s())
    warm["waited_ms"] = int((started[0] - t_wait) * 1000)
    report["prestart"] = warm
    try:
        request = json.loads(data.decode("utf-8"))
    except ValueError as e:
        bad_request(report, result_fd, e)
    declared("the request pipe", "request", request, report, result_fd)
    run_and_report(request, report, result_fd, started)


def declared(where: str, name: str, content: Any, report: Json, result_fd: int) -> None:
    """What the pool wrote for this prestarted process (worker_ops.txt's `file NAME`) against its
    declaration: one it does not declare ends the sample with an error verdict naming the field,
    as an unreadable request does."""
    bad = report_schema.file_violation(name, content)
    if bad:
        bad_request(report, result_fd, ValueError("%s: %s (worker_ops.txt)" % (where, bad)))


def run_and_report(request: Json, report: Json, result_fd: int,
                   started: tuple[float, float]) -> NoReturn:
    """Runs the sample in this (sandboxed) process, writes its report(s), exits. `started`:
    (monotonic time, CPU seconds) when this process started on the request (phase "prepare")."""
    put_first_on_path(request.get("python_path", []))
    if report_schema.request_version_error(request):
        bad_request(report, result_fd, ValueError(report_schema.request_version_error(request)))
    try:
        kernel = kernel_options(request)
    except ValueError as e:
        bad_request(report, result_fd, e)
    if request.get("fresh"):
        preload(request.get("preload", []))
        # As a warm worker does before it forks a sample's process: every process that runs a
        # sample's code finds its heap frozen the same way, so gc.get_freeze_count() and what
        # gc.get_objects() lists cannot tell a fresh process from a worker's fork (issue 52).
        freeze_heap()
    hold_freeze_count()
    try:
        gpulock.install(request.get("gpu_lock"))
    except OSError as e:
        report["gpu_lock"] = {"error": "cannot open the device's lock files: %s" % e}
    names = request.get("mutants", [])
    checks = Phases(report, started)
    if request.get("mutant"):
        sample = None
        phases.mutant_process(request, report, checks, names, kernel)
    else:
        sample = phases.real_run(request, report, checks)
    mutant = request.get("mutant_run") == "same_process" and sample is not None and \
        wants_mutant_run(report) and "mutant_phase_skipped" not in report
    report["mutant_phase"] = mutant
    flush_std()
    # The real run's report goes out first: whatever the mutant run does (hang, crash), the
    # verdict of the real run stands.
    write_report(result_fd, report)
    if mutant:
        second = {"harness": HARNESS_VERSION, "pid": os.getpid(), "mutant_run": True}
        phases.mutant_run(sample, second, Phases(second, sets_up=False), names, kernel)
        flush_std()
        write_report(result_fd, second)
    os._exit(0)


def freeze_heap() -> None:
    """The worker's own objects (torch, triton, numpy and the harness, imported once before it
    forks) moved to the permanent generation: a sample's process, forked from it, neither walks
    them in a full collection (the poisoning's gc.collect() before each run of the tests after
    the real run, Python's own) nor copies the pages their headers lie on when a collection
    writes them (copy-on-write). The sample's own objects are collected as before; nothing it
    sees changes (bench/verify/gc_freeze_cost.py measures the cost it saves)."""
    gc.collect()
    gc.freeze()


def hold_freeze_count() -> None:
    """gc.get_freeze_count() answers, in every run of this process, what it was as the process
    took the sample on. The verifier's own work frees objects the worker froze (a dict of the
    harness's state replaced as a run begins), and the count fell as its phases went (on the CPU
    stand-in 15437 in the real run, 15436 in the skip-launch run, 15424 after the fresh control):
    a sample reading it saw which of the verifier's runs had come before (issue 52). A C-level
    callable, as the original is."""
    gc.get_freeze_count = itertools.repeat(gc.get_freeze_count()).__next__


def preload(modules: list[str]) -> dict[str, Optional[str]]:
    loaded = {}
    for name in modules:
        if not module_available(name):
            loaded[name] = None
            continue
        try:
            mod = importlib.import_module(name)
            loaded[name] = str(getattr(mod, "__version__", "yes"))
        except Exception as e:
            loaded[name] = "import failed: %s: %s" % (type(e).__name__, str(e)[:200])
    return loaded


def send_event(sock: socket.socket, event: Json) -> None:
    """Sends one event to the pool, checked first against its declaration (worker_events.txt):
    an event the pool would refuse is a ValueError naming it here, never sent."""
    bad = report_schema.event_violation(event)
    if bad:
        raise ValueError("worker event: " + bad)
    sock.send(json.dumps(event).encode())


def read_op(msg: bytes, fds: list[int]) -> Optional[Json]:
    """One message of the pool, checked against its declaration (worker_ops.txt). A message that
    is not declared, or whose fields or descriptors are not its op's, is refused: its
    descriptors closed, why written to the worker's log (stderr, which the pool names in the
    sample's detail), and None returned: the worker then ends, as kforge and this harness do not
    speak the same protocol."""
    try:
        req: Any = json.loads(msg.decode())
    except ValueError:
        req = msg.decode("utf-8", "replace")[:200]
    bad = report_schema.op_violation(req, len(fds))
    if bad is None:
        return req
    for fd in fds:
        os.close(fd)
    sys.stderr.write("worker: refused the pool's message: %s (the harness and kforge were "
                     "installed apart?)\n" % bad)
    sys.stderr.flush()
    return None


def gpu_probe() -> Json:
    """Forks a child that touches the GPU (the worker itself must not initialise CUDA) and
    waits for its answer."""
    return finish_gpu_probe(start_gpu_probe())


def start_gpu_probe() -> Optional[tuple[int, int]]:
    """Forks the GPU probe's child and returns (its pid, the read end of its pipe) without
    waiting for it, so the worker does other work (the Triton cache key) while the child makes
    its CUDA context; finish_gpu_probe() then reads the answer. None where torch is not loaded
    (nothing to probe)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = {"ok": False}
        try:
            if torch.cuda.is_available():
                x = torch.ones(16, device="cuda")
                out = {"ok": float(x.sum().item()) == 16.0,
                       "device": torch.cuda.get_device_name(0)}
            else:
                out = {"ok": False, "error": "torch.cuda.is_available() is False"}
        except Exception as e:
            out = {"ok": False, "error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    return pid, r


def finish_gpu_probe(started: Optional[tuple[int, int]]) -> Json:
    """The answer of the probe start_gpu_probe() forked: waits for its child."""
    if started is None:
        return {"ok": True, "note": "torch not loaded; no GPU probe"}
    pid, r = started
    data = read_all(r)
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return json.loads(data.decode())
    except ValueError:
        return {"ok": False, "error": "GPU probe died"}


def _fork_child(fds, target):
    """Forks a child onto the given stdout/stderr fds and calls target() in it."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            # Nothing else of the worker's (the control socket, the pidfds of siblings) reaches
            # the sample: contain() closes every descriptor but stdio and the ones passed on.
            keep = list(fds[2:])
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)
            target(*keep)
        finally:
            os._exit(120)
    for fd in fds:
        os.close(fd)
    return pid


def worker_main(args: Any) -> int:
    sock = socket.socket(fileno=args.control_fd)
    put_first_on_path(args.python_path)
    modules = preload(args.preload)
    # The probe's child makes its CUDA context while this process hashes Triton's sources for
    # the cache key: the two overlap (issue 54). The pool asks one worker of each device to
    # probe (docs/VERIFIER.md, "Warm workers").
    probing = start_gpu_probe() if args.probe_gpu else None
    key = precompute_triton_key()
    probe = finish_gpu_probe(probing) if args.probe_gpu else {"ok": True, "note": "not asked"}
    ready = {"event": "ready", "pid": os.getpid(), "modules": modules, "probe": probe,
             "python": sys.version.split()[0], "harness": HARNESS_VERSION}
    if key is not None:
        ready["triton_key"] = key
    freeze_heap()
    send_event(sock, ready)
    if not probe.get("ok"):
        return 4
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    children = {}  # pid -> (request id, start time, pidfd or None)
    pidfd_open = getattr(os, "pidfd_open", None)

    def reap(pid):
        try:
            got, status, ru = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            got, status, ru = pid, -1, None
        if got == 0:
            return
        rid, t0, pfd = children.pop(pid)
        if pfd is not None:
            sel.unregister(pfd)
            os.close(pfd)
        send_event(sock, {"event": "finished", "id": rid, "status": status,
                     "maxrss_kb": ru.ru_maxrss if ru else 0,
                     "cpu_ms": int((ru.ru_utime + ru.ru_stime) * 1000) if ru else -1,
                     "elapsed_ms": int((time.monotonic() - t0) * 1000)})

    while True:
        timeout = 0.05 if any(v[2] is None for v in children.values()) else None
        try:
            events = sel.select(timeout)
        except InterruptedError:
            continue
        for key, _ in events:
            if key.data is not None:
                reap(key.data)
                continue
            try:
                msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 8)
            except (InterruptedError, BlockingIOError):
                continue
            except OSError:
                return 0
            if not msg:
                return 0
            req = read_op(msg, fds)
            if req is None:
                return 5
            op = req["op"]
            if op == "exit":
                return 0
            if op == "run":
                path = req["request"]
                pid = _fork_child(fds, lambda res: child_main(path, res))
            else:  # prepare
                path = req["prep"]
                pid = _fork_child(fds, lambda res, go: prestarted_main(path, res, go))
            pfd = None
            if pidfd_open:
                try:
                    pfd = pidfd_open(pid)
                    sel.register(pfd, selectors.EVENT_READ, pid)
                except OSError:
                    pfd = None
            children[pid] = (req.get("id"), time.monotonic(), pfd)
            send_event(sock, {"event": "started", "id": req.get("id"), "pid": pid})
        for pid in [p for p, v in children.items() if v[2] is None]:
            reap(pid)  # no pidfd for it (or none at all here): polled


def fresh_main(args: Any) -> NoReturn:
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (the pool made it one)
    child_main(args.request, args.result_fd)

