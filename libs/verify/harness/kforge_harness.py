#!/usr/bin/env python3
"""kforge verifier harness: runs one generated sample (code + wrapper + test) and reports JSON.

Started by the C++ pool (libs/verify) in one of two modes:

  worker  A long-lived process per pool slot. It imports torch/triton/numpy once, before any
          CUDA call, then waits on its control socket for requests. For each request it forks a
          child that applies the sandbox and runs the sample; CUDA is only ever initialised in
          children. The pool passes, with each request, the write ends of the child's stdout,
          stderr and result pipes (SCM_RIGHTS), so output never flows through the worker.
  fresh   One process per sample: applies the sandbox to itself, imports, runs, exits.

Protocol (worker): the control socket is an AF_UNIX SOCK_SEQPACKET socket on --control-fd.
  pool -> worker  {"op": "run", "id": N, "request": "/dir/request.json"} + 3 fds
                  {"op": "prepare", "id": N, "prep": "/dir/prep.json"} + 4 fds (the 4th: the
                      read end of the pipe on which the pool later sends the request; see
                      prestarted_main)
                  {"op": "exit"}
  worker -> pool  {"event": "ready", "pid": P, "modules": {...}, "probe": {...}}
                  {"event": "started", "id": N, "pid": CHILD}
                  {"event": "finished", "id": N, "status": RAW_WAIT_STATUS, "maxrss_kb": K,
                   "cpu_ms": USER_PLUS_SYSTEM_MS}
The child writes its report to its result pipe as one line of JSON before it exits. When the
request asks for the mutant run in the same process ("mutant_run": "same_process") and the sample
passed having launched its kernels, the report says "mutant_phase": true and a second line
follows: the report of the tests run again with those launches skipped.

Everything here uses the standard library only; torch, triton and numpy are used when present.
"""

import ast
import ctypes
import errno
import faulthandler
import importlib
import importlib.util
import inspect
import io
import json
import os
import resource
import signal
import socket
import sys
import time
import traceback

HARNESS_VERSION = 1
PREAMBLE_MODULES = [
    ("torch", "import torch"),
    ("triton", "import triton"),
    ("triton.language", "import triton.language as tl"),
    ("numpy", "import numpy as np"),
]
MAX_MESSAGE = 4000
TRACEBACK_LINES = 40

# ----------------------------------------------------------------------------------------------
# Script assembly
# ----------------------------------------------------------------------------------------------


def module_available(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _dotted(node):
    """'triton.compile' for an ast.Attribute/Name chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


COMPILE_CALLS = {"triton.compile", "triton.compiler.compile", "triton.compiler.compiler.compile"}


def _is_compile_call(node, aliases):
    if not isinstance(node, ast.Call):
        return False
    name = _dotted(node.func)
    return name in COMPILE_CALLS or name in aliases


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _compile_aliases(tree):
    """Names bound to triton.compile by 'from triton import compile [as c]'."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("triton", "triton.compiler",
                                                                "triton.compiler.compiler"):
            for a in node.names:
                if a.name == "compile":
                    aliases.add(a.asname or a.name)
    return aliases


def strip_compile_statements(source):
    """Removes `x = triton.compile(...)`, bare `triton.compile(...)` and prints of their results.

    Statements are found with ast; their lines are replaced by `pass` at the same indentation,
    so line numbers and block structure stay as they were. Returns (source, removed) where
    removed lists {"line": N, "statement": "..."}. Raises SyntaxError if source does not parse.
    """
    tree = ast.parse(source)
    aliases = _compile_aliases(tree)
    results = set()  # names that hold a compile result
    doomed = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and \
                _is_compile_call(node.value, aliases):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                results |= _names_in(t)
            doomed.append(node)
        elif isinstance(node, ast.Expr) and _is_compile_call(node.value, aliases):
            doomed.append(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                _dotted(node.value.func) == "print" and results:
            used = set()
            for a in list(node.value.args) + [k.value for k in node.value.keywords]:
                used |= _names_in(a)
            if used & results:
                doomed.append(node)
    if not doomed:
        return source, []
    lines = source.splitlines(keepends=True)
    # Each doomed statement must own its lines; otherwise fall back to regenerating the source.
    owned = True
    spans = sorted({(n.lineno, n.end_lineno, n.col_offset) for n in doomed})
    all_stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for (a, b, col) in spans:
        for s in all_stmts:
            if s.lineno <= b and s.end_lineno >= a and (s.lineno, s.end_lineno, s.col_offset) \
                    not in spans and not (s.lineno <= a and s.end_lineno >= b):
                owned = False
        if lines[a - 1][:col].strip():
            owned = False
    removed = [{"line": n.lineno, "statement": ast.get_source_segment(source, n) or ""}
               for n in sorted(doomed, key=lambda n: n.lineno)]
    if owned:
        for (a, b, col) in spans:
            indent = lines[a - 1][:col]
            lines[a - 1] = indent + "pass  # kforge: removed triton.compile statement\n"
            for i in range(a, b):
                lines[i] = "\n"
        return "".join(lines), removed

    class Strip(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if isinstance(body, list) and body and all(isinstance(s, ast.stmt) for s in body):
                    kept = [s for s in body if s not in doomed]
                    if not kept:
                        kept = [ast.Pass()]
                    setattr(node, field, kept)
            return node

    new_tree = ast.fix_missing_locations(Strip().visit(tree))
    return ast.unparse(new_tree) + "\n", removed


def assemble(code, wrapper, test, modules_present):
    """The single script that runs: preamble, cleaned code, wrapper, test.

    Returns (script, info) with info = {"sections": {name: [first_line, last_line]},
    "removed": [...]}. Raises SyntaxError (with .kforge_section set) for code that does not parse.
    """
    try:
        cleaned, removed = strip_compile_statements(code)
    except SyntaxError as e:
        e.kforge_section = "code"
        raise
    parts = [("preamble", "\n".join(stmt for mod, stmt in PREAMBLE_MODULES
                                    if modules_present.get(mod)) + "\n"),
             ("code", cleaned), ("kernel_wrapper", wrapper), ("unitest_code", test)]
    script = ""
    sections = {}
    for name, text in parts:
        header = "# ---- kforge: %s ----\n" % name
        script += header
        first = script.count("\n") + 1
        if not text.endswith("\n"):
            text += "\n"
        script += text
        sections[name] = [first, script.count("\n")]
    return script, {"sections": sections, "removed": removed}


def code_kernels(code):
    """Names of the functions the code decorates as Triton kernels (@triton.jit, @jit,
    @triton.autotune(...), @triton.heuristics(...), in any combination), found with ast."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for d in node.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            dotted = _dotted(target) or ""
            if dotted.split(".")[-1] in ("jit", "autotune", "heuristics"):
                names.append(node.name)
                break
    return names


def section_of(info, line):
    for name, (a, b) in info["sections"].items():
        if line is not None and a <= line <= b:
            return name, line - a + 1
    return None, line


def find_tests(tree):
    """Module-level test functions, in order, and those the script itself calls at top level."""
    tests = [n.name for n in tree.body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    called = set()
    for n in tree.body:
        value = None
        if isinstance(n, ast.Expr):
            value = n.value
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            value = n.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
                value.func.id in tests:
            called.add(value.func.id)
    return tests, called


# ----------------------------------------------------------------------------------------------
# Triton: launch counting, mutant runs, single-config autotuning, compatibility shims
# ----------------------------------------------------------------------------------------------


class TritonState:
    def __init__(self, script_path, mutant, autotune):
        self.script_path = os.path.realpath(script_path)
        self.mutant = mutant
        self.autotune = autotune  # "single" | "full"
        self.kernels = []  # names of JIT functions defined by the sample
        self.launches = {}
        self.autotune_used = []
        self.shims = []
        self.available = False
        self.version = None
        self.compile = new_compile_stats()
        self.launcher = new_compile_stats()  # C launchers Triton builds with the C compiler


def new_compile_stats():
    """What Triton's compile() cost in this run: calls (cache hits included), wall time, this
    process's CPU time and its children's (ptxas and other tools Triton runs), in ms."""
    return {"count": 0, "ms": 0, "cpu_ms": 0, "child_cpu_ms": 0}


def _timed_compile(compile_fn, state, what="compile"):
    def timed(*args, **kwargs):
        t0, c0, k0 = time.monotonic(), time.process_time(), os.times()
        try:
            return compile_fn(*args, **kwargs)
        finally:
            k1 = os.times()
            st = getattr(state, what)
            st["count"] += 1
            st["ms"] += int((time.monotonic() - t0) * 1000)
            st["cpu_ms"] += int((time.process_time() - c0) * 1000)
            st["child_cpu_ms"] += int(((k1.children_user - k0.children_user) +
                                       (k1.children_system - k0.children_system)) * 1000)
    timed._kforge_timed = True
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


def install_triton_hooks(state):
    """Patches Triton's JIT launch path and autotuner. No effect if triton is not importable."""
    try:
        import triton  # noqa: F401
        from triton.runtime import jit as jit_mod
    except Exception:
        return
    state.available = True
    state.version = getattr(triton, "__version__", None)
    JITFunction = jit_mod.JITFunction
    if getattr(JITFunction, "_kforge_patched", False):
        return
    orig_init = JITFunction.__init__
    orig_run = JITFunction.run

    def init(self, fn, *args, **kwargs):
        orig_init(self, fn, *args, **kwargs)
        try:
            compile_fn = getattr(self, "compile", None)
            if callable(compile_fn) and not getattr(compile_fn, "_kforge_timed", False):
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
            name = getattr(self.fn, "__qualname__", "?")
            state.launches[name] = state.launches.get(name, 0) + 1
            if state.mutant:
                return None  # the launch is skipped: a test that still passes checks nothing
        return orig_run(self, *args, **kwargs)

    orig_getitem = JITFunction.__getitem__

    def getitem(self, grid):
        # Newer Triton can hand out a native proxy that skips run() on cache hits; the sample's
        # own kernels always go through run() here, so every launch is counted (and skippable).
        if _code_file(self.fn) == state.script_path:
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)
        return orig_getitem(self, grid)

    # Newer Triton (3.x) sets `self.compile` again when it builds a kernel's binder, from
    # `triton.compiler.compile`, replacing the per-instance wrapper above: the module's own
    # function is wrapped as well (the guard keeps a call from being counted twice).
    wrapped = {}
    for modname in ("triton.compiler", "triton.compiler.compiler", "triton"):
        try:
            mod = importlib.import_module(modname)
            compile_fn = getattr(mod, "compile", None)
            if callable(compile_fn) and not getattr(compile_fn, "_kforge_timed", False):
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
        if callable(build) and not getattr(build, "_kforge_timed", False):
            nv_driver.compile_module_from_src = _timed_compile(build, state, "launcher")
    except Exception:
        pass
    JITFunction.__init__ = init
    JITFunction.run = run
    JITFunction.__getitem__ = getitem
    JITFunction._kforge_patched = True
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
        chosen = getattr(self, "_kforge_chosen", None)
        if chosen is None:
            chosen = self._kforge_chosen = {}
        if key is not None and key in chosen:
            config = chosen[key]
            if getattr(config, "pre_hook", None) is not None:
                config.pre_hook({**all_args, **config.all_kwargs()})
            ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
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
                ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
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

    Autotuner.run = run


def install_shims(state, script):
    """Compatibility shims for APIs removed from Triton, applied only when the script uses them."""
    try:
        import triton
    except Exception:
        return
    testing = getattr(triton, "testing", None)
    if testing is None:
        try:
            testing = importlib.import_module("triton.testing")
        except Exception:
            testing = None
    if testing is not None and "assert_almost_equal" in script and \
            not hasattr(testing, "assert_almost_equal"):

        def assert_almost_equal(x, y, decimal=2, err_msg=""):
            def as_list(v):
                if hasattr(v, "detach"):
                    v = v.detach().float().cpu()
                    try:
                        return v.numpy()
                    except Exception:
                        return v.tolist()
                return v
            try:
                import numpy as np
                np.testing.assert_array_almost_equal(as_list(x), as_list(y), decimal=decimal,
                                                     err_msg=err_msg)
            except ImportError:
                a, b = as_list(x), as_list(y)
                flat = lambda v: [t for s in v for t in flat(s)] if isinstance(v, list) else [v]
                for p, q in zip(flat(a), flat(b)):
                    if abs(p - q) >= 1.5 * 10 ** (-decimal):
                        raise AssertionError(err_msg or "arrays are not almost equal")

        testing.assert_almost_equal = assert_almost_equal
        state.shims.append("triton.testing.assert_almost_equal")
    try:
        import triton.language as tl
    except Exception:
        tl = None
    if tl is not None and "libdevice" in script and not hasattr(tl, "libdevice"):
        for mod in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                    "triton.language.math"):
            try:
                tl.libdevice = importlib.import_module(mod)
                state.shims.append("triton.language.libdevice -> " + mod)
                break
            except Exception:
                continue


# ----------------------------------------------------------------------------------------------
# Sandbox
# ----------------------------------------------------------------------------------------------

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (generic syscall table)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _errmsg(what):
    e = ctypes.get_errno()
    return "%s: %s" % (what, os.strerror(e))


def _mount(src, target, fstype, flags, data):
    r = libc().mount(src.encode() if src else None, target.encode(),
                     fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                     data.encode() if data else None)
    if r != 0:
        raise OSError(ctypes.get_errno(), _errmsg("mount %s" % target))


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path, flags, attr_set, attr_clr):
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    r = libc().syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD),
                       ctypes.c_char_p(path.encode()), ctypes.c_uint(flags),
                       ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if r != 0:
        raise OSError(ctypes.get_errno(), _errmsg("mount_setattr %s" % path))


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """Clears every capability (those a user namespace grants included) and forbids gaining any
    back through execve: the sample cannot undo its mounts."""
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), _errmsg("prctl(PR_SET_NO_NEW_PRIVS)"))
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc().capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), _errmsg("capset"))


# The sandbox in one place. What a sample can and cannot reach is described in docs/VERIFIER.md
# ("Threat model"); the pool (libs/verify/src/sandbox.cpp) builds the spec read here.
#
# With "pid_namespace" (the default) the process that called apply_sandbox (the keeper, in the
# worker's PID namespace) unshares the namespaces, starts an init (PID 1 of the new PID
# namespace: it only reaps; kforge-sandbox-init through posix_spawn, or a fork of this process
# with verifier.sandbox_init "fork") and forks the sample's process (PID 2), which returns from
# apply_sandbox and runs the sample. The keeper closes every descriptor, waits for the sample's process, then
# kills the init, which ends every process left in the namespace, and ends the way the sample's
# process ended (same exit code or signal), so the worker and the pool see the sample's status.
# Nothing in the namespace can see, signal or trace a process outside it.


def _close_all_but_devnull():
    fd = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        if fd != target:
            os.dup2(fd, target)
    os.closerange(3, 1 << 20)


def _init_main():
    """PID 1 of a sample's namespace: reaps orphans until the keeper kills it. Signals from
    inside the namespace cannot end it (the kernel ignores those without a handler)."""
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no ptrace, /proc/1/* not readable
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        _close_all_but_devnull()
        if os.getppid() == 1:  # the keeper died before the death signal was armed
            os._exit(0)
        while True:
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
            signal.sigwait({signal.SIGCHLD})
    finally:
        os._exit(0)


def _keeper_main(init_pid, sample_pid):
    """Outside the namespace: waits for the sample's process, ends the namespace, and ends as the
    sample's process ended."""
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _close_all_but_devnull()
        while True:
            try:
                _, status = os.waitpid(sample_pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break
        # Waited for: the init ends after every process of its namespace has, and an init left
        # to the host's PID 1 might never be reaped (in a container).
        try:
            os.kill(init_pid, signal.SIGKILL)
            os.waitpid(init_pid, 0)
        except OSError:
            pass
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125)
    finally:
        os._exit(125)


def _spawn_init(path):
    """The namespace's init as the small program kforge-sandbox-init, started with posix_spawn
    (a vfork-like clone: nothing of this process is copied), stdin/out/err on /dev/null. The
    first process made after unshare(CLONE_NEWPID) is the namespace's PID 1 whether or not its
    exec works, and once it is gone the namespace takes no other process: a failure here is final
    (the path is checked first)."""
    return os.posix_spawn(path, [path], {}, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_DUP2, 0, 2)])


def _enter_pid_namespace(init_path=None):
    """After unshare(CLONE_NEWPID): starts the namespace's init (init_path, else a fork of this
    process) and forks the sample's process. Returns, only in the sample's process, how the init
    was made ("spawn" or "fork")."""
    _flush_std()
    how = "fork"
    if init_path and os.access(init_path, os.X_OK):
        init_pid = _spawn_init(init_path)
        how = "spawn"
    else:
        init_pid = os.fork()
        if init_pid == 0:
            _init_main()
    sample_pid = os.fork()
    if sample_pid == 0:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != 0:  # the keeper (outside the namespace) is already gone
            os._exit(111)
        return how
    _keeper_main(init_pid, sample_pid)


def _passwd_files(directory, uid, gid, name):
    """passwd and group files that name the sample's uid and gid (home: its directory), written
    into its directory; bound over /etc/passwd and /etc/group."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().splitlines()
        except OSError:
            return []
    passwd = [line for line in read("/etc/passwd")
              if len(line.split(":")) < 3 or line.split(":")[2] != str(uid)]
    passwd.insert(0, "%s:x:%d:%d:kforge sample:%s:/bin/sh" % (name, uid, gid, directory))
    group = read("/etc/group")
    if not any(len(line.split(":")) > 2 and line.split(":")[2] == str(gid) for line in group):
        group.insert(0, "%s:x:%d:" % (name, gid))
    etc = os.path.join(directory, ".kforge-etc")
    os.makedirs(etc, exist_ok=True)
    out = {}
    for base, lines in (("passwd", passwd), ("group", group)):
        path = os.path.join(etc, base)
        _write(path, "\n".join(lines) + "\n")
        os.chmod(path, 0o644)
        out[base] = path
    return out


def _hide(path, sb):
    """Makes a path of the daemon's (database, configuration, state directory) unreadable and
    unwritable in the sample's mount namespace: an empty read-only tmpfs over a directory,
    /dev/null (read-only) over a file."""
    try:
        st = os.stat(path)
    except OSError:
        return  # nothing there to hide
    import stat as stat_mod
    try:
        if stat_mod.S_ISDIR(st.st_mode):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                   "size=4k,mode=0500")
        else:
            _mount("/dev/null", path, None, MS_BIND, None)
            _mount_setattr(path, 0, MOUNT_ATTR_RDONLY, 0)
    except OSError as e:
        # Gone since the stat (SQLite removes its -wal and -shm when the last connection
        # closes): as if it had not been there. Anything else must hold.
        if e.errno == errno.ENOENT and not os.path.lexists(path):
            return
        raise
    sb.setdefault("hidden", []).append(path)


def apply_sandbox(spec, report):
    """Confines the calling process (a fresh child). Fills report["sandbox"]. Never raises for a
    layer the kernel refuses, except those that must hold: the PID namespace (when asked for),
    the user namespace as non-root with a PID namespace, the uid drop, hiding the daemon's
    files."""
    sb = report.setdefault("sandbox", {})
    directory = spec["dir"]
    uid = spec.get("uid")
    gid = spec.get("gid")
    is_root = os.geteuid() == 0
    drop = is_root and uid is not None
    pidns = bool(spec.get("pid_namespace"))
    if spec.get("cgroup"):
        try:
            _write(os.path.join(spec["cgroup"], "cgroup.procs"), str(os.getpid()))
            sb["memory"] = "cgroup"
        except OSError as e:
            sb["memory"] = "cgroup join failed: %s" % e
    my_uid, my_gid = os.getuid(), os.getgid()
    # Namespaces: network (nothing to reach), mount (read-only view of the host), PID (sees only
    # its own processes), and as non-root a user namespace that maps the pool's uid to itself.
    flags = CLONE_NEWNET | CLONE_NEWNS | (CLONE_NEWPID if pidns else 0)
    userns = False
    if not is_root:
        flags |= CLONE_NEWUSER
    r = libc().unshare(ctypes.c_int(flags))
    if r != 0:
        err = _errmsg("unshare")
        if pidns:
            raise OSError(ctypes.get_errno(), "%s (a PID namespace%s is required)"
                          % (err, "" if is_root else " in a user namespace"))
        if not is_root and libc().unshare(ctypes.c_int(CLONE_NEWNET | CLONE_NEWNS)) == 0:
            r = 0
        else:
            sb["network"] = "not isolated (%s)" % err
            sb["filesystem"] = "not isolated (%s)" % err
    elif not is_root:
        userns = True
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", "%d %d 1" % (my_uid, my_uid))
            _write("/proc/self/gid_map", "%d %d 1" % (my_gid, my_gid))
        except OSError as e:
            if pidns:
                raise
            sb["userns"] = "map failed: %s" % e
    if pidns:
        # From here on: PID 2 of the sample's namespace.
        sb["init"] = _enter_pid_namespace(spec.get("init"))
        sb["pid_namespace"] = True
        sb["pid"] = os.getpid()
    owner = uid if drop else my_uid
    group = gid if drop and gid is not None else my_gid
    if r == 0:
        sb["network"] = "isolated"
        sb["userns"] = userns
        try:
            _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
            try:
                _mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)
                sb["filesystem"] = "read-only except the sample directory"
            except OSError as e:
                sb["filesystem"] = "not read-only (%s)" % e
            if pidns:
                # A /proc of the sample's own PID namespace. The CUDA driver writes under /proc
                # while it initialises (seen on an H200: with /proc read-only cudaGetDeviceCount
                # fails with error 304), so it is writable; /proc/sys stays read-only.
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
                sb["proc"] = "private"
            else:
                try:
                    _mount_setattr("/proc", 0, 0, MOUNT_ATTR_RDONLY)
                except OSError as e:
                    sb["proc"] = "read-only (%s): CUDA may fail to initialise" % e
            try:
                if os.path.isdir("/proc/sys"):
                    _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC, None)
                    _mount_setattr("/proc/sys", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)
            except OSError as e:
                sb["proc_sys"] = "writable (%s)" % e
            cap = spec.get("disk_cap_mb") or 0
            if cap > 0:
                _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV,
                       "size=%dm,mode=0700,uid=%d,gid=%d" % (cap, owner, group))
                sb["disk"] = "tmpfs %d MiB" % cap
            else:
                _mount(directory, directory, None, MS_BIND | MS_REC, None)
                _mount_setattr(directory, AT_RECURSIVE, 0, MOUNT_ATTR_RDONLY)
            if os.path.isdir("/dev/shm"):
                try:
                    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                           "size=%dm,mode=1777" % max(16, min(cap or 256, 1024)))
                except OSError:
                    pass
            for w in spec.get("writable", []):
                if w and os.path.isdir(w):
                    _mount(w, w, None, MS_BIND | MS_REC, None)
                    try:
                        _mount_setattr(w, AT_RECURSIVE, 0, MOUNT_ATTR_RDONLY)
                    except OSError:
                        pass
        except OSError as e:
            if pidns:
                raise
            sb["filesystem"] = "not isolated (%s)" % e
        # Must hold: the daemon's own files.
        for path in spec.get("hide", []):
            if path:
                _hide(path, sb)
        # A name for the sample's uid (torch._inductor, getpass and optimizers look it up).
        name = spec.get("user") or "kforge-sample"
        try:
            files = _passwd_files(directory, owner, group, name)
            for base, path in files.items():
                target = "/etc/" + base
                if os.path.exists(target):
                    _mount(path, target, None, MS_BIND, None)
                    _mount_setattr(target, 0, MOUNT_ATTR_RDONLY, 0)
            if drop:
                for path in files.values():
                    os.chown(path, 0, 0)
            sb["user"] = name
        except OSError as e:
            sb["user"] = "no passwd entry (%s)" % e
    elif spec.get("hide"):
        if not is_root:  # nothing else keeps the daemon's files from the sample
            raise OSError(errno.EPERM, "cannot hide the daemon's files: no mount namespace")
        sb["hidden"] = "not hidden (no mount namespace)"
    if drop:
        groups = [g for g in spec.get("groups", []) if isinstance(g, int)]
        os.setgroups(groups)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        sb["uid"] = uid
        stdlib = os.path.dirname(os.__file__)
        if not os.access(stdlib, os.R_OK | os.X_OK):
            raise PermissionError(
                "the Python installation (%s) is not readable by the sandbox uid %d: use a Python "
                "readable by all users (verifier.python) or sandbox_uid_base: 0" % (stdlib, uid))
    else:
        sb["uid"] = os.getuid()
        if is_root:
            sb["uid_note"] = "running as root: no separate uid"
        elif userns:
            _drop_capabilities()
            sb["capabilities"] = "none"
    limits = [("nproc", resource.RLIMIT_NPROC, spec.get("max_processes")),
              ("nofile", resource.RLIMIT_NOFILE, spec.get("max_open_files")),
              ("fsize", resource.RLIMIT_FSIZE, (spec.get("file_size_cap_mb") or 0) * 1048576),
              ("core", resource.RLIMIT_CORE, 0),
              ("as", resource.RLIMIT_AS, (spec.get("address_space_cap_mb") or 0) * 1048576)]
    applied = {}
    for name, res, value in limits:
        if value is None or (value == 0 and name != "core"):
            continue
        try:
            resource.setrlimit(res, (value, value))
            applied[name] = value
        except (ValueError, OSError) as e:
            applied[name] = "failed: %s" % e
    sb["rlimits"] = applied
    if is_root and not drop:
        sb["nproc_note"] = "root: RLIMIT_NPROC is not enforced"
    # Die with the parent. Set after the uid change, which clears it. In a PID namespace the
    # parent (the keeper) is outside it: getppid() says 0 while it lives.
    parent = os.getppid()
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(111)
    os.umask(0o002)
    os.chdir(directory)
    os.environ["HOME"] = directory
    os.environ["TMPDIR"] = directory
    if "user" in sb and not sb["user"].startswith("no passwd"):
        os.environ["USER"] = sb["user"]
        os.environ["LOGNAME"] = sb["user"]


# ----------------------------------------------------------------------------------------------
# Running one sample
# ----------------------------------------------------------------------------------------------


def _tail(text, limit=MAX_MESSAGE):
    return text if len(text) <= limit else "..." + text[-limit:]


def describe_exception(e, tb, info):
    lines = traceback.format_exception(type(e), e, tb)
    tb_text = "".join(lines).splitlines()
    where = None
    for frame in reversed(traceback.extract_tb(tb)):
        if frame.filename.endswith("kforge_sample.py"):
            section, line = section_of(info, frame.lineno)
            where = {"section": section, "line": line, "function": frame.name}
            break
    msg = str(e)
    return {"exception": type(e).__name__, "message": msg[:MAX_MESSAGE],
            "traceback": "\n".join(tb_text[-TRACEBACK_LINES:])[-8000:], "where": where}


def _cuda_sync():
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except AttributeError:
        pass


def _status_for(exc):
    return "failed" if isinstance(exc, AssertionError) else "error"


def run_sample(request, report):
    """Assembles, checks and runs the sample. Fills report; never raises. Returns what a mutant
    run of the same sample needs (None when the sample did not get as far as its tests)."""
    t0 = time.monotonic()
    code = request.get("code")
    wrapper = request.get("kernel_wrapper")
    test = request.get("unitest_code")
    present = {mod: module_available(mod) for mod, _ in PREAMBLE_MODULES}
    report["modules"] = {m: v for m, v in present.items()}
    try:
        script, info = assemble(code, wrapper, test, present)
    except SyntaxError as e:
        report.update(verdict="invalid", phase="parse",
                      detail="syntax error in %s line %s: %s" % (
                          getattr(e, "kforge_section", "code"), e.lineno, e.msg))
        return None
    report["script"] = script
    report["code_kernels"] = code_kernels(code)
    report["removed"] = info["removed"]
    report["sections"] = info["sections"]
    try:
        tree = ast.parse(script)
    except SyntaxError as e:
        section, line = section_of(info, e.lineno)
        report.update(verdict="invalid", phase="parse",
                      detail="syntax error in %s line %s: %s" % (section, line, e.msg))
        return None
    tests, called = find_tests(tree)
    if not tests:
        report.update(verdict="invalid", phase="parse", detail="no test function (def test_...)")
        return None
    path = os.path.join(os.getcwd(), "kforge_sample.py")
    with open(path, "w") as f:
        f.write(script)
    state = TritonState(path, bool(request.get("mutant")), request.get("autotune", "single"))
    install_triton_hooks(state)
    install_shims(state, script)
    fraction = request.get("gpu_memory_fraction") or 0
    torch = sys.modules.get("torch")
    if fraction > 0 and torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.set_per_process_memory_fraction(float(fraction))
                report["gpu_memory_fraction"] = fraction
        except Exception as e:
            report["gpu_memory_fraction"] = "failed: %s" % e
    sys.path.insert(0, os.getcwd())
    sample = {"path": path, "info": info, "tests": tests, "called": called, "state": state}
    execute(sample, "kforge_sample", report, t0)
    return sample


def execute(sample, module_name, report, t0):
    """Imports the written script as module_name and runs its tests; fills report."""
    state, info, tests, called = sample["state"], sample["info"], sample["tests"], sample["called"]
    results = []
    report["tests"] = results
    report["phase"] = "import"
    spec = importlib.util.spec_from_file_location(module_name, sample["path"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    me = os.getpid()
    t_import = time.monotonic()
    try:
        try:
            spec.loader.exec_module(module)
            _cuda_sync()
        finally:
            if os.getpid() != me:
                os._exit(0)  # a process the sample forked must not report
    except BaseException as e:  # noqa: B902 - SystemExit and KeyboardInterrupt included
        d = describe_exception(e, e.__traceback__, info)
        d.update(name="<import>", status=_status_for(e),
                 duration_ms=int((time.monotonic() - t_import) * 1000))
        results.append(d)
        missing = _missing_environment_module(e, report)
        if missing:
            report["environment"] = ("the verifier's Python has no module '%s' (%s)"
                                     % (missing, sys.executable))
        _finish(report, state, tests, t0)
        return
    import_ms = int((time.monotonic() - t_import) * 1000)
    report["import_ms"] = import_ms
    report["phase"] = "tests"
    for name in tests:
        fn = getattr(module, name, None)
        if name in called:
            results.append({"name": name, "status": "passed", "ran_at_import": True,
                            "duration_ms": import_ms})
            continue
        if not callable(fn):
            continue
        cases = test_cases(fn)
        if cases is None:
            results.append({"name": name, "status": "skipped",
                            "note": "takes arguments that nothing provides"})
            continue
        for suffix, kwargs in cases:
            results.append(run_test(name + suffix, fn, kwargs, me, info))
    _finish(report, state, tests, t0)


def wants_mutant_run(report):
    """A passing sample that launched kernels of its own code gets the mutant run (the pool
    applies the same rule when it runs the mutant in a new process)."""
    t = report.get("triton") or {}
    launched = sum(v for v in (t.get("launches") or {}).values() if isinstance(v, int))
    return report.get("verdict") == "passed" and bool(t.get("kernels")) and launched > 0


def poison_gpu_cache():
    """Fills the GPU memory the caching allocator holds free with 0xFF bytes (NaN for floats, -1
    for integers) and returns how many bytes it filled. Without this, a mutant run in the same
    process could be handed, by torch.empty, the very block in which the real run's kernel left
    the right answer, and a sound test would look vacuous."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    try:
        if not torch.cuda.is_initialized():
            return 0
    except AttributeError:
        return 0
    import gc
    gc.collect()
    torch.cuda.synchronize()
    sizes = []
    for seg in torch.cuda.memory_snapshot():
        for b in seg.get("blocks", []):
            if b.get("state") == "inactive" and b.get("size", 0) > 0:
                sizes.append((b["size"], seg.get("device", 0)))
    held, filled = [], 0
    for size, device in sorted(sizes, reverse=True):
        try:
            t = torch.empty(size, dtype=torch.uint8, device="cuda:%d" % device)
        except RuntimeError:
            break
        t.fill_(0xFF)
        held.append(t)
        filled += size
    torch.cuda.synchronize()
    del held
    return filled


def run_mutant(sample, report):
    """The mutant run in the same process: the script imported again as a new module (new kernel
    and autotuner objects), its tests run with the launches of its own kernels skipped, on GPU
    memory the real run can no longer leak into. Fills report like run_sample does."""
    t0 = time.monotonic()
    state = sample["state"]
    sys.modules.pop("kforge_sample", None)
    state.mutant = True
    state.launches = {}
    state.autotune_used = []
    state.compile = new_compile_stats()
    state.launcher = new_compile_stats()
    try:
        report["poisoned_bytes"] = poison_gpu_cache()
    except Exception as e:  # noqa: BLE001 - the run still means something without it
        report["poisoned_bytes"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.write("\n---- kforge: mutant run (kernel launches skipped) ----\n")
            stream.flush()
        except Exception:
            pass
    execute(sample, "kforge_sample_mutant", report, t0)


def test_cases(fn):
    """[(suffix, kwargs)] for a test function: one call without arguments, or one per
    combination of its pytest.mark.parametrize marks; None when it needs arguments nothing
    provides."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [("", {})]
    required = [p.name for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not required:
        return [("", {})]
    combos = [{}]
    for mark in getattr(fn, "pytestmark", []) or []:
        if getattr(mark, "name", None) != "parametrize" or len(mark.args) < 2:
            continue
        names, values = mark.args[0], list(mark.args[1])
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        rows = []
        for v in values:
            v = getattr(v, "values", v)  # pytest.param(...)
            if len(names) == 1 and not (isinstance(v, (tuple, list)) and len(v) == 1):
                v = (v,)
            rows.append(dict(zip(names, v)))
        combos = [{**c, **r} for c in combos for r in rows]
    if any(not all(n in c for n in required) for c in combos):
        return None
    if len(combos) == 1:
        return [("", combos[0])]
    return [("[%d]" % i, c) for i, c in enumerate(combos)]


def run_test(name, fn, kwargs, me, info):
    t1 = time.monotonic()
    entry = {"name": name}
    try:
        try:
            ret = fn(**kwargs)
            if inspect.iscoroutine(ret):
                import asyncio
                asyncio.run(ret)
            _cuda_sync()
            entry["status"] = "passed"
        finally:
            if os.getpid() != me:
                os._exit(0)  # a process the sample forked must not report
    except BaseException as e:  # noqa: B902 - SystemExit and KeyboardInterrupt included
        entry.update(describe_exception(e, e.__traceback__, info))
        entry["status"] = _status_for(e)
    entry["duration_ms"] = int((time.monotonic() - t1) * 1000)
    return entry


def _missing_environment_module(exc, report):
    """The module a sample could not import when it is one every sample may assume (torch,
    triton, numpy) and the verifier's Python lacks it: the verdict then says nothing about the
    sample, only that this machine cannot run it. None otherwise."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    if top in {m.split(".")[0] for m, _ in PREAMBLE_MODULES} and \
            not report.get("modules", {}).get(top, False):
        return top
    return None


def _finish(report, state, tests, t0):
    results = report.get("tests", [])
    bad = [r for r in results if r.get("status") not in ("passed", "skipped")]
    ran = [r for r in results if r.get("status") != "skipped"]
    if bad:
        first = bad[0]
        report["verdict"] = first["status"]
        where = first.get("where") or {}
        loc = ""
        if where.get("section"):
            loc = " (%s line %s)" % (where["section"], where.get("line"))
        msg = first.get("message", "")
        if first["status"] == "failed":
            report["detail"] = "%s: AssertionError%s%s" % (
                first["name"], (": " + msg.splitlines()[0][:500]) if msg else "", loc)
        else:
            report["detail"] = "%s: %s%s%s" % (
                first["name"], first.get("exception"),
                (": " + msg.splitlines()[0][:500]) if msg.strip() else "", loc)
    elif not ran:
        report["verdict"] = "invalid"
        report["detail"] = "no test function could run (all take arguments nothing provides)"
    else:
        report["verdict"] = "passed"
        report["detail"] = "%d test%s passed" % (len(ran), "" if len(ran) == 1 else "s")
    report["triton"] = {"available": state.available, "version": state.version,
                        "kernels": list(state.kernels), "launches": dict(state.launches),
                        "autotune": state.autotune, "autotune_used": list(state.autotune_used),
                        "mutant": state.mutant, "compile": dict(state.compile),
                        "launcher": dict(state.launcher)}
    report["shims"] = list(state.shims)
    report["duration_ms"] = int((time.monotonic() - t0) * 1000)
    report["phase"] = "done"


def write_report(fd, report):
    data = (json.dumps(report, default=str) + "\n").encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return
        view = view[n:]


def put_first_on_path(paths):
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)


def _bad_request(report, result_fd, e):
    report.update(verdict="error", phase="request", detail="cannot read request: %s" % e)
    write_report(result_fd, report)
    os._exit(2)


def _read_json(path, report, result_fd):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        _bad_request(report, result_fd, e)


def _sandbox(spec, report, result_fd):
    try:
        apply_sandbox(spec, report)
    except Exception as e:
        report.update(verdict="error", phase="sandbox", detail="sandbox setup failed: %s" % e)
        write_report(result_fd, report)
        os._exit(3)
    faulthandler.enable(file=sys.stderr, all_threads=False)


def child_main(request_path, result_fd):
    """In a fresh child: sandbox, run, report. Exits the process."""
    report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
    request = _read_json(request_path, report, result_fd)
    _sandbox(request["sandbox"], report, result_fd)
    run_and_report(request, report, result_fd)


def warm_up_gpu():
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


def precompute_triton_key():
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


def _read_all(fd):
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk


def prestarted_main(prep_path, result_fd, go_fd):
    """A child started ahead of its sample: sandbox, CUDA context, then it waits. The pool writes
    the request (JSON) to go_fd and closes it; EOF with nothing written means: not needed, exit.
    The sample's deadline starts when the pool sends it, so the warm-up is off its clock."""
    report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
    prep = _read_json(prep_path, report, result_fd)
    _sandbox(prep["sandbox"], report, result_fd)
    put_first_on_path(prep.get("python_path", []))
    warm = warm_up_gpu() if prep.get("gpu") else {"gpu": "not asked"}
    t_wait = time.monotonic()
    data = _read_all(go_fd)
    os.close(go_fd)
    if not data.strip():
        os._exit(0)
    warm["waited_ms"] = int((time.monotonic() - t_wait) * 1000)
    report["prestart"] = warm
    try:
        request = json.loads(data.decode("utf-8"))
    except ValueError as e:
        _bad_request(report, result_fd, e)
    run_and_report(request, report, result_fd)


def run_and_report(request, report, result_fd):
    """Runs the sample in this (sandboxed) process, writes its report(s), exits."""
    put_first_on_path(request.get("python_path", []))
    if request.get("fresh"):
        preload(request.get("preload", []))
    sample = None
    try:
        sample = run_sample(request, report)
    except BaseException as e:  # noqa: B902 - a bug here must still produce a report
        report.update(verdict="error", phase="harness",
                      detail="harness error: %s: %s" % (type(e).__name__, e),
                      traceback=traceback.format_exc()[-4000:])
    mutant = request.get("mutant_run") == "same_process" and sample is not None and \
        wants_mutant_run(report)
    report["mutant_phase"] = mutant
    _flush_std()
    # The real run's report goes out first: whatever the mutant run does (hang, crash), the
    # verdict of the real run stands.
    write_report(result_fd, report)
    if mutant:
        second = {"harness": HARNESS_VERSION, "pid": os.getpid(), "mutant_run": True}
        try:
            run_mutant(sample, second)
        except BaseException as e:  # noqa: B902
            second.update(verdict="error", phase="harness",
                          detail="harness error: %s: %s" % (type(e).__name__, e),
                          traceback=traceback.format_exc()[-4000:])
        _flush_std()
        write_report(result_fd, second)
    os._exit(0)


def _flush_std():
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass


def preload(modules):
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


# ----------------------------------------------------------------------------------------------
# Worker
# ----------------------------------------------------------------------------------------------


def _send(sock, obj):
    sock.send(json.dumps(obj).encode())


def gpu_probe():
    """Forks a child that touches the GPU (the worker itself must not initialise CUDA)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"ok": True, "note": "torch not loaded; no GPU probe"}
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
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
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
            # Nothing else of the worker's stays open in the sample: not the control socket,
            # and not the pidfds of its siblings (with one, a sample could signal another).
            import fcntl
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000 + i) for i, fd in enumerate(fds[2:])]
            os.closerange(3, 1000)
            keep = [os.dup(fd) for fd in high]
            for fd in high:
                os.close(fd)
            os.closerange(3 + len(keep), 1 << 20)
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


def worker_main(args):
    sock = socket.socket(fileno=args.control_fd)
    put_first_on_path(args.python_path)
    modules = preload(args.preload)
    probe = gpu_probe() if args.probe_gpu else {"ok": True, "note": "not asked"}
    ready = {"event": "ready", "pid": os.getpid(), "modules": modules, "probe": probe,
             "python": sys.version.split()[0], "harness": HARNESS_VERSION}
    key = precompute_triton_key()
    if key is not None:
        ready["triton_key"] = key
    _send(sock, ready)
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
        _send(sock, {"event": "finished", "id": rid, "status": status,
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
            try:
                req = json.loads(msg.decode())
            except ValueError:
                req = {}
            op = req.get("op")
            if op == "exit":
                return 0
            if op == "run" and len(fds) == 3:
                path = req["request"]
                pid = _fork_child(fds, lambda res: child_main(path, res))
            elif op == "prepare" and len(fds) == 4:
                path = req["prep"]
                pid = _fork_child(fds, lambda res, go: prestarted_main(path, res, go))
            else:
                for fd in fds:
                    os.close(fd)
                continue
            pfd = None
            if pidfd_open:
                try:
                    pfd = pidfd_open(pid)
                    sel.register(pfd, selectors.EVENT_READ, pid)
                except OSError:
                    pfd = None
            children[pid] = (req.get("id"), time.monotonic(), pfd)
            _send(sock, {"event": "started", "id": req.get("id"), "pid": pid})
        for pid in [p for p, v in children.items() if v[2] is None]:
            reap(pid)  # no pidfd for it (or none at all here): polled


def fresh_main(args):
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (the pool made it one)
    child_main(args.request, args.result_fd)


def assemble_main(args):
    with open(args.request) as f:
        req = json.load(f)
    present = {mod: module_available(mod) for mod, _ in PREAMBLE_MODULES}
    script, _ = assemble(req["code"], req["kernel_wrapper"], req["unitest_code"], present)
    sys.stdout.write(script)
    return 0


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog="kforge_harness")
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--control-fd", type=int, required=True)
    w.add_argument("--preload", type=lambda s: [m for m in s.split(",") if m], default=[])
    w.add_argument("--python-path", type=lambda s: [m for m in s.split(os.pathsep) if m],
                   default=[])
    w.add_argument("--probe-gpu", action="store_true")
    f = sub.add_parser("fresh")
    f.add_argument("--request", required=True)
    f.add_argument("--result-fd", type=int, required=True)
    a = sub.add_parser("assemble")
    a.add_argument("--request", required=True)
    i = sub.add_parser("info")
    i.add_argument("--cuda", action="store_true", help="also import torch and ask for a GPU")
    args = p.parse_args(argv)
    if args.cmd == "info":
        out = {"executable": sys.executable, "version": sys.version.split()[0],
               "harness": HARNESS_VERSION,
               "modules": {m: module_available(m) for m, _ in PREAMBLE_MODULES}}
        if args.cuda:
            out["triton"] = module_available("triton")
            try:
                import torch
                out["cuda"] = bool(torch.cuda.is_available())
                if out["cuda"]:
                    out["device"] = torch.cuda.get_device_name(0)
            except Exception as e:  # noqa: BLE001
                out["cuda"] = False
                out["error"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(out))
        return 0
    if args.cmd == "worker":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return worker_main(args)
    if args.cmd == "fresh":
        return fresh_main(args)
    return assemble_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
