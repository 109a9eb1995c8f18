"""The kernel-battery phase: the real run's tests against kernels made wrong
(kernel_mutants.run_kernel_battery: each mutant compiled, replayed against the original, run)."""

from __future__ import annotations

from typing import Any

from ..kernel_mutants import run_kernel_battery
from ..controls import Controls
from ..mutants import run_tests_kernel
from .sequence import Report


def run(sample: dict[str, Any], count: int, budget_s: float, controls: Controls) -> Report:
    """report["kernel_battery"], a control run at a random place among the mutants."""
    part: Report = {}
    run_kernel_battery(sample, part, count, budget_s, run_tests_kernel, controls)
    return part


def broken(why: str) -> Report:
    return {"kernel_battery": {"mutants": [], "stopped": why, "error": why}}
