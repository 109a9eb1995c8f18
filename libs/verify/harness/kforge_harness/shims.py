"""Compatibility shims for APIs removed from Triton, applied only when the script uses them."""

from __future__ import annotations

import importlib
from typing import Any


def install_shims(state: Any, script: str) -> None:
    """Compatibility shims for APIs removed from Triton, applied only when the script uses them."""
    try:
        import triton
    except Exception:
        return
    testing: Any = getattr(triton, "testing", None)
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

