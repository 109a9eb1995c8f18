#!/usr/bin/env python3
"""The mutant corpus (tests/verify/mutants) through the harness package alone: no pool, no
sandbox, one process per test. A quick check of the output mutants and the kernel battery on a
GPU machine before the full GPU test (VerifyGpu.MutantCorpus in tests/verify/gpu_test.cpp, run by
scripts/gpu/check), the corpus's catch rate for docs/BENCHMARKS.md, and (--cost) the cost of the
kernel battery: the strong tests run without it and with it, each with a Triton cache of its own
that starts empty (every compile cold, as for a new sample).

  python3 bench/verify/mutant_corpus.py [--corpus DIR]... [--mutants tail,interior,...]
                                        [--kernel-mutants N] [--kernel-time S] [--jobs N]
                                        [--cost] [--no-rates] [--check] [--json FILE]

A corpus is a folder laid out as tests/verify/mutants (a folder per kernel: code.py, wrapper.py,
weak_*.py, strong_*.py); --corpus may be given several times (tests/verify/strong_g holds strong
tests of real TritonBench-G kernels). Prints one line per test (expected, flagged or verified,
the scores, the survivors) and a summary; exits 1 when a weak test is not flagged or a strong one
not verified. A weak test counts as flagged by what the pool flags: mutant_survived, weak_test,
weak_inputs or constant_output. --cost then runs the strong tests with the kernel battery off
(kernel_mutants 0) and on, each configuration with an empty TRITON_CACHE_DIR, and prints per
configuration the verdict counts, seconds per passing sample, samples/s, the mutant runs'
seconds and the kernel battery's killed/applicable/equivalent; --no-rates skips the first pass.
--check needs no GPU: every test is assembled by the harness's own loader (kforge_harness.
assembly) and must parse and define a test function that calls something code.py or wrapper.py
defines, and code.py must define a Triton kernel (tests/verify/CMakeLists.txt runs it in CI).
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "verify", "mutants")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
TIMEOUT_S = 300.0  # per test process (--timeout)

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import time
t0 = time.monotonic()
from kforge_harness.runner import kernel_options, run_sample
from kforge_harness.mutants import run_mutants, wants_mutant_run
req = json.load(open(sys.argv[2]))
os.chdir(sys.argv[3])
rep = {}
sample = run_sample(req, rep)
out = {"verdict": rep.get("verdict"), "detail": rep.get("detail"), "coverage": rep.get("coverage"),
       "real_s": time.monotonic() - t0}
if sample is not None and wants_mutant_run(rep):
    second = {}
    t1 = time.monotonic()
    run_mutants(sample, second, req["mutants"], kernel_options(req))
    out["mutant_s"] = time.monotonic() - t1
    out["skip_verdict"] = second.get("verdict")
    out["battery"] = second.get("battery")
    out["kernel_battery"] = second.get("kernel_battery")
sys.stdout.flush()
os.write(int(sys.argv[4]), (json.dumps(out, default=str) + "\n").encode())
"""


def run_one(kernel, test, mutants, kernel_mutants=(0, 1.0), env=None, corpus=None):
    d = os.path.join(corpus or CORPUS, kernel)
    req = {"code": open(os.path.join(d, "code.py")).read(),
           "kernel_wrapper": open(os.path.join(d, "wrapper.py")).read(),
           "unitest_code": open(os.path.join(d, test)).read(), "mutants": mutants,
           "kernel_mutants": {"count": kernel_mutants[0], "time_s": kernel_mutants[1]}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        with open(path, "w") as f:
            json.dump(req, f)
        r, w = os.pipe()
        t0 = time.monotonic()
        # The report comes back on a pipe of its own (the write end passed by number).
        p = subprocess.Popen([sys.executable, "-c", CHILD, HARNESS, path, tmp, str(w)],
                             pass_fds=(w,), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        os.close(w)
        # A sample that hangs is killed (a timeout, as the pool's would be).
        timer = threading.Timer(TIMEOUT_S, p.kill)
        timer.start()
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        os.close(r)
        log = p.communicate()[0].decode("utf-8", "replace")
        timer.cancel()
        took = time.monotonic() - t0
    try:
        res = json.loads(data.decode())
    except ValueError:
        res = {"verdict": "crashed" if p.returncode != -9 else "timeout",
               "detail": log[-2000:]}
    res["seconds"] = took
    return res


def score(res):
    """(flagged, killed, applicable, survivors) as the pool would decide them; the kernel
    battery's survivors are named k:<op>, a constant output "constant_output"."""
    if res.get("verdict") != "passed":
        return None
    survivors, killed, applicable = [], 0, 0
    if (res.get("coverage") or {}).get("constant_outputs"):
        survivors.append("constant_output")
    if res.get("skip_verdict") == "passed":
        return True, 0, 1, survivors + ["skip_launch"]
    if "skip_verdict" in res:
        killed, applicable = 1, 1
    for e in (res.get("battery") or {}).get("mutants", []):
        if e["result"] == "killed":
            killed += 1
            applicable += 1
        elif e["result"] == "survived":
            applicable += 1
            survivors.append(e["mutant"] + ("@%d" % e["launch"] if "launch" in e else ""))
    for s in (res.get("kernel_battery") or {}).get("survived", []):
        survivors.append("k:" + s["op"])
    return bool(survivors), killed, applicable, survivors


def kernel_line(res):
    kb = res.get("kernel_battery")
    if not kb:
        return ""
    counts = {}
    for e in kb.get("mutants", []):
        counts[e.get("result")] = counts.get(e.get("result"), 0) + 1
    return " kernel %d/%d %s" % (kb.get("killed", 0), kb.get("applicable", 0),
                                 json.dumps(counts, sort_keys=True))


def pool_verdict(res):
    """What the pool would record: verified, or the flags (mutant_survived, weak_test,
    weak_inputs, constant_output), or the real run's verdict when it did not pass."""
    if res.get("verdict") != "passed":
        return res.get("verdict") or "crashed"
    s = score(res)
    flags = []
    if "constant_output" in s[3]:
        flags.append("constant_output")
    if res.get("skip_verdict") == "passed":
        flags.append("mutant_survived")
    elif any(not m.startswith("k:") and m != "constant_output" for m in s[3]):
        flags.append("weak_test")
    if any(m.startswith("k:") for m in s[3]):
        flags.append("weak_inputs")
    return "+".join(flags) or "verified"


def cost(cases, mutants, args):
    """The strong tests without and with the kernel battery, each configuration with an empty
    Triton cache of its own. Returns the summary lines."""
    strong = [c for c in cases if c[2].startswith("strong_")]
    lines, results = [], {}
    for label, km in (("off", (0, 1.0)), ("on", (args.kernel_mutants, args.kernel_time))):
        cache = tempfile.mkdtemp(prefix="triton-cache-")
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            res = list(ex.map(lambda c: run_one(c[1], c[2], mutants, km, env, c[0]), strong))
        wall = time.monotonic() - t0
        results[label] = res
        verdicts = {}
        for (corpus, k, t), r in zip(strong, res):
            v = pool_verdict(r)
            verdicts[v] = verdicts.get(v, 0) + 1
            kb = r.get("kernel_battery") or {}
            print("  %-3s %-40s %6.1fs %-16s real %.1fs mutants %.1fs%s%s" % (
                label, k + "/" + t, r["seconds"], v, r.get("real_s", 0), r.get("mutant_s", 0),
                kernel_line(r), "" if v == "verified" else " " + json.dumps(
                    {"detail": (r.get("detail") or "")[:300], "survivors": (score(r) or
                     (0, 0, 0, []))[3], "stopped": kb.get("stopped")}, default=str)))
        passing = [r for r in res if r.get("verdict") == "passed"]
        n = max(len(passing), 1)
        per = sum(r["seconds"] for r in passing) / n
        mut = sum(r.get("mutant_s", 0) for r in passing) / n
        kbs = [r.get("kernel_battery") or {} for r in passing]
        outcomes = {}
        for kb in kbs:
            for e in kb.get("mutants", []):
                outcomes[e.get("result")] = outcomes.get(e.get("result"), 0) + 1
        kb_ms = sum(kb.get("duration_ms", 0) for kb in kbs) / n / 1000.0
        line = ("cost kernel battery %-3s: %d strong, verdicts %s; %.2f s per passing sample "
                "(mutant runs %.2f s, of which kernel battery %.2f s), %.3f samples/s with %d "
                "jobs, wall %.1f s; kernel mutants killed %d / applicable %d, equivalent %d, "
                "outcomes %s"
                % (label, len(strong), json.dumps(verdicts, sort_keys=True), per, mut, kb_ms,
                   len(strong) / wall, args.jobs, wall, sum(kb.get("killed", 0) for kb in kbs),
                   sum(kb.get("applicable", 0) for kb in kbs),
                   sum(kb.get("equivalent", 0) for kb in kbs), json.dumps(outcomes,
                                                                          sort_keys=True)))
        print(line, flush=True)
        lines.append(line)
    if args.json:
        with open(args.json + ".cost.json", "w") as f:
            json.dump({label: [{"case": k + "/" + t, "corpus": c, "pool_verdict": pool_verdict(r),
                                **r} for (c, k, t), r in zip(strong, res)]
                       for label, res in results.items()}, f, default=str, indent=1)
    return lines


def find_cases(corpora):
    """(corpus, kernel, test file) of every weak_*.py and strong_*.py under each corpus."""
    return [(c, k, t) for c in corpora for k in sorted(os.listdir(c))
            if os.path.isdir(os.path.join(c, k))
            for t in sorted(os.listdir(os.path.join(c, k)))
            if t.startswith(("weak_", "strong_")) and t.endswith(".py")]


def check(cases):
    """Without a GPU: each test assembled by the harness's loader, as a sample runs. Returns the
    number of bad tests (each named with why)."""
    import ast
    sys.path.insert(0, HARNESS)
    from kforge_harness.assembly import assemble, code_kernels, find_tests, section_of
    bad = 0
    for corpus, k, t in cases:
        d = os.path.join(corpus, k)
        where = os.path.relpath(os.path.join(d, t), ROOT)
        why = None
        try:
            files = [open(os.path.join(d, f)).read() for f in ("code.py", "wrapper.py", t)]
            script, info = assemble(*files, {})
            try:
                tree = ast.parse(script)
            except SyntaxError as e:
                section, line = section_of(info, e.lineno)
                raise SyntaxError("%s line %s: %s" % (
                    {"unitest_code": t, "kernel_wrapper": "wrapper.py"}.get(section, "code.py"),
                    line, e.msg)) from None
            tests, _ = find_tests(tree)
            kernels = code_kernels(files[0])
            names = {n.id for n in ast.walk(ast.parse(files[2])) if isinstance(n, ast.Name)}
            if not tests:
                why = "no test function (def test_...)"
            elif not kernels:
                why = "code.py defines no Triton kernel"
            elif not names & {n.name for n in tree.body
                              if isinstance(n, (ast.FunctionDef, ast.ClassDef))} - set(tests):
                why = "the test calls nothing that code.py or wrapper.py defines"
        except (OSError, SyntaxError) as e:
            why = "%s: %s" % (type(e).__name__, e)
        if why:
            bad += 1
            print("BAD %s: %s" % (where, why))
    print("check: %d tests in %d corpora, %d bad" % (len(cases), len({c for c, _, _ in cases}),
                                                   bad))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", default="tail,interior,permute,permute_row,scale,zero")
    ap.add_argument("--kernel-mutants", type=int, default=8)
    ap.add_argument("--kernel-time", type=float, default=30.0)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--cost", action="store_true", help="measure the kernel battery's cost")
    ap.add_argument("--no-rates", action="store_true", help="with --cost: only the cost runs")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per test process")
    ap.add_argument("--check", action="store_true", help="CPU only: each test assembles")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--corpus", action="append", help="a folder laid out as tests/verify/mutants "
                    "(repeatable; default tests/verify/mutants)")
    args = ap.parse_args()
    globals()["TIMEOUT_S"] = args.timeout
    corpora = [os.path.abspath(c) for c in (args.corpus or [CORPUS])]
    for c in corpora:
        if not os.path.isdir(c):
            print("no corpus folder %s" % c, file=sys.stderr)
            return 2
    mutants = [m for m in args.mutants.split(",") if m]
    cases = find_cases(corpora)
    if args.check:
        return 1 if check(cases) else 0
    bad = 0
    if not args.no_rates:
        bad = rates(cases, mutants, args)
    if args.cost:
        cost(cases, mutants, args)
    return 1 if bad else 0


def rates(cases, mutants, args):
    """Every test with the battery on; prints a line per test and the rates. Returns the number
    of tests not as expected."""
    bad = 0
    weak = strong = caught = verified = 0
    by = {}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run_one(c[1], c[2], mutants,
                                                 (args.kernel_mutants, args.kernel_time),
                                                 None, c[0]), cases))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"case": k + "/" + t, **r} for (_, k, t), r in zip(cases, results)], f,
                      default=str, indent=1)
    for (_, k, t), res in zip(cases, results):
        s = score(res)
        is_weak = t.startswith("weak_")
        if s is None:
            ok = False
            line = "real run %s: %s" % (res.get("verdict"), (res.get("detail") or "")[:300])
        else:
            flagged, killed, applicable, survivors = s
            ok = flagged if is_weak else not flagged and killed == applicable
            line = "%s %d/%d survived=%s na=%s%s" % (
                "flagged" if flagged else "verified", killed, applicable, survivors,
                (res.get("battery") or {}).get("not_applicable"), kernel_line(res))
            for m in survivors:
                by[m] = by.get(m, 0) + 1
        if is_weak:
            weak += 1
            caught += ok
        else:
            strong += 1
            verified += ok
        bad += not ok
        print("%-4s %-32s %5.1fs %s" % ("ok" if ok else "BAD", k + "/" + t, res["seconds"], line))
    print("weak flagged %d/%d, strong verified %d/%d, survivors %s, %.0f s"
          % (caught, weak, verified, strong, json.dumps(by, sort_keys=True),
             time.monotonic() - t0), flush=True)
    return bad


if __name__ == "__main__":
    sys.exit(main())
