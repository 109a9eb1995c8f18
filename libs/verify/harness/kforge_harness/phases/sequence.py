"""Phases: runs one check of a sample's process at a time, timed, between state checks, with
its failure kept to itself (docs/VERIFIER.md, "Phases").

Each phase's entry point returns its part of the report (a dict, merged into the report), a
Result (its part and a value for the orchestrator: the sample, whether the next check is due),
or None where the check does not apply to this sample (nothing is recorded then). Around each
call:
  - report["phase_times"][phase] = {wall_ms, cpu_ms[, compile_ms, compile_cpu_ms]}: cpu_ms is
    the process's CPU time (every thread) and its reaped children's (ptxas, the cross-compile
    children); compile_* the part of it in Triton's compile() and launcher builds; and the
    figures a phase's part holds under PHASE_FIGURES (the bounds phase: where its time went);
  - the integrity guard (kforge_harness/guard.py), the one place that checks the functions a
    verdict depends on, looks for replaced ones after it (it does after every call of the
    sample's code too, blind.call) and resets trace and profile functions left set (on the
    sample's runner thread too): a finding flags the sample `tampered`;
  - state.State puts back what the phase left in the process; what it was, and the trace or
    profile functions the guard reset, go to report["phase_state"][phase];
  - an exception out of the entry point is the verifier's failure, not the sample's: it goes
    to report["phase_errors"][phase] and the phase's part is its `broken` fallback (the same
    shape a reader expects, saying harness error), never a kill or another verdict. The later
    phases of the report still run (their state was put back), but the mutant runs go to a
    process of their own (report["mutant_phase_skipped"]);
  - state that cannot be put back (a CUDA graph capture under way) stops the process: the
    later phases do not run in it, each recorded in phase_errors as not run, and the mutant
    runs go to a process of their own.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, NamedTuple, Optional

from .. import triton_hooks
from ..guard import GUARD as INTEGRITY  # functions verdicts rest on (kforge_harness/guard.py)
from .state import State  # process state between phases (phases/state.py)

Report = dict[str, Any]
# A phase's part may hold figures of its own under this key: they go to its phase times
# (report["phase_times"][phase], whose fields beyond wall_ms and cpu_ms are diagnostics), not to
# the report.
PHASE_FIGURES = "phase_figures"


class Result(NamedTuple):
    """An entry point's part of the report and a value for the orchestrator."""
    part: Report
    value: Any = None


def cpu_s() -> float:
    """This process's CPU seconds (every thread) and its reaped children's."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def _compile_totals() -> tuple[int, int]:
    ms = cpu = 0
    for stats in triton_hooks.TOTALS.values():
        ms += stats["ms"]
        cpu += stats["cpu_ms"] + stats["child_cpu_ms"]
    return ms, cpu


def describe_error(e: BaseException) -> str:
    return "harness error: %s: %s" % (type(e).__name__, str(e)[:300])


class Phases:
    """The phases of one report, run one at a time (see the module's docstring).
    `started`: (monotonic time, CPU seconds as cpu_s() counts them) when the sample's process
    started on this request; the time until the first phase is recorded as "prepare".
    `sets_up`: the first phase runs the sample's tests first (the harness sets its hooks)."""

    def __init__(self, report: Report, started: Optional[tuple[float, float]] = None,
                 sets_up: bool = True) -> None:
        self.report = report
        self.times: dict[str, dict[str, int]] = report.setdefault("phase_times", {})
        self.stopped: Optional[str] = None  # why the later phases do not run in this process
        self.first = sets_up  # the first phase sets the harness's hooks up
        if started is not None:
            self.times["prepare"] = {
                "wall_ms": int((time.monotonic() - started[0]) * 1000),
                "cpu_ms": int((cpu_s() - started[1]) * 1000)}

    def run(self, name: str, entry: Callable[..., Any], *args: Any,
            broken: Optional[Callable[[str], Report]] = None) -> Any:
        """Calls entry(*args) as phase `name`. Returns the Result's value (None for a plain
        part, a phase that did not apply, broke or did not run)."""
        if self.stopped is not None:
            self.errors()[name] = "not run: %s" % self.stopped
            if broken is not None:
                self.report.update(broken("not run: %s" % self.stopped))
            return None
        state = State()
        state.before(sets_up=self.first)
        self.first = False
        t0, c0, (k0, kc0) = time.monotonic(), cpu_s(), _compile_totals()
        out: Any = None
        try:
            out = entry(*args)
        except BaseException as e:  # noqa: B902 - SystemExit from the sample's code included
            why = describe_error(e)
            self.errors()[name] = why
            self.report.setdefault("mutant_phase_skipped", "the %s phase broke" % name)
            out = Result(broken(why) if broken is not None else {})
        finally:
            left, spoiled = state.after()
            left += INTEGRITY.check(name)  # functions, after each phase too (blind.call)
        if out is None:
            return None
        times = {"wall_ms": int((time.monotonic() - t0) * 1000),
                 "cpu_ms": int((cpu_s() - c0) * 1000)}
        k1, kc1 = _compile_totals()
        if k1 > k0 or kc1 > kc0:
            times.update(compile_ms=k1 - k0, compile_cpu_ms=kc1 - kc0)
        part = out.part if isinstance(out, Result) else out
        if isinstance(part, dict):
            times.update(part.pop(PHASE_FIGURES, None) or {})
        self.times[name] = times
        if left:
            self.report.setdefault("phase_state", {})[name] = left
        if spoiled:
            self.stop("the %s phase left %s" % (name, spoiled))
        if isinstance(out, Result):
            self.report.update(out.part)
            return out.value
        self.report.update(out)
        return None

    def errors(self) -> dict[str, str]:
        errors: dict[str, str] = self.report.setdefault("phase_errors", {})
        return errors

    def stop(self, why: str) -> None:
        """The later phases do not run in this process (nor the mutant runs)."""
        if self.stopped is None:
            self.stopped = why
            self.report.setdefault("mutant_phase_skipped", why)
