#!/usr/bin/env python3
"""What the speed label pays per timed call for calling the sample's code from the runner frame
(issue 52: blind.call_between, docs/VERIFIER.md "Trust model"): the CPU time of one rep of the
timer around a trivial call made here (as before) and from the runner frame (as now), and of one
plain blind.call. No GPU needed (the CPU clock path of timing_timer.Timer).

  python3 bench/verify/timing_blind_cost.py [--reps N]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "libs", "verify", "harness"))

from kforge_harness import blind, timing, timing_timer as tt  # noqa: E402


def per_call(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2000)
    reps = ap.parse_args().reps
    blind.start()

    def wrapper(x):
        return x

    here, runner = tt.Timer(None), tt.Timer(None)
    runner.via = timing.RUN.between
    plain = lambda: wrapper(1)  # noqa: E731
    call = timing._SampleCall(wrapper, [1], lambda: None, lambda out: out)
    rows = [("timer rep, the call made here (before)", lambda: here.rep(plain)),
            ("timer rep, the call from the runner frame (now)", lambda: runner.rep(call))]
    with blind.stretch("timing"):
        got = [(name, per_call(fn, reps)) for name, fn in rows]
    got.append(("blind.call (each test run's call, guard check included)",
                per_call(lambda: blind.call("run", wrapper, 1), max(1, reps // 4))))
    for name, us in got:
        print("%-58s %8.1f us" % (name, us))
    print("cost per rep of one call: %.1f us (%d reps, load %s)" % (
        got[1][1] - got[0][1], reps, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
