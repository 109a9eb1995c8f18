"""The skip-launch phase (the mutant run in the real run's process): the script imported again,
its tests run with the launches of its own kernels skipped (mutants.run_mutant), with the fresh
control run (controls.py) before or after it, by lot (mutants.skip_launch_run)."""

from __future__ import annotations

import traceback
from typing import Any

from ..controls import Controls
from ..mutants import poison_gpu_cache, skip_launch_run
from .sequence import Report, Result
from ..report_schema import VERDICT


def run(sample: dict[str, Any], controls: Controls) -> Result:
    """The skip-launch run's part of the mutant report (its verdict: passed means the tests
    did not notice); the value True: it ran. The control run goes to controls.out."""
    part: Report = {}
    skip_launch_run(sample, part, controls)
    return Result(part, True)


def fresh_control(sample: dict[str, Any], controls: Controls) -> Report:
    """In a mutant process of its own, after a skip-launch run that passed: the fresh control
    run (controls.py) the real run's process makes by lot before or after its skip-launch
    run. Its part of the report is controls.out, already in it."""
    controls.fresh(sample, "after the skip-launch run", poison_gpu_cache)
    return {}


def broken(why: str) -> Report:
    return {"verdict": VERDICT.error, "phase": "harness", "detail": why,
            "traceback": traceback.format_exc()[-4000:]}
