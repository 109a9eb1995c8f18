"""How fast one GPU hands out CUDA contexts to new processes, at a given concurrency.

The verifier runs every sample in a fresh process forked from a warm worker (torch and triton
imported, CUDA not initialised), and that process creates its own CUDA context before the sample
can run. This measures the rate of that step alone, the way the pool does it: a parent with torch
imported keeps N children alive at once; each child creates its context (torch.cuda.init, a
one-element tensor, synchronize), reports how long that took and exits (the driver then tears the
context down). It runs for SECONDS per concurrency and prints, per line:

    variant=... procs=N contexts=... per_s=... mean_ms=... p95_ms=... cpu_ms=...

Variants: "torch" (as the harness does), "torch_conn1" (the same with
CUDA_DEVICE_MAX_CONNECTIONS=1: one hardware work queue per context instead of eight), "cuda" (the
driver API alone through ctypes: cuInit, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, no torch).

    python3 bench/verify/context_rate.py [--procs 1,4,8,12,16] [--seconds 8] [--variants ...]
"""
import argparse
import ctypes
import os
import resource
import statistics
import sys
import time


def make_context(variant):
    if variant == "torch_conn1":
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    if variant.startswith("torch"):
        import torch

        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        return
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    for rc in (cuda.cuInit(0), cuda.cuDeviceGet(ctypes.byref(dev), 0),
               cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
               cuda.cuCtxSetCurrent(ctx), cuda.cuCtxSynchronize()):
        if rc != 0:
            raise RuntimeError("CUDA driver call failed: %d" % rc)


def child(variant, wfd):
    t0, c0 = time.monotonic(), time.process_time()
    try:
        make_context(variant)
        line = "%d %d\n" % ((time.monotonic() - t0) * 1000, (time.process_time() - c0) * 1000)
    except Exception as e:  # noqa: BLE001 - reported, counted as a failure
        line = "fail %s\n" % str(e).replace("\n", " ")[:200]
    os.write(wfd, line.encode())
    os._exit(0)


def measure(variant, procs, seconds):
    live = {}  # pid -> read fd
    times, cpus, fails = [], [], 0
    t_end = time.monotonic() + seconds
    t0 = time.monotonic()
    done_at = t0

    def spawn():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(variant, w)
        os.close(w)
        live[pid] = r

    while True:
        while len(live) < procs and time.monotonic() < t_end:
            spawn()
        if not live:
            break
        pid, _status = os.wait()
        r = live.pop(pid, None)
        if r is None:
            continue
        data = os.read(r, 4096).decode()
        os.close(r)
        done_at = time.monotonic()
        if data.startswith("fail") or not data.strip():
            fails += 1
            continue
        ms, cpu = data.split()
        times.append(int(ms))
        cpus.append(int(cpu))
    wall = done_at - t0
    n = len(times)
    p95 = sorted(times)[int(0.95 * (n - 1))] if n else 0
    print("variant=%s procs=%d contexts=%d failed=%d wall_s=%.1f per_s=%.2f mean_ms=%d p95_ms=%d "
          "cpu_ms=%d" % (variant, procs, n, fails, wall, n / wall if wall > 0 else 0,
                         statistics.mean(times) if n else 0, p95,
                         statistics.mean(cpus) if n else 0), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", default="1,4,8,12,16")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--variants", default="torch,torch_conn1,cuda")
    a = ap.parse_args()
    import torch  # noqa: F401 - imported before forking, as in the pool's workers
    import triton  # noqa: F401

    print("cores=%d python=%s torch=%s" % (os.cpu_count(), sys.version.split()[0],
                                           torch.__version__), flush=True)
    for variant in a.variants.split(","):
        for procs in (int(x) for x in a.procs.split(",")):
            measure(variant, procs, a.seconds)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("children_cpu_s=%.1f" % (ru.ru_utime + ru.ru_stime))


if __name__ == "__main__":
    main()
