"""A small stand-in for Triton, for tests on machines without a GPU.

It mirrors the parts of Triton's structure that kforge's harness patches (JITFunction.run with
keyword-only grid/warmup, Autotuner with configs, prune_configs, pre_hook, base_fn and
fn.run), and runs kernels on the CPU over Python lists. It can misbehave the way the real one
does: a config whose BLOCK* meta-parameter exceeds 1024 raises OutOfResources at launch,
triton.compile fails, and triton.testing.assert_almost_equal is gone (as in Triton 3).
"""
from . import language  # noqa: F401
from . import testing  # noqa: F401
from .compiler import compile  # noqa: F401
from .runtime.autotuner import Config, autotune  # noqa: F401
from .runtime.jit import JITFunction, jit  # noqa: F401

__version__ = "0.0+kforge-fake"


def cdiv(a, b):
    return (a + b - 1) // b
