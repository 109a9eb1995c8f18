#!/usr/bin/env python3
"""What the lock watcher's sys.monitoring events cost a sample's runner thread, and how long a
writer waits for a reader whose code runs there (issue 54; kforge_harness/gpulock.py, "_arm").
Python 3.12 or later (sys.monitoring); no GPU.

1. armed: a Python loop on the thread the lock takes for the runner, loops per second with the
   events off, on (gpulock._arm) and off again, and the checkpoints the events ran meanwhile.
2. writers: a child process is a reader whose runner thread spins in Python for SECONDS; this
   process takes the device as a timing sample does every 100 ms (5 ms each) and prints each
   wait (median), the runner's loops, and the lock report's runner figures.

  python3 bench/verify/runner_events_cost.py [--harness DIR] [--seconds 3]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time


def lock_files():
    d = tempfile.mkdtemp()
    paths = {k: os.path.join(d, k) for k in ("gate", "rw", "queue")}
    for p in paths.values():
        open(p, "w").close()
    return paths


def spin(seconds):
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        x = 0
        for i in range(20):
            x += i
        n += 1
    return n / seconds


def armed(gpulock):
    lk = gpulock.install(lock_files(), watch=False)
    lk.marks = True
    gpulock.set_runner(threading.get_ident())
    off = spin(0.3)
    gpulock._arm(lk)
    on = spin(0.3)
    if gpulock._disarm.__code__.co_argcount:
        gpulock._disarm(lk)
    else:  # a harness before issue 54's sixth pass (--harness of an older tree)
        gpulock._disarm()
    again = spin(0.3)
    print("armed: loops/s with the events off %.0f, on %.0f (%.1f times slower), off again %.0f; "
          "checkpoints the events ran %d" % (off, on, off / on, again,
                                               getattr(lk, "runner_events", -1)))
    lk.leave()
    gpulock.CURRENT = None


def writers(gpulock, seconds):
    from kforge_harness import blind
    from kforge_harness.guard import GUARD
    paths = lock_files()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            lk = gpulock.install(paths, watch=True)
            GUARD.arm()
            blind.start()
            os.write(w, b"in\n")

            def work():
                n, t0 = 0, time.monotonic()
                while time.monotonic() - t0 < seconds:
                    sum(range(100))
                    n += 1
                return n
            loops = blind.call("test", work)
            rep = lk.report()
            keep = ("runner_arms", "runner_stepped_out", "runner_events", "runner_armed_ms",
                    "watch_nudges", "checked_in")
            os.write(w, (json.dumps(dict({k: rep.get(k) for k in keep}, loops=loops)) +
                         "\n").encode())
        finally:
            os._exit(0)
    os.close(w)
    os.read(r, 3)
    waits, t0 = [], time.monotonic()
    while time.monotonic() - t0 < seconds - 0.5:
        time.sleep(0.1)
        lk = gpulock.GpuLock(paths["gate"], paths["rw"], paths["queue"])
        waited = lk.acquire_exclusive(10.0)
        if waited is not None:
            waits.append(waited * 1000)
            time.sleep(0.005)
            lk.release_exclusive()
    out = b""
    while not out.endswith(b"\n"):
        got = os.read(r, 4096)
        if not got:
            break
        out += got
    os.waitpid(pid, 0)
    rep = json.loads(out)
    print("writers: %d, their wait for the reader median %.0f ms (max %.0f); the runner's loops "
          "%d; %s" % (len(waits), statistics.median(waits) if waits else -1,
                      max(waits) if waits else -1, rep.pop("loops"),
                      ", ".join("%s %s" % kv for kv in rep.items())))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", default=os.path.join(here, "..", "..", "libs", "verify",
                                                      "harness"))
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    if not hasattr(sys, "monitoring"):
        sys.exit("runner_events_cost.py: needs Python 3.12 or later (sys.monitoring)")
    sys.path.insert(0, args.harness)
    from kforge_harness import gpulock
    writers(gpulock, args.seconds)
    armed(gpulock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
