"""The output-mutant phase: after a skip-launch run the tests failed, the real run's tests once
per output mutant (mutants.output_battery), a control run among them. In a mutant process of its
own the real run is made again first, to find the outputs (that run is its fresh control run)."""

from __future__ import annotations

from typing import Any, Optional

from ..controls import Controls
from ..mutants import battery_due, output_battery
from .sequence import Report, Result


def run(sample: dict[str, Any], skip: Report, names: list[str], count: int,
        controls: Controls) -> Optional[Result]:
    """report["battery"] (and "real_run_again"); the value: whether the kernel battery is due
    (every output mutant killed, `count` kernel mutants asked for). None when the skip-launch
    run's report `skip` calls for no battery. A control run goes at a random place among the
    mutants (controls.py)."""
    if not battery_due(skip, names, count):
        return None
    part: Report = {}
    return Result(part, output_battery(sample, part, names, count, controls))


def broken(why: str) -> Report:
    return {"battery": {"mutants": [], "error": why}}
