#!/usr/bin/env python3
"""Launch errors under kforge's Triton hooks against plain Triton (docs/VERIFIER.md, "What a
sample sees"): each case is a small sample whose launch fails; it runs once in a plain Python
process and once with the harness's hooks installed (TritonState as the verifier makes it, single-
config autotuning), and the two error texts (type and message, first line) must be the same, so
the repair prompt gets Triton's words with the kernel's name, never the verifier's internals.

usage: launch_errors.py [--json OUT.json]     (on a machine with torch, triton and a GPU)
       launch_errors.py --fake                  (the CPU stand-in for Triton, lists for tensors:
                                                 ctest verify.launch_errors)
Exit status 1 when a case differs.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "libs", "verify", "harness")
FAKE = os.path.join(HERE, "..", "..", "tests", "verify", "fake_triton")

PRELUDE = """
import torch, triton
import triton.language as tl
x = torch.randn(4096, device="cuda")
y = torch.empty_like(x)
N = x.numel()
"""
FAKE_PRELUDE = """
import triton
import triton.language as tl
x = [float(i % 7) for i in range(4096)]
y = [0.0] * 4096
N = len(x)
"""

CASES = {
    # An autotuned kernel whose caller passes a meta-parameter the autotuner sets.
    "autotune_conflict": PRELUDE + """
@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128}), triton.Config({"BLOCK_SIZE": 256})],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    o = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)
scale_kernel[(32,)](x, y, N, BLOCK_SIZE=128)
""",
    # The same with one config (no benchmarking: the duplicate reaches the launch).
    "autotune_conflict_one_config": PRELUDE + """
@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    o = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)
scale_kernel[(32,)](x, y, N, BLOCK_SIZE=128)
""",
    "missing_argument": PRELUDE + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)
copy_kernel[(32,)](x, y, BLOCK=128)
""",
    "unknown_keyword": PRELUDE + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)
copy_kernel[(32,)](x, y, N, BLOCK=128, BLOKC=3)
""",
    "duplicate_keyword": PRELUDE + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)
copy_kernel[(32,)](x, y, N, 128, BLOCK=128)
""",
    "compile_error": PRELUDE + """
@triton.jit
def broken_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) * undefined_name, mask=o < n)
broken_kernel[(32,)](x, y, N, BLOCK=128)
""",
    "not_constexpr_block": PRELUDE + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)
copy_kernel[(32,)](x, y, N, 128)
""",
    "no_grid": PRELUDE + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)
copy_kernel(x, y, N, BLOCK=128)
""",
}

RUNNER = r"""
import os, runpy, sys, traceback
path, mode, harness = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "hooked":
    sys.path.insert(0, harness)
    from kforge_harness.triton_hooks import TritonState, install_triton_hooks
    install_triton_hooks(TritonState(path, False, "single"))
try:
    runpy.run_path(path, run_name="__main__")
    print("NO ERROR")
except BaseException as e:
    first = (str(e).strip().splitlines() or [""])
    print("%s: %s" % (type(e).__name__, " | ".join(l.strip() for l in first[:6])))
"""


def run(path, mode, fake=False):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        if fake:
            env["PYTHONPATH"] = os.path.abspath(FAKE) + os.pathsep + env.get("PYTHONPATH", "")
        p = subprocess.run([sys.executable, "-c", RUNNER, path, mode, HARNESS], env=env,
                           capture_output=True, text=True, timeout=300)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    return lines[-1] if lines else "no output; stderr: " + p.stderr.strip()[-300:]


def main():
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    fake = "--fake" in sys.argv
    results, bad = {}, 0
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, src in CASES.items():
            paths[name] = os.path.join(d, name + ".py")
            with open(paths[name], "w") as f:
                f.write(src.replace(PRELUDE, FAKE_PRELUDE) if fake else src)
        # Every case's two runs at once (each compiles its kernel: about a minute in turn).
        with concurrent.futures.ThreadPoolExecutor(2 * len(CASES)) as pool:
            runs = {(name, mode): pool.submit(run, path, mode, fake)
                    for name, path in paths.items() for mode in ("plain", "hooked")}
        for name in CASES:
            plain, hooked = runs[(name, "plain")].result(), runs[(name, "hooked")].result()
            same = plain == hooked
            bad += not same
            results[name] = {"plain": plain, "hooked": hooked, "same": same}
            print("%-30s %s" % (name, "same" if same else "DIFFERS"))
            print("    plain:  %s" % plain[:300])
            if not same:
                print("    hooked: %s" % hooked[:300])
    print("launch errors: %d of %d the same as plain Triton" % (len(CASES) - bad, len(CASES)))
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
