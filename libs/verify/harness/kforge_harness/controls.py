"""Control runs: the unmutated sample run again, at random places among the mutant runs.

A mutant run counts as a kill only because the tests fail with the mutant and would pass
without it. A control run is the same run without the mutant: `fresh` (the script imported
afresh on poisoned GPU memory, as the skip-launch run does, its launches made) is placed before
or after the skip-launch run, `rerun` (the real run's tests again, as the output and kernel
mutant runs do) at a random place among the output mutants and one among the kernel mutants.
The places are drawn from the operating system's randomness in each process, so a sample that
counts its calls cannot know which run is a control. A control that fails voids every kill of
the sample (the report's "controls": failed; the pool flags it unstable_test), and a kill whose
failure is the control's own (the same test and exception) is no kill at all (`as_control`).
A run after the real one (a control, the skip-launch run, a mutant run) that failed because the
device ran out of memory (oom_words.txt) says nothing of the test: it voids every result too, as
the verifier's own failure (the report's "controls": infrastructure; the pool flags the sample
`infrastructure` and verifies it again later), never a kill nor unstable_test.
docs/VERIFIER.md, "Control runs".
"""

from __future__ import annotations

import os
import random
import sys
import time
from typing import Any, Callable, Optional

from .listed import listed
from .runner import MODULE, execute, failing, put_generators, run_test, test_cases
from .report_schema import VERDICT
from .shapes import Json, Sample

OOM_WORDS = listed("oom_words.txt", __file__)
OOM_TYPES = ("OutOfMemoryError",)  # torch.OutOfMemoryError (torch.cuda.OutOfMemoryError)


def out_of_memory(result: Optional[Json]) -> bool:
    """Whether a run's failure (a test's result entry) is the device running out of memory:
    torch's OutOfMemoryError, or another exception whose message has the words of one
    (oom_words.txt). An AssertionError is the test's own, whatever its message says."""
    if not result or result.get("status") == VERDICT.failed or \
            result.get("exception") == "AssertionError":
        return False
    if result.get("exception") in OOM_TYPES:
        return True
    text = result.get("message") or ""
    return any(w in text for w in OOM_WORDS)


def failure_text(result: Json) -> str:
    """A failed test's result in one line: "name: exception[: message's first line]"."""
    return "%s: %s%s" % (result.get("name"), result.get("exception") or "", (
        ": " + result["message"].splitlines()[0][:200]
        if (result.get("message") or "").strip() else ""))


def run_tests(sample: Sample, phase: str) -> Optional[Json]:
    """The real run's tests once more, in this process, its module as sys.modules has it in the
    real run. Returns the first result that did not pass (None when they all passed)."""
    module, info = sample["module"], sample["info"]
    sys.modules[MODULE] = module
    _poison(sample.get("rerun_floor", 0))  # the same bytes in free GPU memory, whatever ran before
    put_generators(sample.get("generators"))  # the real run's inputs, wherever this run is
    me = os.getpid()
    for test in sample["tests"]:
        fn = getattr(module, test, None)
        cases = test_cases(fn) if callable(fn) else None
        for suffix, kwargs in cases or []:
            result = run_test(test + suffix, fn, kwargs, me, info, phase)
            if failing([result]):
                return result
    return None


def _poison(floor: int = 0) -> None:
    """The GPU memory the caching allocator holds free filled with 0xFF, as for the skip-launch
    and fresh control runs (mutants.poison_gpu_cache), after collecting the young garbage: an
    output a kernel leaves unwritten, or a read of memory the test never wrote, then sees the
    same bytes in every run of the tests, not what the run the lot put before it left there
    (the real answer after a control, a mutated one after a mutant); at least `floor` bytes of
    it (mutants.rerun_floor), whatever the phases before left cached. Nothing without CUDA."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return
        import gc
        from .mutants import poison_gpu_cache
        gc.collect(1)
        poison_gpu_cache(0xFF, collect=False, floor=floor)
    except Exception:  # noqa: BLE001 - the run still means something without it
        pass


def signature(result: Json) -> tuple[str, str]:
    """(test, exception) of a failed test's result."""
    return (result.get("name") or "", result.get("exception") or "")


def _sig_of_by(by):
    parts = (by or "").split(": ")
    return (parts[0], parts[1] if len(parts) > 1 else "")


class Controls:
    """The control runs of one process's mutant runs, and whether their results stand.
    `void_reason`: why none stands whatever the controls do (the real run's "mutants_void": its
    kernel faulted in its bounds replay); the report then says so from the start
    (controls.void, controls.void_reason) and void() voids every result."""

    def __init__(self, void_reason: Optional[str] = None) -> None:
        self.rng = random.SystemRandom()
        self.out: Json = {"runs": [], "failed": False}
        self.failures: list[tuple[str, str]] = []  # signatures of the failed controls
        if void_reason:
            self.out.update(void=True, void_reason=void_reason)

    def place(self, n: int) -> int:
        """Where a control goes among n mutant runs: before run i (0..n-1), or n: after all."""
        return self.rng.randint(0, n)

    def record(self, kind: str, where: str, failed: Optional[Json], t0: float) -> bool:
        entry = {"kind": kind, "at": where,
                 "result": VERDICT.passed if failed is None else VERDICT.failed,
                 "duration_ms": int((time.monotonic() - t0) * 1000)}
        if failed is not None:
            entry["by"] = failure_text(failed)
            self.failures.append(signature(failed))
            if not self.oom("the %s control run %s" % (kind, where), failed):
                self.out["failed"] = True
        self.out["runs"].append(entry)
        return failed is None

    def oom(self, what: str, failed: Optional[Json]) -> bool:
        """When `failed` (a run's first failing result) is the device out of memory: every
        result void as the verifier's failure, not the test's (out_of_memory; "infrastructure"
        in the report, the reason naming the run and the error); True then. The battery that
        made the run stops there (stopped())."""
        if not out_of_memory(failed):
            return False
        assert failed is not None
        self.out["infrastructure"] = True
        self.out["void"] = True
        self.out.setdefault("void_reason", (
            "%s ran out of GPU memory (%s): the device's memory, held by the other samples of the "
            "GPU or by the verifier's own checks, not the test, failed, so no mutant run's result "
            "counts; the verifier runs the sample again" % (what, failure_text(failed))))
        return True

    def stopped(self) -> bool:
        """Whether no more mutant runs are worth making: a control failed, or a run ran out of
        memory."""
        return bool(self.out["failed"] or self.out.get("infrastructure"))

    def fresh(self, sample: Sample, where: str, poison: Callable[..., Any]) -> bool:
        """The script imported afresh and its tests run with nothing skipped or changed, on GPU
        memory poisoned as for the skip-launch run (poison(floor=...) does it: at least the
        sample's rerun_floor bytes). True when it passed."""
        t0 = time.monotonic()
        state = sample["state"]
        saved = _save(state)
        state.mutant, state.outputs, state.mutator, state.kernel_swap = False, None, None, None
        state.launches = {}
        run = {}
        try:
            try:
                poison(floor=sample.get("rerun_floor", 0))
            except Exception:  # noqa: BLE001 - the run still means something without it
                pass
            sys.modules.pop(MODULE, None)
            execute(sample, MODULE, run, t0, "control", keep=False)
        finally:
            _restore(state, saved)
            if "module" in sample:
                sys.modules[MODULE] = sample["module"]
        bad = failing(run.get("tests", []))
        return self.record("fresh", where, bad[0] if bad else None, t0)

    def rerun(self, sample: Sample, where: str) -> bool:
        """The real run's tests again, unmutated. True when they passed."""
        t0 = time.monotonic()
        state = sample["state"]
        saved = _save(state)
        state.mutant, state.outputs, state.mutator, state.kernel_swap = False, None, None, None
        state.launches = {}
        try:
            failed = run_tests(sample, "control")
        finally:
            _restore(state, saved)
        return self.record("rerun", where, failed, t0)

    def void(self, report: Json) -> None:
        """After a failed control, or with a void_reason: no mutant's result stands. Kills
        whose failure is a control's own are `as_control`, the others and every survivor `void`
        (which mutants ran before the battery stopped at the failed control is the lot's, so a
        survivor must not flag the sample either); the scores are counted again."""
        if not self.stopped() and not self.out.get("void"):
            return
        sigs = set(self.failures)
        for key in ("battery", "kernel_battery"):
            b = report.get(key)
            if not isinstance(b, dict):
                continue
            for e in b.get("mutants", []):
                if e.get("result") == "killed":
                    e["result"] = "as_control" if _sig_of_by(e.get("by")) in sigs else "void"
                elif e.get("result") == "survived":
                    e["result"] = "void"
            b["killed"] = 0
            b["applicable"] = 0
            b["survived"] = []
        self.out["void"] = True


def _save(state):
    return (state.mutant, state.outputs, state.mutator, state.kernel_swap, state.launches)


def _restore(state, saved):
    (state.mutant, state.outputs, state.mutator, state.kernel_swap, state.launches) = saved
