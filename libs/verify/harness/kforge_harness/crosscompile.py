"""Cross-compilation of a passing sample's kernels for other targets (verifier.cross_compile).

During the real run every launch of the sample's own kernels is noted (Specs.note): the kernel
Triton compiled for it carries the exact specialisation (its ASTSource: the function, the
signature with each argument's type, the constexprs, and the attributes such as divisibility by
16), and the launch's keyword arguments carry the options it asked for (num_warps, num_stages,
..., the autotune config's among them). After the run passed, each distinct specialisation is
compiled again with Triton's own compiler for each target, e.g. GPUTarget("hip", "gfx942", 64),
in a forked child per target, so that a compiler that aborts (LLVM ERROR) or hangs cannot change
the sample's verdict. Nothing runs on the target: this proves that the kernels compile there.

Per target the result is "ok", "error" (the stage and the first lines of the compiler's message)
or "unavailable" (this Triton has no backend for it: the sample is not failed for that).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any, Optional

from .shapes import Json

from .report_schema import TARGET_RESULT

from .triton_hooks import inner_of

# The launch options that mean the same on every backend; the others (CUDA's maxnreg, the
# backend's own arch, libdevice as an extern lib) would be wrong on another target.
PORTABLE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "enable_fp_fusion", "debug",
                    "launch_cooperative_grid", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
MAX_SPECS = 32  # distinct specialisations compiled per sample
MAX_ERROR = 600
ERROR_LINES = 3
WARP_SIZE = {"hip": 64}  # CDNA (gfx9xx); RDNA (gfx10xx and later) is 32
DEFAULT_TIMEOUT_S = 60.0


def parse_target(text: str) -> tuple[str, str, int]:
    """"hip:gfx942" -> ("hip", "gfx942", 64). Raises ValueError naming what is wrong."""
    if not isinstance(text, str) or text.count(":") != 1:
        raise ValueError("'%s' is not BACKEND:ARCH (e.g. hip:gfx942)" % (text,))
    backend, arch = text.split(":")
    if backend != "hip":
        raise ValueError("'%s': backend '%s' is not one of: hip" % (text, backend))
    if not arch.startswith("gfx") or len(arch) < 6 or not arch[3:].isalnum():
        raise ValueError("'%s': '%s' is not an AMD architecture (gfxNNN)" % (text, arch))
    major = arch[3:-2]
    warp = 32 if major.isdigit() and int(major) >= 10 else WARP_SIZE[backend]
    return backend, arch, warp


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    name = getattr(v, "__name__", None)
    if name is not None and hasattr(v, "cache_key"):
        return "jit:" + name  # a JITFunction passed as a constexpr
    inner = getattr(v, "value", None)  # tl.constexpr(...)
    if inner is not None and type(v).__name__ == "constexpr":
        return _jsonable(inner)
    return str(v)


def _path_name(arg_names, path):
    """A Triton argument path ((2,) or (2, 0) for a tuple's member) as the argument's name."""
    if isinstance(path, str):
        return path
    if not isinstance(path, tuple) or not path:
        return str(path)
    head = arg_names[path[0]] if isinstance(path[0], int) and path[0] < len(arg_names) else \
        str(path[0])
    return head + "".join("[%s]" % p for p in path[1:])


class Spec:
    """One specialisation a launch compiled: the parts an ASTSource is made of, the launch's
    portable options and, for a description in the report, plain JSON of the same."""

    def __init__(self, kernel: str, fn: Any, signature: dict[Any, Any], constants: dict[Any, Any],
                 attrs: dict[Any, Any], options: Json, autotune: Optional[str],
                 src_type: Any = None) -> None:
        self.kernel = kernel
        self.src_type = src_type  # the launch's ASTSource class (Gluon has its own)
        self.fn = fn
        self.signature = signature
        self.constants = constants
        self.attrs = attrs
        self.options = options
        self.autotune = autotune

    def describe(self) -> Json:
        names = list(getattr(self.fn, "arg_names", None) or [])
        d = {"kernel": self.kernel,
             "signature": {str(k): _jsonable(v) for k, v in self.signature.items()},
             "constexprs": {_path_name(names, k): _jsonable(v) for k, v in self.constants.items()},
             "attrs": {_path_name(names, k): _jsonable(v) for k, v in self.attrs.items()},
             "options": {k: _jsonable(v) for k, v in self.options.items()}}
        if self.autotune:
            d["autotune_config"] = self.autotune
        return d


def spec_of_launch(kernel_name: str, compiled: Any, launch_kwargs: dict[str, Any],
                   autotune: Optional[str] = None) -> tuple[Optional[Spec], Optional[str]]:
    """The Spec of one launch from what Triton's JITFunction.run returned (the CompiledKernel,
    whose .src is the ASTSource it was compiled from; an async compile's future is resolved),
    or (None, why) when it carries none."""
    if compiled is not None and not hasattr(compiled, "src") and hasattr(compiled, "result"):
        try:
            compiled = compiled.result()
        except Exception as e:  # noqa: BLE001 - the launch itself already succeeded
            return None, "async compile: %s: %s" % (type(e).__name__, str(e)[:200])
    src = getattr(compiled, "src", None)
    fn = getattr(src, "fn", None)
    signature = getattr(src, "signature", None)
    if fn is None or not isinstance(signature, dict):
        return None, "the launch returned no compiled kernel with its source (%s)" % (
            type(compiled).__name__)
    options = {k: launch_kwargs[k] for k in PORTABLE_OPTIONS
               if k in launch_kwargs and launch_kwargs[k] is not None}
    return Spec(kernel_name, fn, dict(signature), dict(getattr(src, "constants", None) or {}),
                dict(getattr(src, "attrs", None) or {}), options, autotune, type(src)), None


class Specs:
    """The distinct specialisations the real run launched, in the order first seen."""

    def __init__(self) -> None:
        self.specs = []
        self.keys = set()
        self.launches = 0
        self.dropped = 0
        self.uncaptured = []
        self.seen = {}  # (id of the compiled kernel, autotune config, options) -> the kernel

    def note(self, kernel_name: str, compiled: Any, launch_kwargs: dict[str, Any],
             autotune: Optional[str] = None) -> None:
        self.launches += 1
        try:
            # A launch like one before it (the same compiled kernel and options): nothing new.
            # The kernel is held, so its id cannot be reused by another object.
            fast = (id(compiled), autotune, tuple(sorted(
                (k, repr(launch_kwargs[k])) for k in PORTABLE_OPTIONS if k in launch_kwargs)))
            if compiled is not None and fast in self.seen:
                return
            if compiled is not None:
                self.seen[fast] = compiled
        except Exception:  # noqa: BLE001 - an odd option value: take the slow path
            pass
        spec, why = spec_of_launch(kernel_name, compiled, launch_kwargs, autotune)
        if spec is None:
            if why not in self.uncaptured and len(self.uncaptured) < 4:
                self.uncaptured.append(why)
            return
        key = json.dumps([id(spec.fn), spec.describe()], sort_keys=True, default=str)
        if key in self.keys:
            return
        if len(self.specs) >= MAX_SPECS:
            self.dropped += 1
            return
        self.keys.add(key)
        self.specs.append(spec)


def shorten_error(e: BaseException, stage: Optional[str]) -> str:
    """"<stage>: <Type>: <first lines>", capped: what a user (or a repair prompt) needs to see."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[:ERROR_LINES]
    # Triton's CompilationError puts the source excerpt first and the reason last.
    if len(lines) > ERROR_LINES and lines[-1] not in head:
        head.append("... " + lines[-1].strip())
    msg = "%s: %s%s" % (stage, type(e).__name__, (": " + " | ".join(head)) if head else "")
    return msg if len(msg) <= MAX_ERROR else msg[:MAX_ERROR - 3] + "..."


def telling_lines(text: str, limit: int = ERROR_LINES) -> str:
    """The first lines of a crashed compiler's output that say why (LLVM ERROR, error:)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if "LLVM ERROR" in ln or "error:" in ln or "Error" in ln]
    out = " | ".join((hits or lines[-limit:])[:limit])
    return out[:MAX_ERROR]


def triton_parts() -> tuple[Optional[tuple[Any, ...]], Optional[str]]:
    """(ASTSource, GPUTarget, compile, backends) of the Triton this process runs, or (None, why)."""
    triton = sys.modules.get("triton")
    if triton is None:
        return None, "triton is not loaded"
    try:
        from triton.backends import backends
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler import compile as compile_fn
    except Exception as e:  # noqa: BLE001 - an old Triton: ASTSource/GPUTarget came in 3.0
        return None, "this Triton (%s) cannot compile for another target: %s: %s" % (
            getattr(triton, "__version__", "?"), type(e).__name__, str(e)[:200])
    compile_fn = inner_of(compile_fn)  # not the timed wrapper
    return (ASTSource, GPUTarget, compile_fn, backends), None


def backend_for(backends: Any, target: Any) -> Optional[str]:
    """The name of the backend that compiles for target, or None."""
    for name, b in dict(backends).items():
        compiler = getattr(b, "compiler", None)
        try:
            if compiler is not None and compiler.supports_target(target):
                return name
        except Exception:  # noqa: BLE001 - a broken backend plug-in is not ours to judge
            continue
    return None


def _stage_tracking(backend_cls, where):
    """Wraps backend_cls.add_stages (in the child only) so each stage writes its name first:
    an error or a crash is then attributed to the stage it happened in."""
    orig = getattr(backend_cls, "add_stages", None)
    if orig is None:
        return

    def add_stages(self, stages, *args, **kwargs):
        orig(self, stages, *args, **kwargs)
        for name in list(stages):
            fn = stages[name]

            def staged(*a, _fn=fn, _name=name, **kw):
                where["stage"] = _name
                _emit(where.get("fd"), {"stage": _name})
                return _fn(*a, **kw)
            stages[name] = staged

    backend_cls.add_stages = add_stages


def _emit(fd, obj):
    if fd is None:
        return
    data = (json.dumps(obj, default=str) + "\n").encode("utf-8", "replace")
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[n:]


def _child(parts, target_text, specs, fd, log_path):
    """In the forked child: compile each spec for the target, one JSON line per kernel."""
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
    except OSError:
        pass
    ASTSource, GPUTarget, compile_fn, backends = parts
    backend, arch, warp = parse_target(target_text)
    target = GPUTarget(backend, arch, warp)
    where = {"stage": "frontend", "fd": fd}
    name = backend_for(backends, target)
    try:
        _stage_tracking(backends[name].compiler, where)
    except Exception:  # noqa: BLE001 - stages are then reported as "compile"
        where["stage"] = "compile"
    for i, spec in enumerate(specs):
        where["stage"] = "frontend"
        _emit(fd, {"kernel": i, "start": True})
        t0 = time.monotonic()
        try:
            cls = spec.src_type if isinstance(spec.src_type, type) and \
                issubclass(spec.src_type, ASTSource) else ASTSource
            src = cls(spec.fn, spec.signature, constexprs=spec.constants, attrs=spec.attrs)
            compile_fn(src, target=target, options=dict(spec.options))
            _emit(fd, {"kernel": i, "result": TARGET_RESULT.ok,
                       "ms": int((time.monotonic() - t0) * 1000)})
        except BaseException as e:  # noqa: B902 - whatever the compiler raises is its verdict
            _emit(fd, {"kernel": i, "result": TARGET_RESULT.error, "stage": where["stage"],
                       "error": shorten_error(e, where["stage"]),
                       "ms": int((time.monotonic() - t0) * 1000)})
    os._exit(0)


def _read_lines(fd, deadline):
    """Reads JSON lines from fd until EOF or the deadline. Returns (objects, timed_out)."""
    buf, out = b"", []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return out, True
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:
            continue
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                out.append(json.loads(line.decode("utf-8", "replace")))
            except ValueError:
                pass
    return out, False


def _describe_end(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return "the compiler crashed (%s)" % name
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        return "the compiler exited with code %d" % os.WEXITSTATUS(status)
    return None


def compile_target(parts: tuple[Any, ...], target_text: str, specs: Specs, deadline: float,
                   workdir: Optional[str]) -> Json:
    """One target: a forked child compiles every spec. Returns the target's entry."""
    t0 = time.monotonic()
    log_path = os.path.join(workdir, "kforge-cross-%s.log" % target_text.replace(":", "-"))
    r, w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _child(parts, target_text, specs, w, log_path)
        finally:
            os._exit(70)
    os.close(w)
    lines, timed_out = _read_lines(r, deadline)
    os.close(r)
    if timed_out:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    kernels = [None] * len(specs)
    current, stage = None, "frontend"
    for obj in lines:
        if "start" in obj:
            current, stage = obj["kernel"], "frontend"
        elif "stage" in obj and "result" not in obj:
            stage = obj["stage"]
        elif "result" in obj and isinstance(obj.get("kernel"), int) and \
                obj["kernel"] < len(kernels):
            kernels[obj["kernel"]] = obj
            current = None
    end = "the compile did not end within its deadline" if timed_out else _describe_end(status)
    if current is not None and kernels[current] is None:
        why = end or "the compiler ended without a result"
        try:
            with open(log_path, errors="replace") as f:
                said = telling_lines(f.read()[-20000:])
        except OSError:
            said = ""
        kernels[current] = {"result": TARGET_RESULT.error, "stage": stage,
                            "error": ("%s: %s%s" % (stage, why, (": " + said) if said else ""))
                            [:MAX_ERROR]}
    entry = {"result": TARGET_RESULT.ok, "kernels": len(specs), "ms": int((time.monotonic() - t0) * 1000)}
    failed = [(i, k) for i, k in enumerate(kernels) if k and k.get("result") == TARGET_RESULT.error]
    missing = [i for i, k in enumerate(kernels) if k is None]
    if failed:
        i, k = failed[0]
        entry.update(result=TARGET_RESULT.error, kernel=specs[i].kernel, stage=k.get("stage"),
                     error=k.get("error"), failed=len(failed))
    elif missing:
        why = end or "the compiler ended without a result"
        entry.update(result=TARGET_RESULT.error, kernel=specs[missing[0]].kernel, stage=stage,
                     error=("%s: %s" % (stage, why))[:MAX_ERROR], failed=len(missing))
    try:
        os.unlink(log_path)
    except OSError:
        pass
    return entry


def cross_compile(specs: Specs, targets: list[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                  workdir: Optional[str] = None, parts: Optional[tuple[Any, ...]] = None) -> Json:
    """Compiles the captured specialisations for each target. Returns the report's entry:
    {"targets": {target: {"result": ..., ...}}, "kernels": [descriptions], "ms": N}."""
    t0 = time.monotonic()
    deadline = t0 + (timeout_s if timeout_s and timeout_s > 0 else DEFAULT_TIMEOUT_S)
    out = {"targets": {}, "kernels": [s.describe() for s in specs.specs],
           "launches": specs.launches}
    if specs.dropped:
        out["not_compiled"] = specs.dropped
    if specs.uncaptured:
        out["uncaptured"] = list(specs.uncaptured)
    if parts is None:
        parts, why = triton_parts()
    else:
        why = None
    for text in targets:
        if parts is None:
            out["targets"][text] = {"result": TARGET_RESULT.unavailable, "reason": why}
            continue
        backend, arch, warp = parse_target(text)
        target = parts[1](backend, arch, warp)
        if backend_for(parts[3], target) is None:
            out["targets"][text] = {"result": TARGET_RESULT.unavailable,
                                    "reason": "this Triton has no backend for %s" % text}
            continue
        if not specs.specs:
            out["targets"][text] = {"result": TARGET_RESULT.not_run,
                                    "reason": "no launch of the sample's kernels was captured"}
            continue
        if time.monotonic() >= deadline:
            out["targets"][text] = {"result": TARGET_RESULT.error, "stage": "deadline",
                                    "error": "deadline: no time left for this target"}
            continue
        out["targets"][text] = compile_target(parts, text, specs.specs, deadline,
                                              workdir or os.getcwd())
    out["ms"] = int((time.monotonic() - t0) * 1000)
    return out
