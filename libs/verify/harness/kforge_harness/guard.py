"""What a verdict or a time rests on, watched for tampering by the sample's code.

Before the sample is imported (arm), the identities of the functions a verdict or a time depends
on are taken: the comparisons of torch, numpy and the standard library, CUDA events and
synchronisation, the clocks, sys.settrace/setprofile, the import machinery, the report writer's
json and os functions, Triton's launch path (the verifier's hooks) and every function and class
of the verifier's own modules. After every call of the sample's code (blind.call) and before each
report is written, each is looked up again: one replaced (or its __code__ or a closure cell
swapped, or deleted) is a finding. An audit hook (sys.addaudithook, installed once, before the
sample runs) records the process-wide introspection and hooking that only serves to find the
verifier: gc.get_objects/get_referrers/get_referents, sys._current_frames, sys.settrace,
sys.setprofile, sys.addaudithook, sys.monitoring callbacks, and an import of the verifier's own
package, when they come from the sample's code (any thread but the verifier's main thread, or
the main thread while the sample's code runs). Either kind flags the sample `tampered`
(docs/VERIFIER.md, "Trust model").
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import types
from typing import Any, Callable, Optional

PACKAGE = __name__.rpartition(".")[0]  # the verifier's package (kforge_harness)

# Attributes whose identity is taken, by dotted path (the longest prefix that is a loaded module,
# then attributes; a class's attributes read from its __dict__ along the MRO, so a classmethod
# is the same object each time). Paths of modules not loaded are skipped.
WATCHED = (
    "torch.testing.assert_close", "torch.testing.assert_allclose", "torch.allclose",
    "torch.equal", "torch.isclose", "torch.eq", "torch.ne", "torch.all", "torch.any",
    "torch.abs", "torch.max", "torch.sub", "torch.Tensor.allclose", "torch.Tensor.equal",
    "torch.Tensor.isclose", "torch.Tensor.__eq__", "torch.Tensor.__ne__", "torch.Tensor.eq",
    "torch.Tensor.ne", "torch.Tensor.all", "torch.Tensor.any", "torch.Tensor.item",
    "torch.Tensor.tolist", "torch.Tensor.__bool__", "torch.Tensor.abs", "torch.Tensor.max",
    "torch.Tensor.sub", "torch.Tensor.__sub__", "torch.Tensor.cpu", "torch.Tensor.float",
    "torch.Tensor.clone", "torch.Tensor.copy_", "torch.cuda.synchronize", "torch.cuda.Event",
    "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize",
    "torch.cuda.Event.query", "torch.cuda.Stream.synchronize", "torch.cuda.current_stream",
    "torch.cuda.graphs.CUDAGraph.replay",
    # What the replays' batched checks read their answers through (kernel_replay.read_bools:
    # every guard zone's and comparison's answer passes torch.stack, then tolist) and compute
    # them with: a sample that replaced one could hide a zone it wrote.
    "torch.stack", "torch.isfinite", "torch.Tensor.amax", "torch.Tensor.min",
    "torch.Tensor.masked_fill_", "torch.Tensor.logical_not", "torch.Tensor.double",
    "torch.Tensor.__or__", "torch.Tensor.__and__", "torch.Tensor.__invert__",
    "numpy.testing.assert_allclose", "numpy.testing.assert_array_equal",
    "numpy.testing.assert_equal", "numpy.testing.assert_array_almost_equal",
    "numpy.testing.assert_almost_equal", "numpy.allclose", "numpy.array_equal", "numpy.isclose",
    "numpy.equal",
    "triton.testing.assert_close", "triton.testing.do_bench",
    "triton.runtime.jit.JITFunction.run", "triton.runtime.jit.JITFunction.__init__",
    "triton.runtime.jit.JITFunction.__getitem__", "triton.runtime.autotuner.Autotuner.run",
    "sys.settrace", "sys.setprofile", "sys.gettrace", "sys.getprofile", "sys._getframe",
    "sys.addaudithook", "sys.audit", "sys.modules", "sys.meta_path", "sys.path_hooks",
    "threading.settrace", "threading.setprofile", "threading.Thread",
    "importlib.import_module", "importlib.__import__", "importlib.reload",
    "os.write", "os._exit", "os.read", "os.fdopen",
)
# Modules watched whole: every function and class in them, and the functions of those classes.
WHOLE = ("builtins", "time", "math", "operator", "gc", "json", "json.encoder",
         "importlib._bootstrap", "torch.testing._comparison", "numpy.testing._private.utils")
# Audit events that only serve to find or trace the verifier.
SCANS = frozenset(("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames",
                   "sys.settrace", "sys.setprofile", "sys.addaudithook",
                   "sys.monitoring.register_callback"))
MAX_FINDINGS = 20


# Trace and profile functions: per thread (sys), and threading's for the threads started later.
_HOOKS = (("sys.settrace", sys.gettrace, sys.settrace),
          ("sys.setprofile", sys.getprofile, sys.setprofile))
_THREAD_HOOKS = (("threading.settrace", getattr(threading, "gettrace", None), threading.settrace),
                 ("threading.setprofile", getattr(threading, "getprofile", None),
                  threading.setprofile))


def _hooks_here() -> dict[str, Any]:
    return {name: get() for name, get, _ in _HOOKS}


class _Missing:
    def __repr__(self):
        return "<missing>"


MISSING = _Missing()


def _raw(obj, name):
    """obj.name as stored (no descriptor bound), MISSING when absent."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            d = klass.__dict__
            if name in d:
                return d[name]
        return MISSING
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name in d:
        return d[name]
    try:
        return getattr(obj, name)
    except Exception:  # noqa: BLE001 - a lazy attribute that fails: absent
        return MISSING


def _resolve(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj = mod
        for name in parts[i:]:
            obj = _raw(obj, name)
            if obj is MISSING:
                return MISSING
        return obj
    return None  # no module of it loaded


def _marks(obj):
    """What identifies a watched object: itself, its code and its closure's cells' contents."""
    code = getattr(obj, "__code__", None) if isinstance(obj, types.FunctionType) else None
    cells = ()
    if code is not None and obj.__closure__:
        cells = tuple(id(_cell(c)) for c in obj.__closure__)
    return obj, code, cells


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:  # an empty cell
        return None


def _callables(mod):
    """(label, dict, key, object) for the functions and classes of a module, and the functions
    of those classes, each with the dict that holds it (the module's, the class's)."""
    out = []
    md = vars(mod)
    for name, v in list(md.items()):
        if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
            out.append((name, md, name, v))
        elif isinstance(v, type) and getattr(v, "__module__", None) == mod.__name__:
            out.append((name, md, name, v))
            cd = v.__dict__
            for k, f in list(cd.items()):
                if isinstance(f, (types.FunctionType, staticmethod, classmethod)):
                    out.append((name + "." + k, cd, k, f))
        elif isinstance(v, type) and mod.__name__ == "builtins":
            out.append((name, md, name, v))
    return out


class Guard:
    def __init__(self) -> None:
        self.armed = False
        self.watch = {}  # label -> (resolver, marks): the dotted paths of WATCHED
        self.flat = []  # (label, dict, key, object, code, cells): the modules watched whole
        self.modules = []  # (name, module): each watched whole must stay the one in sys.modules
        self.findings = []  # {"what", "how", "phase"}
        self.scans = []  # {"event", "phase", "detail"}
        self.phase = "run"
        self.in_sample = False
        self.main_ident = threading.get_ident()
        self.seen = set()
        # The result pipe: each scan is written there at once as a line {"guard": EVENT}, before
        # the scan returns anything to the sample (the pool reads these lines apart from the
        # reports: a sample that then rewrites its report cannot take them back).
        self.out_fd: Optional[int] = None
        # Runs a builtin on the runner thread, where the sample's code runs (blind sets it):
        # sys.settrace / setprofile act on the calling thread only.
        self.on_runner: Optional[Callable[..., Any]] = None
        self.resetting = False  # the guard's own sys.settrace(None) on the runner thread
        # Threads of the verifier's own besides the main thread (the GPU lock's watcher, which
        # arms sys.monitoring and reads where the sample's code is: gpulock.py).
        self.own_threads: set[int] = set()
        self.main_hooks = _hooks_here()  # the verifier's thread's own (a debugger's, coverage)

    def arm(self) -> None:
        """Takes the identities (before the sample is imported), installs the audit hook."""
        if "numpy" in sys.modules:
            for sub in ("numpy.testing",):
                try:
                    importlib.import_module(sub)
                except Exception:  # noqa: BLE001 - an older numpy: not watched
                    pass
        for path in WATCHED:
            obj = _resolve(path)
            if obj is None or obj is MISSING:
                continue
            self.watch[path] = (lambda p=path: _resolve(p), _marks(obj))
        for modname in WHOLE + tuple(sorted(n for n in sys.modules
                                            if n == PACKAGE or n.startswith(PACKAGE + "."))):
            mod = sys.modules.get(modname)
            if mod is None:
                continue
            self.modules.append((modname, mod))
            for name, d, key, obj in _callables(mod):
                _, code, cells = _marks(obj)
                self.flat.append((modname + "." + name, d, key, obj, code, cells))
        if not self.armed:
            sys.addaudithook(self._audit)
        self.main_ident = threading.get_ident()
        self.armed = True

    def _found(self, label, how, phase):
        self.seen.add(label)
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append({"what": label, "how": how, "phase": phase})

    def out_of_step(self, phase: str) -> None:
        """A result on the runner's outbox that is not the call's (blind._batch): put there by
        the sample's code."""
        self._found("the runner's results", "a result not the call's (put by the sample)", phase)

    def check(self, phase: str) -> list[str]:
        """Looks every watched object up again; records what changed since arm(). Then resets
        the trace and profile functions (traces()). Returns what traces() reset."""
        left = self.traces(phase)
        if self.armed:
            self._check(phase)
        return left

    def traces(self, phase: str) -> list[str]:
        """Trace and profile functions left set: on the runner thread (where the sample's code
        runs), threading's for new threads, and on this thread other than the verifier's own.
        Each is put back (none; this thread's own) before anything else runs, and, once armed,
        is a finding (`tampered`): a trace or profile function sees every later run's calls.
        Returns what was reset, in words (the phase's "phase_state")."""
        left = []
        for name, get, put in _HOOKS:
            if get() is not self.main_hooks[name]:
                put(self.main_hooks[name])
                left.append(name)
        for name, get, put in _THREAD_HOOKS:
            if get is not None and get() is not None:
                put(None)
                left.append(name)
        run = self.on_runner
        if run is not None:
            for name, get, put in _HOOKS:
                if run(get) is not None:
                    self.resetting = True
                    try:
                        run(put, None)
                    finally:
                        self.resetting = False
                    left.append(name + " on the sample's thread")
        if self.armed:
            for what in left:
                name, _, where = what.partition(" on ")
                how = "left set (%s, reset)" % ("on the sample's thread" if where
                                                 else "on the verifier's thread")
                if len(self.findings) < MAX_FINDINGS and not any(
                        f == {"what": name, "how": how, "phase": phase} for f in self.findings):
                    self.findings.append({"what": name, "how": how, "phase": phase})
        return left

    def _check(self, phase: str) -> None:
        for name, mod in self.modules:
            if sys.modules.get(name) is not mod and name not in self.seen:
                self._found(name, "replaced in sys.modules", phase)
        for label, d, key, obj, code, cells in self.flat:
            now = d.get(key, MISSING)
            if now is obj and (code is None or (now.__code__ is code and (
                    not cells or tuple(id(_cell(c)) for c in now.__closure__) == cells))):
                continue
            if label in self.seen:
                continue
            self._found(label, "deleted" if now is MISSING else "replaced" if now is not obj
                        else "code replaced" if now.__code__ is not code else "closure changed",
                        phase)
        for label, (resolve, marks) in self.watch.items():
            if label in self.seen:
                continue
            try:
                now = resolve()
            except Exception:  # noqa: BLE001 - a module the sample broke
                now = MISSING
            if now is None:
                now = MISSING
            how = None
            if now is MISSING:
                how = "deleted"
            elif now is not marks[0]:
                how = "replaced"
            else:
                m = _marks(now)
                if m[1] is not marks[1]:
                    how = "code replaced"
                elif m[2] != marks[2]:
                    how = "closure changed"
            if how is not None:
                self._found(label, how, phase)

    def _audit(self, event, args, _write=os.write):
        if event not in SCANS and event != "import":
            return
        me = threading.get_ident()
        if (me == self.main_ident and not self.in_sample) or self.resetting or \
                me in self.own_threads:
            return  # the verifier's own
        if event == "import":
            name = args[0] if args else ""
            if not isinstance(name, str) or not (name == PACKAGE or
                                                 name.startswith(PACKAGE + ".")):
                return
            event = "import " + name
        if len(self.scans) < MAX_FINDINGS and not any(s["event"] == event for s in self.scans):
            self.scans.append({"event": event, "phase": self.phase})
            if self.out_fd is not None:
                line = '{"guard": "%s"}\n' % event.replace("\\", "/").replace('"', "'")
                try:
                    _write(self.out_fd, line.encode("ascii", "replace"))
                except OSError:
                    pass

    def report(self) -> dict[str, Any]:
        """The report's "integrity": what was found, and whether it flags the sample."""
        return {"armed": self.armed, "watched": len(self.watch) + len(self.flat),
                "tampered": bool(self.findings or self.scans),
                "replaced": list(self.findings), "scans": list(self.scans)}


GUARD = Guard()

