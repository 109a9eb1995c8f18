"""The differential phase: a passing sample that declares a reference (KFORGE_SPEED), its
wrapper against the reference on transformed copies of inputs() (differential.run_differential:
scaled, negated, zeros, outliers, one shorter). A disagreement fails the sample, naming the
transform."""

from __future__ import annotations

from typing import Any, Optional

from ..differential import run_differential
from .sequence import Report


def run(sample: dict[str, Any]) -> Optional[Report]:
    """report["differential"] (and verdict "failed" with its detail at a disagreement); None
    when the sample declares no reference."""
    part: Report = {}
    return part if run_differential(sample, part) is not None else None


def broken(why: str) -> Report:
    return {"differential": {"transforms": [], "failed": None, "stopped": why}}
