"""The mutant runs: the tests run again, in the sample's process, on a kernel made wrong.

First the launches of the sample's own kernels are skipped (a fresh import of the script, on
poisoned GPU memory). If the tests fail then, the battery of output mutants follows: the tests of
the real run's module run once per mutant, and right after each launch the mutant changes the
buffers that launch wrote in the real run (outputs.Outputs found them), the same deterministic
way each time. A mutant that changed nothing in any launch does not apply. The battery stops at
the first mutant the tests let through. When the tests killed every output mutant, the kernel
battery (kernel_mutants) follows. docs/VERIFIER.md says what each one proves.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any, Callable, Optional

from . import buffers
from .gpusync import synchronize
from .kernel_mutants import run_kernel_battery
from .kernel_replay import Recorder, context_lost
from .outputs import Outputs, arguments
from .runner import execute, run_test, test_cases
from .shapes import Json, Sample
from .triton_hooks import new_compile_stats

# Every output mutant, in the order they run (verifier.mutants picks among them).
MUTANTS = ("tail", "interior", "permute", "permute_row", "scale", "zero")
# The mutants that change part of an output: after each kills the test with every launch
# changed, it must kill it again with each launch of more than one output element changed on its
# own (outputs.Outputs.isolated_launches), so a small launch that the test checks whole cannot
# hide a larger one that it checks only in part. The others change a whole output.
PER_LAUNCH = ("tail", "interior", "permute_row")
SCALE_PERCENT = 5.0


def wants_mutant_run(report: Json) -> bool:
    """A passing sample that launched kernels of its own code gets the mutant run (the pool
    applies the same rule when it runs the mutant in a new process)."""
    t = report.get("triton") or {}
    launched = sum(v for v in (t.get("launches") or {}).values() if isinstance(v, int))
    return report.get("verdict") == "passed" and bool(t.get("kernels")) and launched > 0


def poison_gpu_cache(byte: int = 0xFF, collect: bool = True) -> int:
    """Fills the GPU memory the caching allocator holds free with 0xFF bytes (NaN for floats, -1
    for integers) and returns how many bytes it filled. Without this, a mutant run in the same
    process could be handed, by torch.empty, the very block in which the real run's kernel left
    the right answer, and a sound test would look vacuous. (The out-of-bounds check fills it
    with its guard zones' byte, `byte`, without a garbage collection first.)"""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    try:
        if not torch.cuda.is_initialized():
            return 0
    except AttributeError:
        return 0
    import gc
    if collect:
        gc.collect()
    torch.cuda.synchronize()
    sizes = []
    for seg in torch.cuda.memory_snapshot():
        for b in seg.get("blocks", []):
            if b.get("state") == "inactive" and b.get("size", 0) > 0:
                sizes.append((b["size"], seg.get("device", 0)))
    held, filled = [], 0
    for size, device in sorted(sizes, reverse=True):
        try:
            t = torch.empty(size, dtype=torch.uint8, device="cuda:%d" % device)
        except RuntimeError:
            break
        t.fill_(byte)
        held.append(t)
        filled += size
    torch.cuda.synchronize()
    del held
    return filled


def run_mutant(sample: Sample, report: Json) -> None:
    """The mutant run in the same process: the script imported again as a new module (new kernel
    and autotuner objects), its tests run with the launches of its own kernels skipped, on GPU
    memory the real run can no longer leak into. Fills report like run_sample does."""
    t0 = time.monotonic()
    state = sample["state"]
    sys.modules.pop("kforge_sample", None)
    state.skip_outputs = dict(state.outputs.written) if state.outputs else {}
    state.mutant = True
    state.launches = {}
    state.autotune_used = []
    state.compile = new_compile_stats()
    state.launcher = new_compile_stats()
    try:
        report["poisoned_bytes"] = poison_gpu_cache()
    except Exception as e:  # noqa: BLE001 - the run still means something without it
        report["poisoned_bytes"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.write("\n---- kforge: mutant run (kernel launches skipped) ----\n")
            stream.flush()
        except Exception:
            pass
    execute(sample, "kforge_sample_mutant", report, t0)


class Mutator:
    """Changes, after each launch, the arguments the real run found written by that kernel."""

    def __init__(self, name: str, written: dict[str, Any], only: Optional[int] = None) -> None:
        self.name = name
        self.written = written  # kernel name -> argument names
        self.only = only  # the one launch (1, 2, ...) to change; None: every launch
        self.launches = 0
        self.changed = 0  # launches in which the mutant changed at least one element
        self.errors = []

    def launch(self, kernel: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               run: Callable[[], Any]) -> Any:
        ret = run()
        self.launches += 1
        if self.only is not None and self.launches != self.only:
            return ret
        names = set(self.written.get(kernel, ()))
        seen = set()
        hit = False
        for name, value in arguments(fn, args, kwargs):
            if name not in names or not buffers.is_buffer(value):
                continue
            k = buffers.key(value)
            if k in seen:
                continue
            seen.add(k)
            try:
                with _no_grad():
                    hit |= self._apply(value)
            except Exception as e:  # noqa: BLE001 - the verdict must not rest on a harness bug
                if len(self.errors) < 3:
                    self.errors.append("%s on %s: %s: %s" % (self.name, name, type(e).__name__,
                                                             str(e)[:200]))
        self.changed += hit
        return ret

    def _apply(self, x):
        k = self.launches
        if self.name in ("tail", "interior"):
            return buffers.off_element(x, self.name, k)
        if self.name == "permute":
            return buffers.roll(x, k)
        if self.name == "permute_row":
            return buffers.roll_last(x, k)
        if self.name == "scale":
            return buffers.scale(x, k, SCALE_PERCENT)
        return buffers.zero(x)


def _no_grad():
    """torch.no_grad() where torch is loaded: an output that requires grad can be changed."""
    torch = sys.modules.get("torch")
    return torch.no_grad() if torch is not None else contextlib.nullcontext()


def run_tests(sample: Sample) -> Optional[Json]:
    """The real run's tests once more, in this process. Returns the first result that did not
    pass (None when they all passed)."""
    module, info = sample["module"], sample["info"]
    me = os.getpid()
    for test in sample["tests"]:
        fn = getattr(module, test, None)
        cases = test_cases(fn) if callable(fn) else None
        for suffix, kwargs in cases or []:
            result = run_test(test + suffix, fn, kwargs, me, info)
            if result.get("status") not in ("passed", "skipped"):
                return result
    return None


def run_output_mutant(sample: Sample, name: str, only: Optional[int] = None) -> Json:
    """The real run's tests, once, with mutant `name` applied to every launch's outputs (or to
    launch `only` alone). Returns the battery entry: result killed, survived, not_applicable or
    error."""
    state = sample["state"]
    t0 = time.monotonic()
    mutator = Mutator(name, state.outputs.written if state.outputs else {}, only)
    state.mutant = False
    state.launches = {}
    saved_outputs, state.outputs, state.mutator = state.outputs, None, mutator
    entry = {"mutant": name}
    if only is not None:
        entry["launch"] = only
    try:
        failed = run_tests(sample)
    finally:
        state.mutator, state.outputs = None, saved_outputs
    entry["launches"] = mutator.launches
    entry["changed_launches"] = mutator.changed
    entry["duration_ms"] = int((time.monotonic() - t0) * 1000)
    if mutator.errors:
        entry.update(result="error", detail="; ".join(mutator.errors))
    elif failed:
        entry["result"] = "killed" if mutator.changed else "not_applicable"
        entry["by"] = "%s: %s" % (failed.get("name"), (failed.get("exception") or "") +
                                  (": " + failed["message"].splitlines()[0][:200]
                                   if (failed.get("message") or "").strip() else ""))
        if not mutator.changed:
            entry["detail"] = "the tests failed though the mutant changed nothing (flaky test?)"
    elif mutator.changed:
        entry["result"] = "survived"
    else:
        entry["result"] = "not_applicable"
        entry["detail"] = ("no launch wrote an output" if not mutator.launches or
                           not mutator.written else "the change vanished in every output "
                           "(all elements equal, or integer/boolean rounding)")
    return entry


def _per_launch(sample, name, launches, whole):
    """Mutant `name`, killed with every launch changed, applied to each of `launches` alone.
    The entry of the first launch whose change the tests let through (result survived), else
    the whole run's entry with the launches checked."""
    checked = []
    for k in launches:
        entry = run_output_mutant(sample, name, only=k)
        if entry["result"] == "survived":
            entry["whole"] = "killed"
            return entry
        checked.append({"launch": k, "result": entry["result"]})
        if entry["result"] == "killed" and context_lost(synchronize):
            break
    whole["per_launch"] = checked
    return whole


def run_battery(sample: Sample, names: list[str], report: Json) -> Json:
    """The output mutants `names`, in order, until one survives. Fills report["battery"]."""
    t0 = time.monotonic()
    battery = {"mutants": [], "survived": [], "not_applicable": [], "not_run": []}
    report["battery"] = battery
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.write("\n---- kforge: output mutants (%s) ----\n" % ", ".join(names))
            stream.flush()
        except Exception:
            pass
    outputs = sample["state"].outputs
    isolated = outputs.isolated_launches() if outputs is not None else []
    for i, name in enumerate(names):
        entry = run_output_mutant(sample, name)
        if entry["result"] == "killed" and name in PER_LAUNCH and isolated:
            entry = _per_launch(sample, name, isolated, entry)
        battery["mutants"].append(entry)
        if entry["result"] == "not_applicable":
            battery["not_applicable"].append(name)
        if entry["result"] == "survived":
            battery["survived"].append(name)
            battery["not_run"] = list(names[i + 1:])
            battery["stopped"] = "first survivor"
            break
        if entry["result"] == "killed" and context_lost(synchronize):
            battery["not_run"] = list(names[i + 1:])
            battery["stopped"] = "the GPU context was lost under mutant %s" % name
            break
    battery["killed"] = sum(e["result"] == "killed" for e in battery["mutants"])
    battery["applicable"] = sum(e["result"] in ("killed", "survived")
                                for e in battery["mutants"])
    battery["duration_ms"] = int((time.monotonic() - t0) * 1000)
    return battery


def run_mutants(sample: Sample, report: Json, names: list[str],
                kernel: tuple[int, float] = (0, 0.0)) -> None:
    """The skip-launch run, then (if the tests failed under it) the output mutants `names`, then
    (if the tests killed them all) the kernel battery: kernel = (count, time budget in s)."""
    run_mutant(sample, report)
    battery_after_skip(sample, report, names, kernel)


def battery_after_skip(sample: Sample, report: Json, names: list[str],
                       kernel: tuple[int, float] = (0, 0.0)) -> None:
    """The output mutants `names` and the kernel battery, when the skip-launch run whose report
    this is killed the sample's test (phases.batteries calls the two as phases of their own)."""
    count, budget = kernel
    if battery_due(report, names, count) and output_battery(sample, report, names, count):
        run_kernel_battery(sample, report, count, budget, run_tests)


def battery_due(report: Json, names: list[str], count: int) -> bool:
    """Whether the batteries follow the skip-launch run whose report this is: it did not pass,
    the verifier's Python had what the sample needs, and mutants are asked for."""
    names = [n for n in names if n in MUTANTS]
    return not (report.get("verdict") == "passed" or (not names and count <= 0) or
                report.get("environment"))


def output_battery(sample: Sample, report: Json, names: list[str], count: int) -> bool:
    """The output mutants `names` (after battery_due). In a mutant process of its own
    (verifier.mutant_run: new_process) the real run is made again first, to find the outputs
    and record the launches. Fills report["battery"]; returns whether the kernel battery of
    `count` mutants follows."""
    names = [n for n in names if n in MUTANTS]
    if "module" not in sample:
        real = {}
        sample["state"].mutant = False
        sample["state"].outputs = Outputs()
        if count > 0:
            sample["state"].replays = Recorder()
        execute(sample, "kforge_sample_real", real, time.monotonic())
        report["real_run_again"] = {"verdict": real.get("verdict"), "detail": real.get("detail")}
        if real.get("verdict") != "passed":
            report["battery"] = {"mutants": [], "not_run": names,
                                 "stopped": "the real run did not pass again: %s"
                                 % real.get("detail")}
            return False
    if context_lost(synchronize):
        report["battery"] = {"mutants": [], "not_run": names,
                             "stopped": "the GPU context was lost under the skip-launch run"}
        return False
    if names:
        battery = run_battery(sample, names, report)
        if battery["survived"] or battery.get("not_run"):
            return False  # weak already, or stopped (a lost GPU context)
    return count > 0
