#!/usr/bin/env python3
"""What one stall of the speed label's device lock costs the other samples (issue 54), on the CPU
stand-in: N processes enter the lock as samples do (kforge_harness/gpulock.py, the watcher on),
each running a sample-like loop (Python work between "launches", short C calls that cannot be
interrupted, a GPU drain at each step-out, now and then a compile out of the lock or a long C
call), and every process now and then times as a timing sample does (announce, prepare, acquire
the device exclusively, hold it, let go). Prints, per stall: how long the gate was closed with
readers in (stall_wait), the readers' waits behind the sections, each other reader's step-out
latency (from the last ring, estimated from stall_wait, to out), how long it stayed out (lost
wall) and its resume latency (the burst's end to back in); the writer retries; the timing
samples' waits for the device and their first steps; and the readers' work done (units/s, too
noisy on the shared 2-core machine to compare runs by).

  python3 bench/verify/lock_stall_cpu.py [--procs 6] [--seconds 20] [--every-s 3] [--runs off,on]

--set READY_MAX_S=0 is the lock without the stall's first step (before issue 54's cut).
Only the lock's own mechanics are real here (flock, the watcher, the GIL, the scheduler of a
loaded machine); the "GPU" is time.sleep. Not a GPU figure: the figure that decides is
scripts/gpu/timing-cost's. Variants of the lock (module knobs of gpulock) are chosen with
--set NAME=VALUE (e.g. --set BURST_ONE_STALL=0)."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "libs", "verify", "harness"))

from kforge_harness import gpulock  # noqa: E402


def spin(ms):
    """Python work: bytecodes for ms."""
    end = time.monotonic() + ms / 1000.0
    while time.monotonic() < end:
        sum(range(50))


def child(args, paths, idx, out_fd, times_fd):
    rnd = random.Random(args.seed * 1000 + idx)
    inflight = [0.0]

    def drain():  # the GPU work this process enqueued finishes first (a synchronize)
        rest = inflight[0] - time.monotonic()
        if rest > 0:
            time.sleep(rest)

    gpulock.synchronize_quietly = drain
    log = []  # ("out"|"in", t)
    orig_leave, orig_enter = gpulock.GpuLock.leave, gpulock.GpuLock.enter

    def leave(self, why="end"):
        was = self.shared
        orig_leave(self, why)
        if was and not self.shared:
            log.append(("out", time.monotonic(), why))

    def enter(self):
        was = self.shared
        t_ask = time.monotonic()
        orig_enter(self)
        if not was and self.shared:
            log.append(("in", time.monotonic(), t_ask))

    gpulock.GpuLock.leave, gpulock.GpuLock.enter = leave, enter
    lk = gpulock.install(paths, watch=True)
    os.read(times_fd, 1)  # all start together
    t_end = time.monotonic() + args.seconds
    next_timing = time.monotonic() + rnd.uniform(0.2, 2 * args.every_s) if args.timing else 1e18
    units, writes = 0, []
    while time.monotonic() < t_end:
        if time.monotonic() >= next_timing:
            lk.announce()
            prep_end = time.monotonic() + args.prepare_ms / 1000.0
            while time.monotonic() < prep_end:  # warm-up rounds: held, a checkpoint between
                with gpulock.held():
                    spin(2)
                gpulock.checkpoint()
            waited = lk.acquire_exclusive(30.0, args.gather_s)
            if waited is not None:
                x0 = time.monotonic()
                time.sleep(args.exclusive_ms / 1000.0)
                lk.release_exclusive()
                writes.append([x0, time.monotonic(), waited])
            lk.enter()
            next_timing = time.monotonic() + rnd.expovariate(1.0 / args.every_s)
            continue
        r = rnd.random()
        if r < args.p_compile:
            gpulock.pause()
            time.sleep(args.compile_ms / 1000.0)  # ptxas and the like: other processes
            gpulock.resume()
        elif r < args.p_compile + args.p_long:
            time.sleep(args.long_ms / 1000.0)  # a long C call: no bytecode, no step-out
        spin(args.python_ms)
        gpulock.checkpoint()  # a launch
        inflight[0] = max(inflight[0], time.monotonic()) + args.gpu_ms / 1000.0
        time.sleep(args.ccall_ms / 1000.0)  # a torch call: the GIL let go, not interruptible
        units += 1
    lk.leave()
    rep = lk.report()
    rep.update(units=units, writes=writes, log=log, idx=idx)
    os.write(out_fd, (json.dumps(rep) + "\n").encode())


def run_once(args, timing):
    d = tempfile.mkdtemp(prefix="lockstall-")
    paths = {k: os.path.join(d, k) for k in ("gate", "rw", "queue")}
    for p in paths.values():
        open(p, "w").close()
    args.timing = timing
    kids, go_w = [], []
    for i in range(args.procs):
        r, w = os.pipe()
        gr, gw = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(gw)
            try:
                for kv in args.set:
                    k, v = kv.split("=", 1)
                    setattr(gpulock, k, type(getattr(gpulock, k))(float(v)))
                child(args, paths, i, w, gr)
            finally:
                os._exit(0)
        os.close(w)
        os.close(gr)
        kids.append((pid, r))
        go_w.append(gw)
    time.sleep(0.3)
    for gw in go_w:
        os.write(gw, b"g")
        os.close(gw)
    reps = []
    for pid, r in kids:
        data = b""
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            data += chunk
        os.waitpid(pid, 0)
        reps.append(json.loads(data))
    return reps


def analyse(reps, exclusive_ms):
    """Per stall: ring -> each other reader out (step-out), its time out (lost), the burst's end ->
    back in (resume)."""
    sections = []
    for rep in reps:
        for x0, x1, how in rep["exclusive"]:
            sections.append((x0, x1, how, rep))
    sections.sort(key=lambda s: s[0])
    bursts = []  # [ring, start, end, n_sections, writer idxs]
    for x0, x1, how, rep in sections:
        if how == "burst" and bursts:
            bursts[-1][2] = x1
            bursts[-1][3] += 1
            bursts[-1][4].add(rep["idx"])
        else:
            ring = x0 - (rep["stall_wait_ms"] / 1000.0 / max(1, rep["stalls"]) if how == "stall" else 0)
            bursts.append([ring, x0, x1, 1, {rep["idx"]}, how])
    stepout, lost, resume = [], [], []
    for ring, b0, b1, n, writers, how in bursts:
        if how != "stall":
            continue
        for rep in reps:
            if rep["idx"] in writers:
                continue
            outs = [e for e in rep["log"] if e[0] == "out" and ring - 0.001 <= e[1] <= b0]
            ins = [e for e in rep["log"] if e[0] == "in" and e[1] >= b1 and e[2] <= b1]
            if outs and ins:
                stepout.append((outs[-1][1] - ring) * 1000)
                lost.append((ins[0][1] - outs[-1][1]) * 1000)
                resume.append((ins[0][1] - b1) * 1000)
    return bursts, stepout, lost, resume


def q(xs):
    if not xs:
        return "-"
    s = sorted(xs)
    return "mean %.1f, median %.1f, p90 %.1f, max %.1f" % (
        statistics.mean(s), s[len(s) // 2], s[min(len(s) - 1, int(0.9 * len(s)))], s[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--every-s", type=float, default=3.0, help="mean time between a process's timings")
    ap.add_argument("--prepare-ms", type=float, default=150.0)
    ap.add_argument("--exclusive-ms", type=float, default=14.0)
    ap.add_argument("--gather-s", type=float, default=0.5)
    ap.add_argument("--python-ms", type=float, default=2.0)
    ap.add_argument("--ccall-ms", type=float, default=1.0)
    ap.add_argument("--gpu-ms", type=float, default=1.0)
    ap.add_argument("--p-compile", type=float, default=0.01)
    ap.add_argument("--compile-ms", type=float, default=300.0)
    ap.add_argument("--p-long", type=float, default=0.003)
    ap.add_argument("--long-ms", type=float, default=80.0)
    ap.add_argument("--runs", default="off,on")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], help="gpulock knob NAME=VALUE")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    out = {}
    for name in args.runs.split(","):
        reps = run_once(args, timing=(name != "off"))
        units = sum(r["units"] for r in reps)
        fig = {"units_per_s": units / args.seconds}
        line = "%s: %d procs, %.0f s: %.1f units/s" % (name, args.procs, args.seconds,
                                                         fig["units_per_s"])
        if name != "off":
            bursts, stepout, lost, resume = analyse(reps, args.exclusive_ms)
            stalls = sum(r["stalls"] for r in reps)
            secs = sum(r["timed_sections"] for r in reps)
            waited = sum(r["reader_waited_ms"] for r in reps)
            sw = sum(r["stall_wait_ms"] for r in reps)
            fig.update(stalls=stalls, sections=secs, retries=sum(r["writer_retries"] for r in reps),
                       stall_wait_ms=sw / max(1, stalls),
                       stall_wait_max_ms=max([r["stall_wait_max_ms"] for r in reps] + [0]),
                       readers_waited_ms_per_stall=waited / max(1, stalls),
                       stepout_ms=statistics.mean(stepout) if stepout else None,
                       lost_ms=statistics.mean(lost) if lost else None,
                       resume_ms=statistics.mean(resume) if resume else None,
                       writer_waited_ms=1000 * statistics.mean(
                           [w[2] for r in reps for w in r["writes"]] or [0]),
                       ready_wait_ms=sum(r.get("ready_wait_ms", 0) for r in reps) /
                       max(1, sum(r.get("ready_waits", 0) for r in reps)),
                       nudges=sum(r["watch_nudges"] for r in reps),
                       stepped_out=sum(r["watch_stepped_out"] for r in reps))
            line += ("\n  %d sections, %d stalls, %d writer retries; stall_wait (the gate "
                     "closed with readers in) %.1f ms a stall, max %d ms; the readers' waits behind sections "
                     "%.0f ms a stall (%.1f ms an other process)"
                     % (secs, stalls, fig["retries"], fig["stall_wait_ms"],
                        fig["stall_wait_max_ms"], fig["readers_waited_ms_per_stall"],
                        fig["readers_waited_ms_per_stall"] / max(1, args.procs - 1)))
            line += "\n  per other reader and stall: step-out (ring to out) %s ms" % q(stepout)
            line += "\n    out (lost wall) %s ms" % q(lost)
            line += "\n    resume (burst end to back in) %s ms" % q(resume)
            line += ("\n  exclusive %.0f ms a section; a timing sample's wait for the device "
                     "%.1f ms (its first steps, the gate open, %.1f ms each); watcher nudges %d, "
                     "stepped out %d" % (args.exclusive_ms, fig["writer_waited_ms"],
                                         fig["ready_wait_ms"], fig["nudges"], fig["stepped_out"]))
        print(line, flush=True)
        out[name] = fig
    if "off" in out:
        for name, fig in out.items():
            if name != "off":
                print("%s: %.1f%% of the off run's work" % (
                    name, 100.0 * fig["units_per_s"] / out["off"]["units_per_s"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
