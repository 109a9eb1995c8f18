"""The kernel-battery phase: the real run's tests against kernels made wrong
(kernel_mutants.run_kernel_battery: each mutant compiled, replayed against the original, run)."""

from __future__ import annotations

from typing import Any

from ..kernel_mutants import run_kernel_battery
from ..mutants import run_tests
from .sequence import Report


def run(sample: dict[str, Any], count: int, budget_s: float) -> Report:
    """report["kernel_battery"]."""
    part: Report = {}
    run_kernel_battery(sample, part, count, budget_s, run_tests)
    return part


def broken(why: str) -> Report:
    return {"kernel_battery": {"mutants": [], "stopped": why, "error": why}}
