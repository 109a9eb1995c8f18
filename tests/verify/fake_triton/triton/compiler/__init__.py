from .errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401


def compile(src, *args, **kwargs):
    """Like Triton's: takes a JIT function's source. A sample's own calls (other arguments) fail."""
    from ..runtime.cache import triton_key
    from ..runtime.jit import JITFunction

    if not isinstance(src, JITFunction):
        raise RuntimeError("fake triton: triton.compile() is not supported with these arguments")
    triton_key()  # part of every cache key, as in Triton
    return src
