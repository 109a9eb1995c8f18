#!/usr/bin/env python3
"""Where a warm worker's child spends its time on a GPU machine (a profiling aid for the verifier).

A parent that has imported torch and triton (as a warm worker has) forks N children at once; each
child runs one distinct sample made from bench/verify/gpu/*.py (a new kernel, so a cold compile)
and reports the time of each phase:

  fork     fork() in the parent to the child's first statement
  ns       unshare(CLONE_NEWNET | CLONE_NEWNS) and a private mount tree (root only)
  cuda     torch.cuda.init() and a first allocation (CUDA context creation)
  import   writing and importing the assembled sample (decorators run)
  test1    the sample's test, first call (Triton compiles its kernels here)
  test2    the same test again (kernels cached in memory)
  reimport the sample imported again as a new module and its test run (the on-disk Triton cache
           serves the kernels): what an in-process mutant run costs at most
  exit     the child's last report to the parent reaping it (CUDA context teardown)

It also times a fresh interpreter importing torch and triton, one and N at a time, and a parent
that compiled a kernel before forking (Triton's compiler initialised once, inherited by the
children). Prints a table and writes JSON (--out).

  python3 bench/verify/gpu_phases.py [--n 1,8,16] [--out phases.json]
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_templates():
    out = []
    d = os.path.join(HERE, "gpu")
    for name in sorted(os.listdir(d)):
        if name.endswith(".py"):
            with open(os.path.join(d, name)) as f:
                out.append((name[:-3], f.read()))
    return out


def instantiate(text, i):
    text = text.replace("@ID@", str(i)).replace("@SCALE@", "%.6f" % (1.0 + i / 64.0))
    return text.replace("# ---- kernel_wrapper ----\n", "").replace("# ---- unitest_code ----\n", "")


def child(script, workdir, ns, wfd, t_fork):
    t = {"fork": time.monotonic() - t_fork}
    mark = time.monotonic()

    def lap(name):
        nonlocal mark
        now = time.monotonic()
        t[name] = now - mark
        mark = now

    try:
        if ns:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x40000000 | 0x00020000) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            libc.mount(None, b"/", None, ctypes.c_ulong((1 << 18) | 16384), None)
        lap("ns")
        import torch
        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        lap("cuda")
        import importlib.util
        path = os.path.join(workdir, "kforge_sample.py")
        with open(path, "w") as f:
            f.write(script)
        sys.path.insert(0, workdir)

        def load(name):
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod

        mod = load("kforge_sample")
        tests = [getattr(mod, n) for n in dir(mod) if n.startswith("test")]
        lap("import")
        for fn in tests:
            fn()
        torch.cuda.synchronize()
        lap("test1")
        for fn in tests:
            fn()
        torch.cuda.synchronize()
        lap("test2")
        mod2 = load("kforge_sample_again")
        for n in dir(mod2):
            if n.startswith("test"):
                getattr(mod2, n)()
        torch.cuda.synchronize()
        lap("reimport")
        t["ok"] = True
    except BaseException as e:  # noqa: B902
        t["ok"] = False
        t["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    os.write(wfd, (json.dumps(t) + "\n").encode())
    os._exit(0)


def run_batch(n, first_id, templates, cache, ns, label):
    """Forks n children at once; returns per-phase means and the batch's wall time."""
    os.environ["TRITON_CACHE_DIR"] = cache
    procs = []
    t0 = time.monotonic()
    for k in range(n):
        name, text = templates[(first_id + k) % len(templates)]
        script = instantiate(text, first_id + k)
        wd = tempfile.mkdtemp(prefix="phase-")
        r, w = os.pipe()
        t_fork = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(script, wd, ns, w, t_fork)
        os.close(w)
        procs.append((pid, r, name))
    reports = []
    for pid, r, name in procs:
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        t_report = time.monotonic()
        os.close(r)
        os.waitpid(pid, 0)
        rep = json.loads(data.decode() or "{}")
        rep["exit"] = time.monotonic() - t_report
        rep["template"] = name
        reports.append(rep)
    wall = time.monotonic() - t0
    bad = [r for r in reports if not r.get("ok")]
    phases = ["fork", "ns", "cuda", "import", "test1", "test2", "reimport", "exit"]
    mean = {p: statistics.mean(r.get(p, 0) for r in reports) for p in phases}
    row = {"label": label, "n": n, "wall_s": wall, "per_sample_s": wall / n, "mean": mean,
           "failed": [r.get("error") for r in bad]}
    by_t = {}
    for r in reports:
        by_t.setdefault(r["template"], []).append(r.get("test1", 0))
    row["test1_by_template"] = {k: statistics.mean(v) for k, v in by_t.items()}
    print("%-28s n=%-3d wall=%6.2fs per_sample=%5.2fs  " % (label, n, wall, wall / n) +
          " ".join("%s=%.3f" % (p, mean[p]) for p in phases) +
          ("  FAILED %d: %s" % (len(bad), bad[0].get("error")) if bad else ""), flush=True)
    return row


def fresh_import(py, n):
    t0 = time.monotonic()
    ps = [subprocess.Popen([py, "-c", "import torch, triton, triton.language, numpy"])
          for _ in range(n)]
    for p in ps:
        p.wait()
    wall = time.monotonic() - t0
    print("%-28s n=%-3d wall=%6.2fs per_sample=%5.2fs" % ("fresh import torch+triton", n, wall,
                                                         wall / n), flush=True)
    return {"label": "fresh import", "n": n, "wall_s": wall, "per_sample_s": wall / n}


def prewarm(cc):
    """Compiles a small kernel for this GPU without touching CUDA (no context in the parent)."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    path = os.path.join(tempfile.mkdtemp(prefix="prewarm-"), "kforge_prewarm.py")
    with open(path, "w") as f:
        f.write("import triton\nimport triton.language as tl\n\n@triton.jit\n"
                "def kforge_prewarm(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
                "    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                "    m = i < n\n"
                "    tl.store(y_ptr + i, tl.exp(tl.load(x_ptr + i, mask=m)) + 1.0, mask=m)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("kforge_prewarm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src = ASTSource(fn=mod.kforge_prewarm,
                    signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": 1024})
    t0 = time.monotonic()
    triton.compile(src, target=GPUTarget("cuda", cc, 32))
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="1,8,16")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    ns_list = [int(x) for x in args.n.split(",")]
    t0 = time.monotonic()
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    import numpy  # noqa: F401
    print("parent import torch+triton: %.2fs (torch %s, triton %s)" % (
        time.monotonic() - t0, torch.__version__, triton.__version__), flush=True)
    cc = int(subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.split()[0].replace(".", ""))
    templates = load_templates()
    root = tempfile.mkdtemp(prefix="phases-")
    rows = []
    rows.append(fresh_import(sys.executable, 1))
    rows.append(fresh_import(sys.executable, 8))
    ident = 0
    is_root = os.geteuid() == 0
    for n in ns_list:
        rows.append(run_batch(n, ident, templates, os.path.join(root, "c%d" % ident), False,
                              "plain, cold cache"))
        ident += n
    rows.append(run_batch(8, ident, templates, os.path.join(root, "c%d" % ident), is_root,
                          "with namespaces, cold"))
    ident += 8
    # The same kernels again with their cache warm (the second run of an A/B pair).
    warm_cache = os.path.join(root, "c%d" % ident)
    rows.append(run_batch(8, ident, templates, warm_cache, False, "plain, cold (fill)"))
    rows.append(run_batch(8, ident, templates, warm_cache, False, "plain, warm cache"))
    ident += 8
    try:
        os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "prewarm")
        s = prewarm(cc)
        print("parent prewarm compile (no CUDA): %.2fs" % s, flush=True)
        rows.append({"label": "prewarm", "compile_s": s})
        for n in ns_list:
            rows.append(run_batch(n, ident, templates, os.path.join(root, "c%d" % ident), False,
                                  "prewarmed parent, cold"))
            ident += n
    except Exception as e:  # noqa: BLE001
        print("prewarm failed: %s: %s" % (type(e).__name__, e), flush=True)
        rows.append({"label": "prewarm", "error": str(e)})
    try:
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        from triton.runtime import driver
        t1 = time.monotonic()
        d = driver.active
        getattr(d, "utils", None)
        print("parent triton driver (NVML check): %.2fs, cuda initialised in parent: %s" % (
            time.monotonic() - t1, torch.cuda.is_initialized()), flush=True)
        rows.append(run_batch(8, ident, templates, os.path.join(root, "c%d" % ident), False,
                              "prewarm+driver parent, cold"))
        ident += 8
    except Exception as e:  # noqa: BLE001
        print("driver preload failed: %s: %s" % (type(e).__name__, e), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
