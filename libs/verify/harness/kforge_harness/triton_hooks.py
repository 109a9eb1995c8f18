"""Triton's JIT launch path and autotuner, patched: launches counted (and, for a mutant run,
skipped or mutated), single-config autotuning, compile timing. No effect without triton."""

from __future__ import annotations

import builtins
import importlib
import os
import sys
import time
import types
from typing import Any

from . import buffers, gpulock
from .outputs import arguments

class TritonState:
    def __init__(self, script_path: str, mutant: bool, autotune: str) -> None:
        self.script_path = os.path.realpath(script_path)
        self.mutant = mutant
        self.autotune = autotune  # "single" | "full"
        self.kernels: list[str] = []  # names of JIT functions defined by the sample
        self.launches: dict[str, int] = {}
        self.autotune_used: list[dict[str, Any]] = []
        self.shims: list[str] = []
        self.available = False
        self.version = None
        self.compile = new_compile_stats()
        self.launcher = new_compile_stats()  # C launchers Triton builds with the C compiler
        # At most one watches the launches: outputs (an outputs.Outputs, in the real run) finds
        # what each launch writes; mutator (a mutants.Mutator, in an output-mutant run) changes it.
        self.outputs = None
        self.mutator = None
        # In the skip-launch run: kernel name -> the argument names the real run's launches of
        # it wrote. A skipped launch fills those with all-ones bytes (buffers.poison).
        self.skip_outputs: dict[str, list[str]] = {}
        # The real run's distinct launch specialisations (crosscompile.Specs), when the request
        # asks for cross-compilation; the autotune config of the launch under way, if any.
        self.specs = None
        self.autotune_config = None
        # The real run's first launches of each kernel (kernel_replay.Recorder), when the kernel
        # battery is asked for; in a kernel-mutant run, id(original JIT function) -> the mutant
        # launched in its place, and how many launches were swapped. launch_raw(jit, args,
        # kwargs) launches a JIT function past these hooks (the equivalence replay).
        self.replays = None
        self.kernel_swap = None
        self.swapped = 0
        # When a kernel mutant's run is confirmed: kernel name -> the argument names the real
        # run found written, filled with all-ones bytes before each swapped launch.
        self.kernel_poison = None
        self.launch_raw = None
        # The largest launch of each kernel (timing.Largest), when the request asks for the
        # speed label.
        self.timing = None
        # While the speed label watches a wrapper call: the stream current at each launch of
        # the sample's kernels (timing.prepare_compare), else None.
        self.stream_watch = None
        # While the speed label measures the kernels' share of a wrapper call: a clock with
        # begin() -> token and end(token) around each launch of the sample's kernels
        # (timing.LaunchClock), else None.
        self.launch_clock = None


def _stream_now():
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.current_stream().cuda_stream
    except Exception:  # noqa: BLE001
        pass
    return None


def new_compile_stats() -> dict[str, int]:
    """What Triton's compile() cost in this run: calls (cache hits included), wall time, this
    process's CPU time and its children's (ptxas and other tools Triton runs), in ms."""
    return {"count": 0, "ms": 0, "cpu_ms": 0, "child_cpu_ms": 0}


# The same, for the whole process (every TritonState's runs): the phases' compile times
# (phases.sequence) are the differences of these.
TOTALS = {"compile": new_compile_stats(), "launcher": new_compile_stats()}

# The wrappers this module made (id -> (wrapper, what it wraps)) and the JIT classes it patched
# (id -> the original run): kept here, not as attributes a sample would see on Triton's objects.
_INNER: dict[int, tuple[Any, Any]] = {}
_PATCHED: dict[int, Any] = {}


def inner_of(fn: Any) -> Any:
    """What a timed wrapper of this module wraps (fn itself when it is none)."""
    got = _INNER.get(id(fn))
    return got[1] if got is not None and got[0] is fn else fn


def _ours(fn):
    got = _INNER.get(id(fn))
    return got is not None and got[0] is fn


def wear(fn: Any, like: Any) -> Any:
    """fn dressed as `like` (Triton's function it replaces): its name, qualified name, module,
    docstring, file and first line, and globals named as like's module holding only what fn's
    code uses. A sample that looks at JITFunction.run sees Triton's names, not the verifier's
    (docs/VERIFIER.md, "Trust model": its closure still reaches the verifier's state)."""
    code = fn.__code__
    try:
        repl = {"co_name": getattr(like, "__name__", code.co_name)}
        lc = getattr(like, "__code__", None)
        if lc is not None:
            repl.update(co_filename=lc.co_filename, co_firstlineno=lc.co_firstlineno)
        if hasattr(code, "co_qualname"):
            repl["co_qualname"] = getattr(like, "__qualname__", code.co_name)
        if lc is not None:  # the functions nested in it (a lambda) live in that file too
            repl["co_consts"] = tuple(_in_file(c, lc.co_filename) for c in code.co_consts)
        code = code.replace(**repl)
    except (TypeError, ValueError, AttributeError):
        return fn
    scope = {"__name__": getattr(like, "__module__", None) or "triton", "__builtins__": builtins}
    for name in _global_names(fn.__code__):
        if name in fn.__globals__ and not name.startswith("__"):
            scope[name] = fn.__globals__[name]
    out = types.FunctionType(code, scope, code.co_name, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    for attr in ("__qualname__", "__module__", "__doc__"):
        try:
            setattr(out, attr, getattr(like, attr))
        except (AttributeError, TypeError):
            pass
    setattr(out, "__wrapped__", like)
    return out


def _in_file(c, filename):
    if not isinstance(c, types.CodeType):
        return c
    return c.replace(co_filename=filename,
                     co_consts=tuple(_in_file(k, filename) for k in c.co_consts))


def _global_names(code):
    """The names code (and the functions nested in it) may look up as globals."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _timed_compile(compile_fn, state, what="compile"):
    def timed(*args, **kwargs):
        t0, c0, k0 = time.monotonic(), time.process_time(), os.times()
        gpulock.pause()  # CPU work: a timing sample need not wait for it
        try:
            return compile_fn(*args, **kwargs)
        finally:
            gpulock.resume()
            k1 = os.times()
            for st in (getattr(state, what), TOTALS[what]):
                st["count"] += 1
                st["ms"] += int((time.monotonic() - t0) * 1000)
                st["cpu_ms"] += int((time.process_time() - c0) * 1000)
                st["child_cpu_ms"] += int(((k1.children_user - k0.children_user) +
                                           (k1.children_system - k0.children_system)) * 1000)
    timed = wear(timed, compile_fn) if isinstance(compile_fn, types.FunctionType) else timed
    _INNER[id(timed)] = (timed, compile_fn)
    return timed


def _code_file(fn):
    base = fn
    for _ in range(8):
        if hasattr(base, "__code__"):
            return os.path.realpath(base.__code__.co_filename)
        base = getattr(base, "fn", None)
        if base is None:
            return None
    return None


def _poison_outputs(names, fn, args, kwargs):
    """Fills the named buffer arguments of a skipped launch with all-ones bytes."""
    if not names:
        return
    try:
        for name, value in arguments(fn, args, kwargs):
            if name in names and buffers.is_buffer(value):
                buffers.poison(value)
    except Exception:  # noqa: BLE001 - the skip itself still holds without the poison
        pass


def _launch_raw(run):
    """launch_raw(jit, args, kwargs): a launch past the hooks (the kernel battery's replays, the
    speed label's kernels), still letting a waiting timing sample in first."""
    def launch(jit, args, kwargs):
        gpulock.checkpoint()
        return run(jit, *args, **kwargs)
    return launch


def _wrap_module_compiles(state: TritonState) -> None:
    """Times Triton's module-level compile and the NVIDIA launcher build (compile costs)."""
    # Newer Triton (3.x) sets `self.compile` again when it builds a kernel's binder, from
    # `triton.compiler.compile`, replacing the per-instance wrapper above: the module's own
    # function is wrapped as well (the guard keeps a call from being counted twice).
    wrapped = {}
    for modname in ("triton.compiler", "triton.compiler.compiler", "triton"):
        try:
            mod = importlib.import_module(modname)
            compile_fn = getattr(mod, "compile", None)
            if callable(compile_fn) and not _ours(compile_fn):
                if id(compile_fn) not in wrapped:
                    wrapped[id(compile_fn)] = _timed_compile(compile_fn, state)
                setattr(mod, "compile", wrapped[id(compile_fn)])
        except Exception:
            pass
    try:
        # Each new kernel signature needs a C launcher, built by the C compiler (cached on disk)
        # when the kernel first runs, outside compile().
        from triton.backends.nvidia import driver as nv_driver
        build = getattr(nv_driver, "compile_module_from_src", None)
        if callable(build) and not _ours(build):
            nv_driver.compile_module_from_src = _timed_compile(build, state, "launcher")
    except Exception:
        pass


def install_triton_hooks(state: TritonState) -> None:
    """Patches Triton's JIT launch path and autotuner. No effect if triton is not importable."""
    try:
        import triton  # noqa: F401
        from triton.runtime import jit as jit_mod
    except Exception:
        return
    state.available = True
    state.version = getattr(triton, "__version__", None)
    JITFunction = jit_mod.JITFunction
    if id(JITFunction) in _PATCHED:
        state.launch_raw = _launch_raw(_PATCHED[id(JITFunction)][1])
        return
    orig_init = JITFunction.__init__
    orig_run = JITFunction.run
    _PATCHED[id(JITFunction)] = (JITFunction, orig_run)
    state.launch_raw = _launch_raw(orig_run)

    def init(self, fn, *args, **kwargs):
        orig_init(self, fn, *args, **kwargs)
        try:
            compile_fn = getattr(self, "compile", None)
            if callable(compile_fn) and not _ours(compile_fn):
                self.compile = _timed_compile(compile_fn, state)
        except Exception:
            pass
        try:
            name = getattr(fn, "__qualname__", getattr(fn, "__name__", "?"))
            if _code_file(fn) == state.script_path and name not in state.kernels:
                state.kernels.append(name)
        except Exception:
            pass

    def run(self, *args, **kwargs):
        if not kwargs.get("warmup", False) and _code_file(self.fn) == state.script_path:
            clock = state.launch_clock
            if clock is not None:
                # The launch timed on its stream (the speed label's kernel share); launches
                # from inside it (none in Triton) are not timed twice.
                state.launch_clock = None
                token = clock.begin()
                try:
                    return run(self, *args, **kwargs)
                finally:
                    clock.end(token)
                    state.launch_clock = clock
            name = getattr(self.fn, "__qualname__", "?")
            state.launches[name] = state.launches.get(name, 0) + 1
            gpulock.checkpoint()
            if state.stream_watch is not None:
                state.stream_watch.append(_stream_now())
            if state.mutant:
                # The launch is skipped (a test that still passes checks nothing), and what it
                # would have written is poisoned.
                _poison_outputs(state.skip_outputs.get(name, ()), self, args, kwargs)
                return None
            if state.kernel_swap:
                sub = state.kernel_swap.get(id(self))
                if sub is not None:
                    state.swapped += 1
                    if state.kernel_poison is not None:
                        _poison_outputs(state.kernel_poison.get(name, ()), self, args, kwargs)
                    return orig_run(sub, *args, **kwargs)
            rec = None
            if state.replays is not None and state.mutator is None and state.outputs is not None:
                rec = state.replays.before(name, self, args, kwargs)
            largest = None
            if state.timing is not None and state.mutator is None:
                largest = state.timing.before(name, self, args, kwargs)
            watcher = state.mutator or state.outputs
            if watcher is not None:
                ret = watcher.launch(name, self, args, kwargs,
                                     lambda: orig_run(self, *args, **kwargs))
            else:
                ret = orig_run(self, *args, **kwargs)
            if rec is not None:
                state.replays.after(rec)
            if largest is not None:
                state.timing.after(largest)
            if state.specs is not None and state.mutator is None:
                try:
                    state.specs.note(name, ret, kwargs, state.autotune_config)
                except Exception:  # noqa: BLE001 - capture must never fail a launch
                    pass
            return ret
        return orig_run(self, *args, **kwargs)

    orig_getitem = JITFunction.__getitem__

    def getitem(self, grid):
        # Newer Triton can hand out a native proxy that skips run() on cache hits; the sample's
        # own kernels always go through run() here, so every launch is counted (and skippable).
        if _code_file(self.fn) == state.script_path:
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)
        return orig_getitem(self, grid)

    _wrap_module_compiles(state)
    JITFunction.__init__ = wear(init, orig_init)
    JITFunction.run = wear(run, orig_run)
    JITFunction.__getitem__ = wear(getitem, orig_getitem)
    _patch_autotuner(state)


def _autotune_errors():
    errs = []
    for mod, name in (("triton.runtime.errors", "OutOfResources"),
                      ("triton.runtime.autotuner", "OutOfResources"),
                      ("triton.runtime.errors", "PTXASError"),
                      ("triton.compiler.errors", "CompileTimeAssertionFailure"),
                      ("triton.compiler.errors", "CompilationError")):
        try:
            errs.append(getattr(importlib.import_module(mod), name))
        except Exception:
            pass
    return tuple(set(errs)) or (Exception,)


def _patch_autotuner(state):
    try:
        from triton.runtime import autotuner as at_mod
    except Exception:
        return
    Autotuner = getattr(at_mod, "Autotuner", None)
    if Autotuner is None:
        return
    orig_run = Autotuner.run
    compile_errors = _autotune_errors()

    def run(self, *args, **kwargs):
        configs = getattr(self, "configs", None) or []
        if not (state.autotune == "single" or state.mutant) or len(configs) <= 1:
            return orig_run(self, *args, **kwargs)
        # Full autotuning benchmarks every config and refuses a meta-parameter the caller passes
        # that a config sets, in these words: the sample sees Triton's error, not a duplicate
        # keyword of the hooks' call below.
        conflicts = [k for k in kwargs if k in getattr(configs[0], "kwargs", {})]
        if conflicts:
            raise ValueError("Conflicting meta-parameters: %s. Make sure that you don't re-define "
                             "auto-tuned symbols." % ", ".join(conflicts))
        # Verify mode: the first config that compiles and runs, hooks kept. Like full autotuning,
        # the choice is made once per key; before that first run the autotuner's pre_hook is
        # called with reset_only=True, as full autotuning does after benchmarking
        # (reset_to_zero), and each config's own pre_hook runs as usual.
        self.nargs = dict(zip(self.arg_names, args))
        all_args = {**self.nargs, **kwargs}
        key = [all_args[k] for k in getattr(self, "keys", []) if k in all_args]
        for v in all_args.values():
            if hasattr(v, "dtype"):
                key.append(str(v.dtype))
        try:
            key = tuple(key)
            hash(key)
        except TypeError:
            key = None
        chosen = getattr(self, "_chosen_configs", None)
        if chosen is None:
            chosen = self._chosen_configs = {}
        if key is not None and key in chosen:
            config = chosen[key]
            if getattr(config, "pre_hook", None) is not None:
                config.pre_hook({**all_args, **config.all_kwargs()})
            state.autotune_config = str(config)
            try:
                ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
            finally:
                state.autotune_config = None
            self.nargs = None
            return ret
        try:
            candidates = self.prune_configs(kwargs) if hasattr(self, "prune_configs") else configs
        except TypeError:
            candidates = configs
        name = getattr(getattr(self, "base_fn", None), "__name__", None) or \
            getattr(self.fn, "__name__", "?")
        skipped = []
        last = None
        for index, config in enumerate(candidates):
            full = {**all_args, **config.all_kwargs()}
            try:
                try:
                    self.pre_hook(full, reset_only=True)
                except TypeError:
                    self.pre_hook(full)
                if getattr(config, "pre_hook", None) is not None:
                    config.pre_hook(full)
                state.autotune_config = str(config)
                try:
                    ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
                finally:
                    state.autotune_config = None
            except compile_errors as e:
                skipped.append({"config": str(config), "error": "%s: %s" % (
                    type(e).__name__, str(e)[:300])})
                last = e
                continue
            self.best_config = config
            if key is not None:
                chosen[key] = config
            self.nargs = None
            record = {"kernel": name, "config": str(config), "index": configs.index(config)
                      if config in configs else index, "of": len(configs)}
            if skipped:
                record["skipped"] = skipped
            if record not in state.autotune_used:
                state.autotune_used.append(record)
            return ret
        self.nargs = None
        raise last if last is not None else RuntimeError("autotune: no config left")

    Autotuner.run = wear(run, orig_run)

