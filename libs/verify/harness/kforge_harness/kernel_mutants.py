"""The kernel battery: the test run against kernels made wrong (kernel_ops) in its own process.

For a sample whose test killed the skip-launch run and every output mutant: a deterministic
choice of `count` mutation sites over the kernels its test launched; for each, the mutated
kernel compiled as a kernel of its own (a file of its own, so Triton's cache keeps the
original; without value specialisation of its integers: one compile serves its launches),
then the equivalence replay (kernel_replay): each recorded launch made again with the
original and the mutant on the same fresh inputs. A mutant whose outputs never differ where
the original's are finite is `equivalent` (not counted); one that writes outside its buffers in
the replay is `unsafe` and is not run against the test (it could corrupt the test's memory);
one that does not compile is `stillborn`. Every other mutant replaces the original for one run
of the real run's tests: `killed` when a test fails, `survived` when they all pass (the sample
is flagged weak_inputs). The battery stops at the first survivor, when the time budget is
spent, or when the GPU context is lost.
"""

from __future__ import annotations

import ast
import linecache
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import kernel_ops
from .assembly import section_of
from .gpusync import synchronize
from .kernel_replay import context_lost, differs, run_launch
from .shapes import Json, Sample

if TYPE_CHECKING:
    from .controls import Controls

SEED = 20261127


def build_jit(jit: Any, source: str, fn_def: ast.FunctionDef, ordinal: int, workdir: str) -> Any:
    """The mutated kernel as a JIT function of its own: its source written to a file of its own
    with the def on the original's line (Triton reads a kernel's source from its file), run in
    a copy of the original's globals, wrapped by the original's class with its options."""
    path = os.path.join(workdir, "kforge_kernel_mutant_%d.py" % ordinal)
    text = "\n" * (fn_def.lineno - 1) + source
    with open(path, "w") as f:
        f.write(text)
    linecache.checkcache(path)
    scope = dict(getattr(jit.fn, "__globals__", {}))
    exec(compile(text, path, "exec"), scope)  # noqa: S102 - the sample's own code, in its sandbox
    fn = scope[fn_def.name]
    options = {}
    for attr in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"):
        value = getattr(jit, attr, None)
        if value is not None:
            options[attr] = value
    if UNSPECIALISED:
        options["do_not_specialize"] = unspecialised(fn_def, options.get("do_not_specialize"))
    try:
        try:
            return type(jit)(fn, **options)
        except TypeError:
            return type(jit)(fn)
    finally:
        forget(path)


def forget(path: str) -> None:
    """A mutant's file removed once its JIT function holds its source (Triton reads the file
    when the function is made, never after), and its lines dropped from linecache: the sample
    must not read a mutant's source (it would tell an identity control's, the kernel's own, from
    a mutant's: docs/VERIFIER.md, "Control runs")."""
    try:
        os.remove(path)
    except OSError:
        pass
    linecache.cache.pop(path, None)


# Each mutant is compiled without Triton's value specialisation of its integer arguments (an
# integer that is 1, or a multiple of 16: a hint the compiler uses for vector widths and
# constants, never for what is computed), so that one compile serves every launch of the
# replay and of the tests with the same constexprs and dtypes, rather than one compile per
# specialisation (the `tail` variant's n - 1 among them). docs/VERIFIER.md, "Kernel mutants".
# False: specialised as the original (bench/verify/kernel_battery_cost.py compares the two).
UNSPECIALISED = True


def unspecialised(fn_def: ast.FunctionDef, kept: Any = None) -> list[Any]:
    """do_not_specialize for a mutant of fn_def: the original's entries (names or indices)
    and every parameter that is not a constexpr (Triton refuses none: a pointer's entry leaves
    its alignment's specialisation as it is)."""
    out = list(kept or [])
    for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs:
        note = ast.unparse(a.annotation) if a.annotation is not None else ""
        if not note.split(".")[-1].strip("'\"").endswith("constexpr") and a.arg not in out:
            out.append(a.arg)
    return out


class Originals:
    """The original kernel's replays, made once per record and variant: None where the
    original failed or gave different outputs on the same inputs twice (nondeterministic)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.cache = {}
        self.errors = []  # why a replay of the original failed (the first few)

    def get(self, rec: Any, variant: str) -> Any:
        k = (id(rec), variant)
        if k not in self.cache:
            try:
                a = run_launch(rec, variant, SEED, rec.jit, self.state.launch_raw, synchronize)
                b = run_launch(rec, variant, SEED, rec.jit, self.state.launch_raw, synchronize)
                oa = a.outputs()
                self.cache[k] = None if differs(oa, b.outputs()) or a.guard_written() else oa
            except Exception as e:  # noqa: BLE001 - no replay of this launch
                self.cache[k] = None
                if len(self.errors) < 3:
                    self.errors.append("%s (%s): %s: %s" % (rec.kernel, variant, type(e).__name__,
                                                            str(e).strip()[:300]))
        return self.cache[k]


def judge(records: list[Any], mjit: Any, state: Any, originals: Originals,
          variants: tuple[str, ...] = ("same", "tail")) -> tuple[str, Optional[str]]:
    """The equivalence replay of one mutant. Returns (outcome, detail): differs (same shapes),
    differs_tail (only with the sizes one less than a block multiple), equivalent, unsafe,
    stillborn, unjudged (no replay of the original) or lost (the GPU context). `variants`: an
    identity control's replay is the same variant only, as long as a mutant's that differs
    there (the launches it makes, and the time they take, before the run)."""
    judged, found = 0, None
    for variant in variants:
        for rec in records:
            if variant == "tail" and not rec.shrink:
                continue
            base = originals.get(rec, variant)
            if base is None:
                continue
            try:
                m = run_launch(rec, variant, SEED, mjit, state.launch_raw, synchronize)
            except Exception as e:  # noqa: BLE001 - the compiler's or the launch's error
                why = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:300]
                                  if str(e).strip() else "")
                if context_lost(synchronize):
                    return "lost", why
                if "out-of-bounds" in str(e):
                    if variant == "same":
                        return "unsafe", why
                    continue
                return "stillborn", why
            judged += 1
            if m.guard_written():
                if variant == "same":
                    return "unsafe", "it wrote outside its buffers in the replay"
                continue  # only outside the buffers: nothing a test can assert
            if found is None and differs(base, m.outputs()):
                found = "differs" if variant == "same" else "differs_tail"
                if variant == "tail":
                    return found, None
        if found:
            return found, None
    return ("equivalent" if judged else "unjudged"), None


def _entry(site, info, ordinal):
    section, line = section_of(info, site["line"])
    return {"mutant": "k%d" % ordinal, "op": site["op"], "kernel": site["kernel"],
            "line": site["line"], "section": section, "section_line": line,
            "desc": site["desc"], "hint": kernel_ops.HINTS.get(site["op"], "")}


def _run_swapped(sample, state, jit, mjit, poison):
    """The real run's tests once, with mutant mjit launched in place of jit."""
    state.mutant = False  # after the skip-launch run: launches run again
    state.kernel_swap = {id(jit): mjit}
    state.kernel_poison = poison
    state.swapped = 0
    saved, state.outputs = state.outputs, None  # the real run's findings stay as they were
    try:
        return sample["run_tests"](sample)
    finally:
        state.kernel_swap, state.kernel_poison, state.outputs = None, None, saved


class Ctx:
    """What one kernel battery's runs share: the sample, its state, the recorded kernels' defs,
    the original's replays, the real run's written outputs, where mutants are written and how
    many were built (each build a file of its own, a control's identity among them), and
    whether the identity control failed only with its outputs poisoned first."""

    def __init__(self, sample: Sample, defs: dict[str, Any], written: dict[str, Any]) -> None:
        self.sample = sample
        self.state = sample["state"]
        self.defs = defs
        self.originals = Originals(self.state)
        self.written = written
        self.workdir = os.path.dirname(sample["path"])
        self.builds = 0
        self.poison_fails = False

    def build(self, site: dict[str, Any], identity: bool = False) -> Any:
        d, jit = self.defs[site["kernel"]]
        self.builds += 1
        source = kernel_ops.identity(d) if identity else kernel_ops.mutate(d, site)
        return build_jit(jit, source, d, self.builds, self.workdir)

    def run(self, site: dict[str, Any], mjit: Any) -> tuple[Optional[Json], Optional[bool]]:
        """The real run's tests with mjit launched in place of the site's kernel: (the first
        failing result or None, None), or, when they passed and mjit was launched, the same
        again with the outputs it should write poisoned first: (its result, whether it passed
        there too)."""
        jit = self.defs[site["kernel"]][1]
        failed = _run_swapped(self.sample, self.state, jit, mjit, None)
        if failed is not None or not self.state.swapped:
            return failed, None
        # Confirmed with the outputs it should write poisoned first: an element the mutant
        # leaves unwritten may hold the right answer in memory the allocator handed out
        # again, and that must not pass it.
        failed = _run_swapped(self.sample, self.state, jit, mjit, self.written)
        return failed, failed is None


def identity_control(ctx: Ctx, recorder: Any, site: dict[str, Any], where: str,
                     controls: Controls) -> bool:
    """The kernel battery's control run, made as a kernel mutant's is: the kernel of `site`
    built unmutated (kernel_ops.identity) as a file of its own, compiled, replayed against the
    original, launched in its place for the tests and, when they pass, again with its outputs
    poisoned first. A sample cannot tell it from a mutant's run by a build, a compile, the gap
    they make, the order of the runs, or the count of anything (docs/VERIFIER.md, "Control
    runs"). Its first run is the control's result (controls.record); when only the poisoned
    one fails, a kill made only there is no kill (void_poison_kills). True when it passed."""
    t0 = time.monotonic()
    try:
        mjit = ctx.build(site, identity=True)
    except Exception:  # noqa: BLE001 - the verifier's own failure: the plain control instead
        return controls.rerun(ctx.sample, where)
    judge(recorder.of(site["kernel"]), mjit, ctx.state, ctx.originals, ("same",))
    failed, confirmed = ctx.run(site, mjit)
    if confirmed is False:
        ctx.poison_fails = True
        return controls.record("rerun", where, None, t0)
    return controls.record("rerun", where, failed, t0)


def void_poison_kills(kb: Json) -> None:
    """After the identity control passed its tests but failed them with its outputs poisoned
    first: the poisoned run fails the unmutated kernel too, so a mutant it alone killed was not
    told apart by the tests (it survived them): survived, the sample flagged weak_inputs."""
    for e in kb["mutants"]:
        if e.get("result") != "killed" or e.get("confirmed") is not False:
            continue
        e["result"] = "survived"
        e["detail"] = ("killed only with its outputs poisoned first, which fails the unmutated "
                       "kernel too (the control run)")
        kb["killed"] -= 1
        kb["survived"].append({k: e[k] for k in ("mutant", "op", "kernel", "section",
                                                 "section_line", "desc", "hint")})


def _kernel_defs(sample, recorder):
    """The recorded kernels' definitions in the sample's script: ({name: (def, jit)},
    [(name, its mutation sites)])."""
    with open(sample["path"]) as f:
        tree = ast.parse(f.read())
    defs, per_kernel = {}, []
    for name, jit in recorder.kernels():
        code = getattr(getattr(jit, "fn", None), "__code__", None)
        d = kernel_ops.find_def(tree, name.split(".")[-1], code.co_firstlineno if code else None)
        if d is None:
            continue
        defs[name] = (d, jit)
        per_kernel.append((name, kernel_ops.sites(d, name)))
    return defs, per_kernel


def run_kernel_battery(sample: Sample, report: Json, count: int, budget_s: float,
                       run_tests: Callable[[Sample], Optional[Json]],
                       controls: Optional[Controls] = None) -> Json:
    """Up to `count` kernel mutants within `budget_s` seconds; fills report["kernel_battery"].
    run_tests(sample) runs the real run's tests once and returns the first failing test's
    result (None when they all pass). controls (controls.Controls): a control run goes at a
    random place among the mutants; one that fails stops the battery."""
    t0 = time.monotonic()
    state = sample["state"]
    kb = {"mutants": [], "killed": 0, "applicable": 0, "equivalent": 0, "survived": [],
          "not_run": 0}
    report["kernel_battery"] = kb
    recorder = getattr(state, "replays", None)
    if count <= 0:
        return kb
    if recorder is None or not recorder.records or getattr(state, "launch_raw", None) is None:
        kb["stopped"] = "no launch of the sample's kernels was recorded"
        if recorder is not None and recorder.uncaptured:
            kb["uncaptured"] = list(recorder.uncaptured)
        return kb
    defs, per_kernel = _kernel_defs(sample, recorder)
    chosen = kernel_ops.choose(per_kernel, count)
    kb["sites"] = sum(len(s) for _, s in per_kernel)
    ctx = Ctx(sample, defs, dict(state.outputs.written) if state.outputs is not None else {})
    originals = ctx.originals
    sample["run_tests"] = run_tests
    at = controls.place(len(chosen)) if controls is not None else -1
    ran = controls is None  # the control run (or none to make)
    for i, site in enumerate(chosen):
        if i == at:
            ran = True
            if not identity_control(ctx, recorder, site, "kernel mutant %d" % (i + 1), controls):
                kb["not_run"] = len(chosen) - i
                kb["stopped"] = ("a run ran out of GPU memory" if controls.out.get("infrastructure")
                                 else "a control run failed")
                break
        if time.monotonic() - t0 >= budget_s:
            kb["not_run"] = len(chosen) - i
            kb["stopped"] = "the time budget (%g s) was spent" % budget_s
            break
        t1 = time.monotonic()
        entry = _entry(site, sample["info"], i + 1)
        kb["mutants"].append(entry)
        try:
            mjit = ctx.build(site)
        except Exception as e:  # noqa: BLE001 - a mutant that is not valid Python or Triton
            entry.update(result="stillborn", detail="%s: %s" % (type(e).__name__, str(e)[:200]),
                         duration_ms=int((time.monotonic() - t1) * 1000))
            continue
        outcome, why = judge(recorder.of(site["kernel"]), mjit, state, originals)
        entry["replay"] = outcome
        if why:
            entry["detail"] = why
        if outcome == "lost":
            entry["result"] = "error"  # not vocabulary: a mutant's result
            kb["stopped"] = "the GPU context was lost in the replay of %s" % entry["mutant"]
            kb["not_run"] = len(chosen) - i - 1
            ran = True  # nothing runs on a lost context: no control either
            break
        if outcome in ("equivalent", "unsafe", "stillborn", "unjudged"):
            entry["result"] = outcome
            kb["equivalent"] += outcome == "equivalent"
            entry["duration_ms"] = int((time.monotonic() - t1) * 1000)
            continue
        failed, confirmed = ctx.run(site, mjit)
        if confirmed is not None:
            entry["confirmed"] = confirmed
        entry["swapped_launches"] = state.swapped
        entry["duration_ms"] = int((time.monotonic() - t1) * 1000)
        if failed is not None and controls is not None and \
                controls.oom("kernel mutant %d (%s)" % (i + 1, entry["mutant"]), failed):
            # No kill (controls.py): every result is void.
            why = "ran out of GPU memory"
            entry.update(result="error", detail=why)  # not vocabulary: a mutant's result
            kb["not_run"] = len(chosen) - i - 1
            kb["stopped"] = "a run ran out of GPU memory"
            ran = True  # every result is void: no control either
            break
        if failed is not None:
            exc = failed.get("exception") or ""
            if "CompilationError" in exc or "CompileTimeAssertion" in exc:
                entry.update(result="stillborn", detail="%s: %s" % (
                    exc, (failed.get("message") or "").strip().splitlines()[-1:][0][:200]
                    if (failed.get("message") or "").strip() else ""))
                continue
            entry["result"] = "killed"
            entry["by"] = "%s: %s" % (failed.get("name"), exc)
            kb["killed"] += 1
            kb["applicable"] += 1
            if context_lost(synchronize):
                kb["stopped"] = "the GPU context was lost under %s" % entry["mutant"]
                kb["not_run"] = len(chosen) - i - 1
                ran = True
                break
            continue
        if not state.swapped:
            entry["result"] = "not_applicable"
            entry["detail"] = "the tests did not launch the mutated kernel"
            continue
        entry["result"] = "survived"
        kb["applicable"] += 1
        kb["survived"].append({k: entry[k] for k in ("mutant", "op", "kernel", "section",
                                                       "section_line", "desc", "hint")})
        kb["not_run"] = len(chosen) - i - 1
        if kb["not_run"]:
            kb["stopped"] = "first survivor"
        break
    if not ran:  # its place was after the end, a survivor or the budget: it runs all the same
        if chosen:
            identity_control(ctx, recorder, chosen[min(at, len(chosen) - 1)],
                             "after the kernel mutants", controls)
        else:
            controls.rerun(sample, "after the kernel mutants")
    if ctx.poison_fails:
        void_poison_kills(kb)
    if originals.errors:
        kb["replay_errors"] = list(originals.errors)
    kb["duration_ms"] = int((time.monotonic() - t0) * 1000)
    return kb
