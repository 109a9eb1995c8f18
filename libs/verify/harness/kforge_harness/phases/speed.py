"""The speed phase: a passing sample's kernels (and its wrapper against its declared reference)
timed for the speed label (timing.run_timing). A declared reference its wrapper disagrees with
fails the sample here."""

from __future__ import annotations

from typing import Any, Optional

from ..timing import not_timed, run_timing
from .sequence import Report


def run(sample: dict[str, Any], request: dict[str, Any]) -> Optional[Report]:
    """report["speed"] (and verdict "failed" with its detail where the reference disagrees);
    None when the label is off and the sample declares no reference."""
    part: Report = {}
    run_timing(sample, part, request)
    declared = getattr(sample.get("module"), "KFORGE_SPEED", None) is not None
    return part if part or declared else None


def broken(why: str) -> Report:
    return {"speed": not_timed(why)}
