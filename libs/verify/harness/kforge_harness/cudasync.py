"""How the sample's process waits for its GPU (verifier.cuda_sync; docs/VERIFIER.md, "How a
sample's process waits for the GPU").

CUDA's default (cudaDeviceScheduleAuto) spins the waiting thread in every synchronise while the
process has fewer contexts than the host has cores: always, for a sample. With one worker a core
sharing one GPU, a sample that waits for the others' time slices burns a core the samples that
compile (most of the work) could use. `spin`, `yield` and `blocking` set the scheduling flag of
each visible device's primary context before the process makes it (the prestarted child before
its warm-up, a fresh one before the sample runs): NVIDIA through the driver
(cuDevicePrimaryCtxSetFlags on libcuda.so.1, read back with cuDevicePrimaryCtxGetState: a
context already active ignores new flags on older drivers), AMD through the HIP runtime
(hipSetDeviceFlags on each device, read back with hipGetDeviceFlags). `auto` touches nothing.

apply() never raises: what it did goes in the report (report["sandbox"]["cuda_sync"]): what was
asked, whether it took, and why not. Its `library` argument names the library to load instead
of the driver's (the unit test's stand-in, tests/verify/cuda_stub); the pool never passes one.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import time
from typing import Any, Callable, Optional

from .shapes import Json

# CU_CTX_SCHED_* (cuda.h) and hipDeviceSchedule* (hip_runtime_api.h) have the same values.
FLAGS = {"spin": 1, "yield": 2, "blocking": 4}
SCHED_MASK = 0x07
SETTINGS = ("auto",) + tuple(FLAGS)
CUDA_LIBRARY = "libcuda.so.1"
HIP_LIBRARY = "libamdhip64.so"


class Refused(Exception):
    """A step of apply() that did not take: its message is the report's `why`."""


def apply(asked: Any, vendor: Any, library: Optional[str] = None) -> Json:
    """Sets the scheduling flag `asked` (one of SETTINGS) for every device this process sees,
    before it has a context: {"asked", "applied", "why" (when not applied), "devices" and
    "flags" (each device's scheduling flag read back), "ms"}. vendor: the sample's device's
    ("nvidia", "amd", "cpu"). Never raises."""
    out: Json = {"asked": asked, "applied": False}
    if asked == "auto":
        out["why"] = "auto: left to the driver"
        return out
    if asked not in FLAGS:
        out["why"] = "not one of %s" % ", ".join(SETTINGS)
        return out
    set_flags: Optional[Callable[[Any, int], list[int]]] = \
        {"nvidia": cuda_flags, "amd": hip_flags}.get(vendor)
    if set_flags is None:
        out["why"] = "the sample's device is %s, not a GPU" % vendor
        return out
    t0 = time.monotonic()
    try:
        lib = load(library or default_library(vendor))
        flags = set_flags(lib, FLAGS[asked])
    except Refused as e:
        out["why"] = str(e)
    except Exception as e:  # noqa: BLE001 - the sample runs whatever happens here
        out["why"] = "%s: %s" % (type(e).__name__, str(e)[:200])
    else:
        out["devices"] = len(flags)
        out["flags"] = flags
        out["applied"] = bool(flags) and all(f == FLAGS[asked] for f in flags)
        if not flags:
            out["why"] = "no device visible"
        elif not out["applied"]:
            out["why"] = "the driver kept another scheduling flag (a context already active?)"
    out["ms"] = int((time.monotonic() - t0) * 1000)
    return out


def load(path: str) -> Any:
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise Refused("unavailable: %s" % str(e)[:200]) from None


def default_library(vendor: str) -> str:
    """libcuda.so.1 (the driver: one per host) or the HIP runtime torch uses: the one already
    mapped into this process, else torch's own copy (a ROCm wheel ships one), else the system's.
    Flags set in another copy than torch's would be flags of another runtime."""
    if vendor != "amd":
        return CUDA_LIBRARY
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if os.path.basename(path).startswith(HIP_LIBRARY):
                    return path
    except OSError:
        pass
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    for where in (spec.submodule_search_locations or []) if spec else []:
        bundled = os.path.join(where, "lib", HIP_LIBRARY)
        if os.path.exists(bundled):
            return bundled
    return HIP_LIBRARY


def call(lib: Any, names: tuple[str, ...], *args: Any) -> tuple[int, str]:
    """The first of `names` the library exports, called with args: (its result code, its
    name)."""
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn(*args)), name
    raise Refused("%s not exported" % names[0])


def error_name(lib: Any, getter: str, code: int) -> str:
    fn = getattr(lib, getter, None)
    if fn is None:
        return str(code)
    try:
        if getter == "hipGetErrorName":
            fn.restype = ctypes.c_char_p
            name = fn(code)
        else:
            p = ctypes.c_char_p()
            name = p.value if fn(code, ctypes.byref(p)) == 0 else None
    except Exception:  # noqa: BLE001
        name = None
    return "%d (%s)" % (code, name.decode("ascii", "replace")) if name else str(code)


def cuda_flags(lib: Any, flag: int) -> list[int]:
    """cuInit, then each device's primary context flags set and read back: the scheduling flag
    of each device as the driver now holds it."""
    def check(names: tuple[str, ...], *args: Any) -> None:
        rc, name = call(lib, names, *args)
        if rc != 0:
            raise Refused("%s: %s" % (name, error_name(lib, "cuGetErrorName", rc)))
    check(("cuInit",), ctypes.c_uint(0))
    count = ctypes.c_int(0)
    check(("cuDeviceGetCount",), ctypes.byref(count))
    out = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        check(("cuDeviceGet",), ctypes.byref(dev), ctypes.c_int(i))
        got, active = ctypes.c_uint(0), ctypes.c_int(0)
        check(("cuDevicePrimaryCtxGetState",), dev, ctypes.byref(got), ctypes.byref(active))
        # The call sets every flag: the others are kept as they were. The _v2 entry point
        # (cuda.h's since CUDA 11) also sets the flags of an active context.
        check(("cuDevicePrimaryCtxSetFlags_v2", "cuDevicePrimaryCtxSetFlags"), dev,
              ctypes.c_uint((got.value & ~SCHED_MASK) | flag))
        check(("cuDevicePrimaryCtxGetState",), dev, ctypes.byref(got), ctypes.byref(active))
        out.append(got.value & SCHED_MASK)
    return out


def hip_flags(lib: Any, flag: int) -> list[int]:
    """Each device made current in turn, its flags set and read back; device 0 (the runtime's
    default) current again at the end."""
    def check(names: tuple[str, ...], *args: Any) -> None:
        rc, name = call(lib, names, *args)
        if rc != 0:
            raise Refused("%s: %s" % (name, error_name(lib, "hipGetErrorName", rc)))
    count = ctypes.c_int(0)
    check(("hipGetDeviceCount",), ctypes.byref(count))
    out = []
    for i in range(count.value):
        check(("hipSetDevice",), ctypes.c_int(i))
        got = ctypes.c_uint(0)
        check(("hipGetDeviceFlags",), ctypes.byref(got))
        check(("hipSetDeviceFlags",), ctypes.c_uint((got.value & ~SCHED_MASK) | flag))
        check(("hipGetDeviceFlags",), ctypes.byref(got))
        out.append(got.value & SCHED_MASK)
    if count.value:
        check(("hipSetDevice",), ctypes.c_int(0))
    return out
