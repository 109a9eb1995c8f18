"""The test phase: the sample assembled, imported and its tests run (runner.run_sample). In a
mutant process of its own (request["mutant"]) this is the skip-launch run."""

from __future__ import annotations

import traceback
from typing import Any

from ..mutants import rerun_floor
from ..runner import run_sample
from .sequence import Report, Result
from ..report_schema import VERDICT


def run(request: dict[str, Any]) -> Result:
    """Its part of the report (verdict, detail, tests, triton, coverage, ...) and the sample,
    what the later phases need (None when it did not get as far as its tests)."""
    part: Report = {}
    sample = run_sample(request, part)
    if sample is not None:
        # Taken now, before the speed label and the other checks: what every later run of the
        # tests finds poisoned, label or not (mutants.poison_gpu_cache).
        sample["rerun_floor"] = rerun_floor()
    return Result(part, sample)


def broken(why: str) -> Report:
    return {"verdict": VERDICT.error, "phase": "harness", "detail": why,
            "traceback": traceback.format_exc()[-4000:]}
