"""The checks of one sample's process, as phases called in order (docs/VERIFIER.md, "Phases").

Each check is a module with one entry point, run(...), that takes what it needs and returns its
part of the report; sequence.Phases calls each one timed, with the process's state put back
around it (guard.py), and keeps a phase's failure to that phase:

  test_run        the sample's tests: the verdict (in a mutant process: the skip-launch run)
  speed           the speed label (a declared reference that disagrees fails the sample)
  differential    the wrapper against its declared reference on transformed inputs
  cross_compile   the launched kernels compiled for other targets
  bounds_replay   the launches replayed between guard zones
  skip_launch     the tests again with the kernels' launches skipped (the mutant report)
  control         in a mutant process of its own whose skip-launch run passed: the fresh
                  control run the real run's process makes beside its skip-launch run
  output_mutants  the tests once per output mutant
  kernel_battery  the tests against kernels made wrong
"""

from __future__ import annotations

from typing import Any, Optional

from . import (bounds_replay, cross_compile, differential, kernel_battery, output_mutants,
               skip_launch, speed, test_run)
from .. import gpulock
from ..controls import Controls
from ..mutants import skip_oom
from ..report_schema import VERDICT
from .sequence import Phases, Report, Result

__all__ = ["Phases", "Report", "Result", "real_run", "mutant_run", "mutant_process"]


def _passed(report: Report) -> bool:
    return report.get("verdict") == VERDICT.passed


def _note_lock(report: Report) -> None:
    """What the device's lock saw of this process (gpulock), when it has one."""
    if gpulock.CURRENT is not None:
        report["gpu_lock"] = gpulock.CURRENT.report()


def real_run(request: dict[str, Any], report: Report, phases: Phases) -> Optional[dict[str, Any]]:
    """The real run's report: the sample's tests, then the checks of a run that passed. Returns
    the sample (None when its tests did not run)."""
    sample = phases.run("test", test_run.run, request, broken=test_run.broken)
    if sample is not None and _passed(report):
        phases.run("speed", speed.run, sample, request, broken=speed.broken)
    if sample is not None and _passed(report):
        phases.run("differential", differential.run, sample, broken=differential.broken)
    _note_lock(report)
    if sample is not None and _passed(report):
        phases.run("cross_compile", cross_compile.run, request, sample,
                   broken=cross_compile.broken_for(request))
    if sample is not None and _passed(report):
        phases.run("bounds", bounds_replay.run, request, sample, broken=bounds_replay.broken)
    return sample


def mutant_run(sample: dict[str, Any], report: Report, phases: Phases, names: list[str],
               kernel: tuple[int, float]) -> None:
    """The mutant report, in the real run's process after its report went out: the skip-launch
    run (a fresh control run before or after it, by lot), then the batteries (a control run
    among each's mutants). A failed control voids the kills (report["controls"])."""
    controls = Controls()
    report["controls"] = controls.out
    if phases.run("skip_launch", skip_launch.run, sample, controls, broken=skip_launch.broken) \
            and not controls.stopped():
        batteries(sample, report, phases, names, kernel, controls)
    controls.void(report)


def mutant_process(request: dict[str, Any], report: Report, phases: Phases, names: list[str],
                   kernel: tuple[int, float]) -> None:
    """A mutant process of its own (verifier.mutant_run: new_process, or the real run's process
    could not go on): its run is the skip-launch run, then the batteries; the real run made
    again before them is its fresh control run (a fresh control of its own when the
    skip-launch run passed and no battery follows). The request's "mutants_void" (the real
    run's, passed on by the pool: its kernel faulted in the bounds replay) voids every result
    as a failed control does."""
    controls = Controls(void_reason=request.get("mutants_void"))
    report["controls"] = controls.out
    sample = phases.run("skip_launch", test_run.run, request, broken=test_run.broken)
    # A skip-launch run out of GPU memory kills nothing and voids every result (controls.py).
    if sample is not None and not skip_oom(report, controls):
        if _passed(report):
            # No battery follows, so no real run made again: a fresh control as the real run's
            # process makes one (mutants.skip_launch_run), or the flags would depend on which
            # process the mutant runs went to (issue 52).
            phases.run("control", skip_launch.fresh_control, sample, controls)
        else:
            batteries(sample, report, phases, names, kernel, controls)
    controls.void(report)
    _note_lock(report)


def batteries(sample: dict[str, Any], report: Report, phases: Phases, names: list[str],
              kernel: tuple[int, float], controls: Controls) -> None:
    """The output mutants, then (when the tests killed them all and no control failed) the
    kernel battery: kernel = (count, time budget in s)."""
    count, budget = kernel
    if phases.run("output_mutants", output_mutants.run, sample, report, names, count, controls,
                  broken=output_mutants.broken):
        phases.run("kernel_battery", kernel_battery.run, sample, count, budget, controls,
                   broken=kernel_battery.broken)
