"""The cross-compile phase: a passing sample's launched kernels compiled for each target of the
request, in forked children (crosscompile.cross_compile); nothing here changes the verdict."""

from __future__ import annotations

import os
from typing import Any, Optional

from .. import gpulock
from ..crosscompile import cross_compile
from ..report_schema import TARGET_RESULT
from .sequence import Report


def run(request: dict[str, Any], sample: dict[str, Any]) -> Optional[Report]:
    """report["cross_compile"]; None when the request asks for no target or the run recorded no
    specialisation."""
    targets = request.get("cross_compile") or []
    specs = sample["state"].specs
    if not targets or specs is None:
        return None
    gpulock.pause()  # CPU work in forked children: a timing sample need not wait for it
    try:
        return {"cross_compile": cross_compile(
            specs, targets, request.get("cross_compile_timeout_s") or 0, os.getcwd())}
    finally:
        gpulock.resume()


def broken_for(request: dict[str, Any]) -> Any:
    """The fallback of a broken phase: the verifier failed, not the sample; recorded like a
    missing backend for each target."""
    targets = request.get("cross_compile") or []

    def broken(why: str) -> Report:
        return {"cross_compile": {"error": why, "targets": {
            t: {"result": TARGET_RESULT.unavailable, "reason": why} for t in targets}}}
    return broken
