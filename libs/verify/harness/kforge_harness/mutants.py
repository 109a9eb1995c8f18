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
from .controls import Controls, failure_text
from .controls import run_tests as tests_again
from .kernel_replay import Recorder, context_lost
from .outputs import Outputs, arguments
from .report_schema import VERDICT
from .runner import MODULE, execute, failing
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
    return report.get("verdict") == VERDICT.passed and bool(t.get("kernels")) and launched > 0


SMALL_BLOCK = 1 << 20  # the caching allocator's small pool serves requests up to this many bytes
FLOOR_MAX = 1 << 30  # the most a rerun's poisoned floor holds (rerun_floor)


def rerun_floor() -> int:
    """The bytes of poisoned free memory every later run of the tests in this process finds,
    whatever ran between (rerun_floor is taken right after the real run, before the speed
    label and the other checks): the real run's peak of allocated GPU memory, at least one
    small and one large block, at most FLOOR_MAX. 0 without CUDA."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return 0
        peak = int(torch.cuda.max_memory_allocated())
    except Exception:  # noqa: BLE001 - no floor then: the cache alone is poisoned
        return 0
    return min(FLOOR_MAX, max(2 * SMALL_BLOCK, -(-peak // (2 * SMALL_BLOCK)) * 2 * SMALL_BLOCK))


def poison_gpu_cache(byte: int = 0xFF, collect: bool = True, floor: int = 0,
                     wait: bool = True) -> int:
    """Fills the GPU memory the caching allocator holds free with 0xFF bytes (NaN for floats, -1
    for integers) and returns how many bytes it filled. Without this, a mutant run in the same
    process could be handed, by torch.empty, the very block in which the real run's kernel left
    the right answer, and a sound test would look vacuous. (The out-of-bounds check fills it
    with its guard zones' byte, `byte`, without a garbage collection first.)
    `floor` (rerun_floor): the free memory poisoned is at least that much in the large pool
    and in the small one (up to `floor` there too), so a run of the tests is served from
    poisoned memory whether or not the phases before it (the speed label's large inputs) left
    blocks cached; without it a run after the label got 0xFF where one without it got fresh
    memory from the driver (issue 52: label off against label on changed a control's result).
    `wait` False: the fills are not waited for (the out-of-bounds check's replays: what comes
    next on the same stream runs after them, and the check waits for that)."""
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
    free = {"large": 0, "small": 0}
    for seg in torch.cuda.memory_snapshot():
        pool = "small" if seg.get("segment_type") == "small" else "large"
        for b in seg.get("blocks", []):
            if b.get("state") == "inactive" and b.get("size", 0) > 0:
                sizes.append((b["size"], seg.get("device", 0)))
                free[pool] = max(free[pool], b["size"]) if pool == "large" else \
                    free[pool] + b["size"]
    device = torch.cuda.current_device()
    if floor > 0 and free["large"] < floor:
        sizes.append((floor, device))  # one block as large as the floor, new if need be
    if floor > 0:
        small = min(floor, 8 * SMALL_BLOCK)
        sizes += [(SMALL_BLOCK, device)] * (max(0, small - free["small"]) // SMALL_BLOCK)
    held, filled = [], 0
    for size, device in sorted(sizes, reverse=True):
        try:
            t = torch.empty(size, dtype=torch.uint8, device="cuda:%d" % device)
        except RuntimeError:
            break
        t.fill_(byte)
        held.append(t)
        filled += size
    if wait:
        torch.cuda.synchronize()
    del held
    return filled


def run_mutant(sample: Sample, report: Json) -> None:
    """The mutant run in the same process: the script imported again as a new module (new kernel
    and autotuner objects), its tests run with the launches of its own kernels skipped, on GPU
    memory the real run can no longer leak into. Fills report like run_sample does."""
    t0 = time.monotonic()
    state = sample["state"]
    sys.modules.pop(MODULE, None)
    state.skip_outputs = dict(state.outputs.written) if state.outputs else {}
    state.mutant = True
    state.launches = {}
    state.autotune_used = []
    state.compile = new_compile_stats()
    state.launcher = new_compile_stats()
    try:
        report["poisoned_bytes"] = poison_gpu_cache(floor=sample.get("rerun_floor", 0))
    except Exception as e:  # noqa: BLE001 - the run still means something without it
        report["poisoned_bytes"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])
    banner("mutant run (kernel launches skipped)")
    try:
        execute(sample, MODULE, report, t0, "skip_launch")
    finally:
        if "module" in sample:
            sys.modules[MODULE] = sample["module"]


def banner(what: str) -> None:
    """A line on stdout and stderr between two runs, written to the descriptors themselves: a
    sample that replaced sys.stdout must not read which run comes next."""
    for fd in (1, 2):
        try:
            os.write(fd, ("\n---- kforge: %s ----\n" % what).encode())
        except OSError:
            pass


class Mutator:
    """Changes, after each launch, the arguments the real run found written by that kernel.
    `identity`: a control run's (identity_run): the same work after each launch (each written
    buffer copied, the mutant computed), on the copy, so the buffers the test reads are left
    as the kernel wrote them; a mutant's run makes the same copy and changes the buffer itself.
    Nothing the sample can count or time (objects, allocations, launches, the gap after a
    launch) then tells a control run from a mutant's (docs/VERIFIER.md, "Control runs")."""

    def __init__(self, name: str, written: dict[str, Any], only: Optional[int] = None,
                 identity: bool = False) -> None:
        self.name = name
        self.written = written  # kernel name -> argument names
        self.only = only  # the one launch (1, 2, ...) to change; None: every launch
        self.identity = identity
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
        copy = buffers.snapshot(x)  # made in a mutant's run and a control's alike
        if self.identity:
            return False if copy is None else self._mutate(copy)
        return self._mutate(x)

    def _mutate(self, x):
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
    """The real run's tests once more, in this process, under an output mutant. Returns the
    first result that did not pass (None when they all passed)."""
    return tests_again(sample, "output_mutant")


def run_tests_kernel(sample: Sample) -> Optional[Json]:
    """The same under a kernel mutant."""
    return tests_again(sample, "kernel_mutant")


def run_output_mutant(sample: Sample, name: str, only: Optional[int] = None,
                      controls: Optional[Controls] = None) -> Json:
    """The real run's tests, once, with mutant `name` applied to every launch's outputs (or to
    launch `only` alone). Returns the battery entry: result killed, survived, not_applicable or
    error (a failure for want of GPU memory is no kill: `controls` voids every result then,
    Controls.oom)."""
    state = sample["state"]
    t0 = time.monotonic()
    mutator = Mutator(name, state.outputs.written if state.outputs else {}, only)
    entry = {"mutant": name}
    if only is not None:
        entry["launch"] = only
    failed = _with_mutator(sample, mutator)
    entry["launches"] = mutator.launches
    entry["changed_launches"] = mutator.changed
    entry["duration_ms"] = int((time.monotonic() - t0) * 1000)
    if failed and controls is not None and controls.oom("output mutant %s" % name, failed):
        why = "ran out of GPU memory: " + failure_text(failed)  # no kill (controls.py)
        entry.update(result="error", detail=why)  # not vocabulary: a mutant's result
    elif mutator.errors:
        errors = "; ".join(mutator.errors)
        entry.update(result="error", detail=errors)  # not vocabulary: a mutant's result
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


def _with_mutator(sample: Sample, mutator: Mutator) -> Optional[Json]:
    """The real run's tests once under `mutator` (a mutant's, or a control's identity): the
    first failing result, None when they all passed."""
    state = sample["state"]
    state.mutant = False
    state.launches = {}
    saved_outputs, state.outputs, state.mutator = state.outputs, None, mutator
    try:
        return run_tests(sample)
    finally:
        state.mutator, state.outputs = None, saved_outputs


def identity_run(sample: Sample, names: list[str], where: str, controls: Controls) -> bool:
    """The output battery's control run, made as a mutant's run is (the same call, the same
    hooks, the same work after each launch: Mutator(identity=True)) with a mutant drawn among
    `names` computed on copies of the written buffers, so the tests see the kernel's own
    outputs. True when the tests passed (controls.record)."""
    t0 = time.monotonic()
    state = sample["state"]
    name = controls.rng.choice(list(names) or list(MUTANTS))
    mutator = Mutator(name, state.outputs.written if state.outputs else {}, identity=True)
    return controls.record("rerun", where, _with_mutator(sample, mutator), t0)


def _per_launch(sample, name, launches, whole, controls):
    """Mutant `name`, killed with every launch changed, applied to each of `launches` alone.
    The entry of the first launch whose change the tests let through (result survived), else
    the whole run's entry with the launches checked."""
    checked = []
    for k in launches:
        entry = run_output_mutant(sample, name, only=k, controls=controls)
        if controls.stopped():
            return entry
        if entry["result"] == "survived":
            entry["whole"] = "killed"
            return entry
        checked.append({"launch": k, "result": entry["result"]})
        if entry["result"] == "killed" and context_lost(synchronize):
            break
    whole["per_launch"] = checked
    return whole


def run_battery(sample: Sample, names: list[str], report: Json,
                controls: Optional[Controls] = None) -> Json:
    """The output mutants `names`, in order, until one survives, with a control run at a random
    place among them (controls.py). Fills report["battery"]."""
    t0 = time.monotonic()
    controls = controls or Controls()
    at = controls.place(len(names))
    battery = {"mutants": [], "survived": [], "not_applicable": [], "not_run": []}
    report["battery"] = battery
    banner("output mutants (%s)" % ", ".join(names))
    outputs = sample["state"].outputs
    isolated = outputs.isolated_launches() if outputs is not None else []
    ran = False  # the control run
    for i, name in enumerate(names):
        if i == at:
            ran = True
            if not identity_run(sample, names, "output mutant %d" % (i + 1), controls):
                battery["not_run"] = list(names[i:])
                battery["stopped"] = _stop_words(controls)
                break
        entry = run_output_mutant(sample, name, controls=controls)
        if entry["result"] == "killed" and name in PER_LAUNCH and isolated:
            entry = _per_launch(sample, name, isolated, entry, controls)
        battery["mutants"].append(entry)
        if controls.stopped():  # the mutant run ran out of memory: nothing it gave counts
            battery["not_run"] = list(names[i + 1:])
            battery["stopped"] = _stop_words(controls)
            ran = True  # no control either: its result could not count
            break
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
            ran = True  # nothing runs on a lost context: no control either
            break
    if not ran:  # its place was after the end or past the first survivor: it runs all the same
        identity_run(sample, names, "after the output mutants", controls)
    battery["killed"] = sum(e["result"] == "killed" for e in battery["mutants"])
    battery["applicable"] = sum(e["result"] in ("killed", "survived")
                                for e in battery["mutants"])
    battery["duration_ms"] = int((time.monotonic() - t0) * 1000)
    return battery


def run_mutants(sample: Sample, report: Json, names: list[str],
                kernel: tuple[int, float] = (0, 0.0)) -> None:
    """The skip-launch run, then (if the tests failed under it) the output mutants `names`, then
    (if the tests killed them all) the kernel battery: kernel = (count, time budget in s). A
    fresh control run goes before or after the skip-launch run, by lot (controls.py). The phases
    (phases/__init__.py) make the same calls, each a phase of its own."""
    controls = Controls()
    report["controls"] = controls.out
    skip_launch_run(sample, report, controls)
    if not controls.stopped():
        battery_after_skip(sample, report, names, kernel, controls)
    controls.void(report)


def skip_launch_run(sample: Sample, report: Json, controls: Controls) -> None:
    """The skip-launch run (run_mutant) with the fresh control run before or after it, by lot.
    The control runs after it whatever the skip-launch run gave: were it made only when the
    tests failed there, whether a sample whose test survives the skip-launch run but fails on
    poisoned memory (an index tensor from torch.empty) is flagged unstable_test would be the
    lot's (issue 52: flags that repeat)."""
    first = controls.place(1) == 0
    if first:
        controls.fresh(sample, "before the skip-launch run", poison_gpu_cache)
    run_mutant(sample, report)
    skip_oom(report, controls)
    if not first and not controls.stopped():
        controls.fresh(sample, "after the skip-launch run", poison_gpu_cache)


def skip_oom(report: Json, controls: Controls) -> bool:
    """A skip-launch run that failed for want of GPU memory killed nothing: every result void,
    as the verifier's failure (Controls.oom). True then."""
    bad = failing(report.get("tests", []))
    return bool(bad) and controls.oom("the skip-launch run", bad[0])


def _stop_words(controls: Controls) -> str:
    """Why a battery stopped at a run the controls voided everything for."""
    if controls.out.get("infrastructure"):
        return "a run ran out of GPU memory"
    return "a control run failed"


def battery_after_skip(sample: Sample, report: Json, names: list[str],
                       kernel: tuple[int, float] = (0, 0.0),
                       controls: Optional[Controls] = None) -> None:
    """The output mutants `names` and the kernel battery, when the skip-launch run whose report
    this is killed the sample's test (phases.batteries calls the two as phases of their own).
    Without `controls` (a mutant process of its own) the report gets its own, and the real run
    made again is its fresh control run."""
    count, budget = kernel
    own = controls is None
    if controls is None:
        controls = Controls()
        report["controls"] = controls.out
    try:
        if battery_due(report, names, count) and \
                output_battery(sample, report, names, count, controls):
            run_kernel_battery(sample, report, count, budget, run_tests_kernel, controls)
    finally:
        if own:
            controls.void(report)


def battery_due(report: Json, names: list[str], count: int) -> bool:
    """Whether the batteries follow the skip-launch run whose report this is: it did not pass,
    the verifier's Python had what the sample needs, and mutants are asked for."""
    names = [n for n in names if n in MUTANTS]
    return not (report.get("verdict") == VERDICT.passed or (not names and count <= 0) or
                report.get("environment"))


def output_battery(sample: Sample, report: Json, names: list[str], count: int,
                   controls: Controls) -> bool:
    """The output mutants `names` (after battery_due), with a control run among them. In a
    mutant process of its own (verifier.mutant_run: new_process) the real run is made again
    first, to find the outputs and record the launches: that run is the process's fresh control
    run. Fills report["battery"]; returns whether the kernel battery of `count` mutants follows
    (not after a failed control)."""
    names = [n for n in names if n in MUTANTS]
    if "module" not in sample:
        real: Json = {}
        sample["state"].mutant = False
        sample["state"].outputs = Outputs()
        if count > 0:
            sample["state"].replays = Recorder()
        t_real = time.monotonic()
        try:
            poison_gpu_cache(floor=sample.get("rerun_floor", 0))  # as the fresh control
        except Exception:  # noqa: BLE001 - the run still means something without it
            pass
        execute(sample, MODULE, real, t_real, "control")
        report["real_run_again"] = {"verdict": real.get("verdict"), "detail": real.get("detail")}
        bad = failing(real.get("tests", []))
        controls.record("fresh", "after the skip-launch run", bad[0] if bad else None, t_real)
        if real.get("verdict") != VERDICT.passed:
            report["battery"] = {"mutants": [], "not_run": names,
                                 "stopped": "the real run did not pass again: %s"
                                 % real.get("detail")}
            return False
    if context_lost(synchronize):
        report["battery"] = {"mutants": [], "not_run": names,
                             "stopped": "the GPU context was lost under the skip-launch run"}
        return False
    if names:
        battery = run_battery(sample, names, report, controls)
        if battery["survived"] or battery.get("not_run"):
            return False  # weak already, or stopped (a lost GPU context, a failed control)
    return count > 0 and not controls.stopped()
