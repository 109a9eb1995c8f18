"""The skip-launch phase (the mutant run in the real run's process): the script imported again,
its tests run with the launches of its own kernels skipped (mutants.run_mutant)."""

from __future__ import annotations

import traceback
from typing import Any

from ..mutants import run_mutant
from .sequence import Report, Result


def run(sample: dict[str, Any]) -> Result:
    """The skip-launch run's part of the mutant report (its verdict: passed means the tests
    did not notice); the value True: it ran."""
    part: Report = {}
    run_mutant(sample, part)
    return Result(part, True)


def broken(why: str) -> Report:
    return {"verdict": "error", "phase": "harness", "detail": why,
            "traceback": traceback.format_exc()[-4000:]}
