"""The bounds phase: a passing sample's captured launches replayed between guard zones
(bounds.check). Last before the real run's report goes out: a launch that faults here loses the
GPU context, and the mutant runs then go to a process of their own."""

from __future__ import annotations

from typing import Any, Optional

from .. import bounds
from ..gpusync import synchronize
from .sequence import PHASE_FIGURES, Report


# Why a kernel that faulted here voids every mutant run's result (report["mutants_void"]): where
# the allocator puts the buffers then decides each rerun, the controls' as much as the mutants'.
# The pool passes it on to the mutant runs' request, whose controls void every result with it.
FAULT_VOIDS = ("the kernel died of an illegal memory access in its bounds replay, so where "
               "memory lies decides its runs and no mutant run's result counts")


def run(request: dict[str, Any], sample: dict[str, Any]) -> Optional[Report]:
    """report["bounds"] (and, after a fault, "mutant_phase_skipped" and "mutants_void"); None
    when not asked for or nothing was recorded."""
    state = sample["state"]
    if not request.get("bounds_check") or state.replays is None or \
            not state.replays.records or state.launch_raw is None:
        return None
    res = bounds.check(state.replays.records, state.launch_raw, synchronize,
                       float(request.get("bounds_check_time_s") or bounds.BUDGET_S))
    res["detail"] = bounds.describe(res)
    part: Report = {"bounds": res, PHASE_FIGURES: dict(bounds.COSTS)}
    if res.get("fault"):
        part["mutant_phase_skipped"] = "the GPU context was lost in the bounds check"
        part["mutants_void"] = FAULT_VOIDS
    return part


def broken(why: str) -> Report:
    return {"bounds": {"out_of_bounds": False, "error": why}}
