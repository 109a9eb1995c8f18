"""ASTSource, compile() and CompiledKernel, shaped like Triton 3.x's (python/triton/compiler/
compiler.py): compile(src, target, options) runs the backend's stages in order."""
import inspect
import os
import time


class ASTSource:
    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        self.ext = "ttir"
        self.name = fn.__name__
        self.signature = signature
        self.constants = {}
        for k, v in (constexprs or {}).items():
            k = (fn.arg_names.index(k),) if isinstance(k, str) else k
            assert isinstance(k, tuple)
            self.constants[k] = v
        self.attrs = attrs or {}
        for k in self.signature:
            if not isinstance(k, str):
                raise TypeError("Signature keys must be string")


class CompiledKernel:
    def __init__(self, src, metadata, asm):
        self.src = src
        self.metadata = metadata
        self.asm = asm
        self.hash = str(id(self))


def make_backend(target):
    from ..backends import backends

    actives = [b.compiler for b in backends.values() if b.compiler.supports_target(target)]
    if len(actives) != 1:
        raise RuntimeError("%d compatible backends for target (%s)" % (len(actives),
                                                                      target.backend))
    return actives[0](target)


def _spin(seconds):
    """CPU work as long as a real compile's (KFORGE_FAKE_TRITON_COMPILE_S, for benchmarks: on a
    GPU a sample's compiles are most of its CPU, bench/verify/timing_bursts_cpu.sh)."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        sum(range(1000))


def compile(src, target=None, options=None):
    from ..runtime.cache import triton_key
    from ..runtime.jit import JITFunction

    if isinstance(src, JITFunction):
        triton_key()  # a launch's compile (the stand-in compiles nothing for its CPU run)
        _spin(float(os.environ.get("KFORGE_FAKE_TRITON_COMPILE_S") or 0))
        return src
    if not isinstance(src, ASTSource):
        raise RuntimeError("fake triton: triton.compile() is not supported with these arguments")
    triton_key()
    if target is None:
        from .. import backends as _  # noqa: F401
        from ..backends.compiler import GPUTarget

        target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = dict(options or {})
    stages = {}
    backend.add_stages(stages, options)
    # Like Triton: the source the JIT function read when it was made (its file may be gone).
    module = "".join(getattr(src.fn, "raw_src", None) or inspect.getsourcelines(src.fn.fn)[0])
    for name, stage in stages.items():
        module = stage(module, {})
    return CompiledKernel(src, dict(options, target=target), {backend.binary_ext: module})
