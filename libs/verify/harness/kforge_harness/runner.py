"""One run of a sample: assemble, import, run its tests, fill the report."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
import time
import traceback
from typing import Any, Callable, Optional

from . import MAX_MESSAGE, TRACEBACK_LINES, blind
from .assembly import (PREAMBLE_MODULES, assemble, code_kernels, find_tests, module_available,
                       section_of)
from .crosscompile import Specs
from .gpusync import synchronize
from .guard import GUARD
from .kernel_replay import Recorder
from .outputs import Outputs
from .report_schema import VERDICT
from .shapes import Json, Sample
from .shims import install_shims
from .timing import Largest
from .triton_hooks import TritonState, install_triton_hooks

# The name the sample's script is imported under, in every run (the real run, the skip-launch
# and control runs, a mutant process of its own): a name per run would tell them apart.
MODULE = "kforge_sample"
# The seed of Python's, torch's and numpy's global random generators when the sample's script is
# imported, in every run that imports it (the real run, the skip-launch run, a fresh control) and
# every process: a test that draws its inputs without a seed of its own sees the same inputs, so two runs over the same sample give the same verdict and flags (an
# index drawn out of range in one run only made out_of_bounds come and go).
SAMPLE_SEED = 20261128


def seed_generators() -> None:
    """Seeds the global generators a sample's test may draw from (SAMPLE_SEED)."""
    import random
    random.seed(SAMPLE_SEED)
    for name in ("torch", "numpy"):
        try:
            mod = sys.modules.get(name) or __import__(name)
        except ImportError:
            continue
        try:
            mod.manual_seed(SAMPLE_SEED) if name == "torch" else mod.random.seed(SAMPLE_SEED)
        except Exception:  # noqa: BLE001 - a generator that cannot be seeded keeps its state
            pass


def generator_states() -> Json:
    """The global generators' states as a sample's tests find them (Python's, numpy's, torch's
    CPU and, once CUDA is up, each CUDA generator's): taken after the real run's import, given
    back before every later run of its tests (put_generators)."""
    import random
    out: Json = {"random": random.getstate()}
    np = sys.modules.get("numpy")
    if np is not None and hasattr(getattr(np, "random", None), "get_state"):
        out["numpy"] = np.random.get_state()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_rng_state"):
        out["torch"] = torch.get_rng_state()
        try:
            if torch.cuda.is_initialized():
                out["cuda"] = torch.cuda.get_rng_state_all()
        except Exception:  # noqa: BLE001 - a torch without CUDA
            pass
    return out


def put_generators(saved: Optional[Json]) -> None:
    """Gives the global generators the states generator_states() took, so every run of the
    tests after the real run (a control, an output or kernel mutant) draws the real run's
    inputs wherever the lot put it among the others (issue 52: flags that repeat). A CUDA
    generator not up when they were taken is seeded as the import left it (SAMPLE_SEED)."""
    if saved is None:
        seed_generators()
        return
    import random
    random.setstate(saved["random"])
    np = sys.modules.get("numpy")
    if "numpy" in saved and np is not None:
        np.random.set_state(saved["numpy"])
    torch = sys.modules.get("torch")
    if "torch" not in saved or torch is None:
        return
    try:
        torch.set_rng_state(saved["torch"])
        if "cuda" in saved:
            torch.cuda.set_rng_state_all(saved["cuda"])
        elif torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(SAMPLE_SEED)
    except Exception:  # noqa: BLE001 - a generator that cannot be set keeps its state
        pass


def _tail(text, limit=MAX_MESSAGE):
    return text if len(text) <= limit else "..." + text[-limit:]


def describe_exception(e: BaseException, tb: Any, info: dict[str, Any]) -> Json:
    lines = traceback.format_exception(type(e), e, tb)
    tb_text = "".join(lines).splitlines()
    where = None
    for frame in reversed(traceback.extract_tb(tb)):
        if frame.filename.endswith("kforge_sample.py"):
            section, line = section_of(info, frame.lineno)
            where = {"section": section, "line": line, "function": frame.name}
            break
    msg = str(e)
    return {"exception": type(e).__name__, "message": msg[:MAX_MESSAGE],
            "traceback": "\n".join(tb_text[-TRACEBACK_LINES:])[-8000:], "where": where}


def _status_for(exc):
    return VERDICT.failed if isinstance(exc, AssertionError) else VERDICT.error


def run_sample(request: Json, report: Json) -> Optional[Sample]:
    """Assembles, checks and runs the sample. Fills report; never raises. Returns what a mutant
    run of the same sample needs (None when the sample did not get as far as its tests)."""
    t0 = time.monotonic()
    code = request.get("code")
    wrapper = request.get("kernel_wrapper")
    test = request.get("unitest_code")
    present = {mod: module_available(mod) for mod, _ in PREAMBLE_MODULES}
    report["modules"] = {m: v for m, v in present.items()}
    try:
        script, info = assemble(code, wrapper, test, present)
    except SyntaxError as e:
        report.update(verdict=VERDICT.invalid, phase="parse",
                      detail="syntax error in %s line %s: %s" % (
                          getattr(e, "kforge_section", "code"), e.lineno, e.msg))
        return None
    report["script"] = script
    report["code_kernels"] = code_kernels(code)
    report["removed"] = info["removed"]
    report["sections"] = info["sections"]
    try:
        tree = ast.parse(script)
    except SyntaxError as e:
        section, line = section_of(info, e.lineno)
        report.update(verdict=VERDICT.invalid, phase="parse",
                      detail="syntax error in %s line %s: %s" % (section, line, e.msg))
        return None
    tests, called = find_tests(tree)
    if not tests:
        report.update(verdict=VERDICT.invalid, phase="parse", detail="no test function (def test_...)")
        return None
    path = os.path.join(os.getcwd(), "kforge_sample.py")
    with open(path, "w") as f:
        f.write(script)
    state = TritonState(path, bool(request.get("mutant")), request.get("autotune", "single"))
    if not state.mutant:
        state.outputs = Outputs()  # the real run: which buffers each launch writes
        if kernel_options(request)[0] > 0 or request.get("bounds_check"):
            # and its first launches, for the kernel battery and the out-of-bounds check
            state.replays = Recorder()
        if request.get("cross_compile"):
            state.specs = Specs()  # and the specialisation each launch compiled
        if (request.get("timing") or {}).get("enabled"):
            state.timing = Largest()  # and each kernel's largest launch, to time it
    else:
        state.skip_outputs = dict(request.get("skip_outputs") or {})  # the real run's outputs
    install_triton_hooks(state)
    install_shims(state, script)
    fraction = request.get("gpu_memory_fraction") or 0
    torch = sys.modules.get("torch")
    if fraction > 0 and torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.set_per_process_memory_fraction(float(fraction))
                report["gpu_memory_fraction"] = fraction
        except Exception as e:
            report["gpu_memory_fraction"] = "failed: %s" % e
    sys.path.insert(0, os.getcwd())
    sys.argv = [path]  # the same in every process that runs the sample, not the harness's own
    GUARD.arm()  # before the sample's first line: the identities it could replace
    blind.start()
    sample = {"path": path, "info": info, "tests": tests, "called": called, "state": state}
    execute(sample, MODULE, report, t0, "skip_launch" if state.mutant else "run")
    return sample


def kernel_options(request: Json) -> tuple[int, float]:
    """(count, time budget in s) of the request's kernel battery ("kernel_mutants": {"count": N,
    "time_s": T}); (0, 0) when the request has none. Raises ValueError on anything else: the
    pool sends both keys, and a request it did not mean is refused, not run without them."""
    km = request.get("kernel_mutants")
    if km is None:
        return 0, 0.0
    if not isinstance(km, dict) or set(km) != {"count", "time_s"}:
        raise ValueError("kernel_mutants must be {count, time_s}: %r" % (km,))
    count, time_s = km["count"], km["time_s"]
    if type(count) is not int or count < 0 or type(time_s) not in (int, float) or time_s <= 0:
        raise ValueError("kernel_mutants: count must be an integer >= 0 and time_s a number > 0: "
                         "%r" % (km,))
    return count, float(time_s)


def execute(sample: Sample, module_name: str, report: Json, t0: float, phase: str = "run",
            keep: bool = True) -> None:
    """Imports the written script as module_name and runs its tests; fills report. The module
    of a run that is not a mutant run becomes sample["module"] unless keep is false (a control
    run's). phase: what the run is, for guard's findings."""
    state, info, tests, called = sample["state"], sample["info"], sample["tests"], sample["called"]
    results = []
    report["tests"] = results
    report["phase"] = "import"
    seed_generators()  # every import of the script draws what the real run's did
    spec = importlib.util.spec_from_file_location(module_name, sample["path"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    me = os.getpid()
    t_import = time.monotonic()
    try:
        try:
            blind.call(phase, spec.loader.exec_module, module)
            synchronize()
        finally:
            if os.getpid() != me:
                os._exit(0)  # a process the sample forked must not report
    except BaseException as e:  # noqa: B902 - SystemExit and KeyboardInterrupt included
        d = describe_exception(e, e.__traceback__, info)
        d.update(name="<import>", status=_status_for(e),
                 duration_ms=int((time.monotonic() - t_import) * 1000))
        results.append(d)
        missing = _missing_environment_module(e, report)
        if missing:
            report["environment"] = ("the verifier's Python has no module '%s' (%s)"
                                     % (missing, sys.executable))
        _finish(report, state, tests, t0)
        return
    import_ms = int((time.monotonic() - t_import) * 1000)
    if not state.mutant and keep:
        sample["module"] = module  # the real run's: the output mutants run its tests again
        sample["generators"] = generator_states()  # and draw what its tests drew
    report["import_ms"] = import_ms
    report["phase"] = "tests"
    for name in tests:
        fn = getattr(module, name, None)
        if name in called:
            results.append({"name": name, "status": VERDICT.passed, "ran_at_import": True,
                            "duration_ms": import_ms})
            continue
        if not callable(fn):
            continue
        cases = test_cases(fn)
        if cases is None:
            results.append({"name": name, "status": VERDICT.skipped,
                            "note": "takes arguments that nothing provides"})
            continue
        for suffix, kwargs in cases:
            results.append(run_test(name + suffix, fn, kwargs, me, info, phase))
    _finish(report, state, tests, t0)


def test_cases(fn: Callable[..., Any]) -> Optional[list[tuple[str, dict[str, Any]]]]:
    """[(suffix, kwargs)] for a test function: one call without arguments, or one per
    combination of its pytest.mark.parametrize marks; None when it needs arguments nothing
    provides."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [("", {})]
    required = [p.name for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not required:
        return [("", {})]
    combos = [{}]
    for mark in getattr(fn, "pytestmark", []) or []:
        if getattr(mark, "name", None) != "parametrize" or len(mark.args) < 2:
            continue
        names, values = mark.args[0], list(mark.args[1])
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        rows = []
        for v in values:
            v = getattr(v, "values", v)  # pytest.param(...)
            if len(names) == 1 and not (isinstance(v, (tuple, list)) and len(v) == 1):
                v = (v,)
            rows.append(dict(zip(names, v)))
        combos = [{**c, **r} for c in combos for r in rows]
    if any(not all(n in c for n in required) for c in combos):
        return None
    if len(combos) == 1:
        return [("", combos[0])]
    return [("[%d]" % i, c) for i, c in enumerate(combos)]


def run_test(name: str, fn: Callable[..., Any], kwargs: dict[str, Any], me: int,
             info: dict[str, Any], phase: str = "run") -> Json:
    """One test function called (blind.call: the same way in every run), its result entry."""
    t1 = time.monotonic()
    entry = {"name": name}
    try:
        try:
            blind.call(phase, fn, **kwargs)  # a coroutine test is run to its end there
            synchronize()
            entry["status"] = VERDICT.passed
        finally:
            if os.getpid() != me:
                os._exit(0)  # a process the sample forked must not report
    except BaseException as e:  # noqa: B902 - SystemExit and KeyboardInterrupt included
        entry.update(describe_exception(e, e.__traceback__, info))
        entry["status"] = _status_for(e)
    entry["duration_ms"] = int((time.monotonic() - t1) * 1000)
    return entry


def _missing_environment_module(exc, report):
    """The module a sample could not import when it is one every sample may assume (torch,
    triton, numpy) and the verifier's Python lacks it: the verdict then says nothing about the
    sample, only that this machine cannot run it. None otherwise."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    if top in {m.split(".")[0] for m, _ in PREAMBLE_MODULES} and \
            not report.get("modules", {}).get(top, False):
        return top
    return None


def failing(results: list[Json]) -> list[Json]:
    """The test results that neither passed nor were skipped, in order."""
    return [r for r in results if r.get("status") not in (VERDICT.passed, VERDICT.skipped)]


def _finish(report, state, tests, t0):
    results = report.get("tests", [])
    bad = failing(results)
    ran = [r for r in results if r.get("status") != VERDICT.skipped]
    if bad:
        first = bad[0]
        report["verdict"] = first["status"]
        where = first.get("where") or {}
        loc = ""
        if where.get("section"):
            loc = " (%s line %s)" % (where["section"], where.get("line"))
        msg = first.get("message", "")
        if first["status"] == VERDICT.failed:
            report["detail"] = "%s: AssertionError%s%s" % (
                first["name"], (": " + msg.splitlines()[0][:500]) if msg else "", loc)
        else:
            report["detail"] = "%s: %s%s%s" % (
                first["name"], first.get("exception"),
                (": " + msg.splitlines()[0][:500]) if msg.strip() else "", loc)
    elif not ran:
        report["verdict"] = VERDICT.invalid
        report["detail"] = "no test function could run (all take arguments nothing provides)"
    else:
        report["verdict"] = VERDICT.passed
        report["detail"] = "%d test%s passed" % (len(ran), "" if len(ran) == 1 else "s")
    report["triton"] = {"available": state.available, "version": state.version,
                        "kernels": list(state.kernels), "launches": dict(state.launches),
                        "autotune": state.autotune, "autotune_used": list(state.autotune_used),
                        "mutant": state.mutant, "compile": dict(state.compile),
                        "launcher": dict(state.launcher)}
    if state.outputs is not None and not state.mutant:
        report["coverage"] = state.outputs.facts()
    report["shims"] = list(state.shims)
    report["duration_ms"] = int((time.monotonic() - t0) * 1000)
    report["phase"] = "done"

