#!/usr/bin/env python3
"""Where the speed label's cost goes (issue 54), from `kforge verify --json FILE --full` of the
same samples with the label off and on (scripts/gpu/timing-cost writes them).

Per run: the samples' summed duration (worker seconds: what the label costs the pool's
throughput, spread over its workers), the speed phase's wall and CPU seconds (inside it, per
timed sample: preparing with the device shared, waiting for the device, the exclusive section),
the lock's figures summed over the samples (docs/VERIFIER.md, "Exclusive GPU": sections, stalls,
the gathering writers' idle wait and how often no other writer was coming, every sample's wait
behind the sections). Then, for each labelled run against the first (the label off), the worker
seconds it added and how much of them each of those explains. The parts overlap where a timing
sample queues as a reader inside its own speed phase, and the runs' other work varies from run
to run: what is left unexplained can be negative.

  python3 bench/verify/label_cost.py off.jsonl on.jsonl [on0.jsonl ...] [--names off,on,on0]
"""

import argparse
import json
import sys

LOCK = ("timed_sections", "stalls", "gathered_ms", "gathers", "gathers_alone", "reader_waited_ms",
        "writer_retries", "watch_stepped_out", "stall_wait_ms", "ready_wait_ms", "ready_waits",
        "ready_timeouts", "checked_in")


SLOW_MS = 50  # a stay inside the shared section this long outlasts a writer's first window
UNREADY_MS = 100  # gpulock.UNREADY_NOTE_S
UNREADY_TOP = 15  # the sites printed


def load(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                sys.exit("%s:%d: not JSON: %s" % (path, n, e))
    return rows


def figures(rows):
    out = {"samples": len(rows), "timed": 0, "duration_s": 0.0, "speed_wall_s": 0.0,
           "speed_cpu_s": 0.0, "prepare_s": 0.0, "waited_s": 0.0, "exclusive_s": 0.0,
           "full": 0, "cpu_s": 0.0, "stall_wait_max_ms": 0, "ended_by": {}, "waited_by": {},
           "unready": {}, "unready_ms": 0, "launched_paused": 0, "lent": 0, "lent_s": 0.0}
    out.update(dict.fromkeys(LOCK, 0))
    for r in rows:
        out["duration_s"] += (r.get("duration_ms") or 0) / 1000.0
        report = r.get("report")
        if not isinstance(report, dict):
            continue
        out["full"] += 1
        if (report.get("pool") or {}).get("lent"):  # ran on a lent slot (verifier.timing.lend)
            out["lent"] += 1
            out["lent_s"] += (r.get("duration_ms") or 0) / 1000.0
        phases = report.get("phase_times") or {}
        mutant = report.get("mutant") if isinstance(report.get("mutant"), dict) else {}
        for pt in (phases, mutant.get("phase_times") or {}):
            out["cpu_s"] += sum((p.get("cpu_ms") or 0) for p in pt.values()
                                if isinstance(p, dict)) / 1000.0
        sp = phases.get("speed") or {}
        out["speed_wall_s"] += sp.get("wall_ms", 0) / 1000.0
        out["speed_cpu_s"] += sp.get("cpu_ms", 0) / 1000.0
        speed = report.get("speed") or {}
        if speed.get("timed"):
            out["timed"] += 1
            for k in ("prepare", "waited", "exclusive"):
                out[k + "_s"] += (speed.get(k + "_ms") or 0) / 1000.0
        lock = report.get("gpu_lock") or {}
        if speed.get("timed"):
            # How its section began: "stall" (it stopped the readers), "burst" (it queued
            # behind a writer and waited for that one's stall too), "idle".
            how = ((lock.get("exclusive") or [[0, 0, "?"]])[0] + [None, None, "?"])[2]
            got = out["waited_by"].setdefault(how, [0, 0.0])
            got[0] += 1
            got[1] += (speed.get("waited_ms") or 0) / 1000.0
        for site, times in lock.get("unready_at") or []:
            out["unready"][site] = out["unready"].get(site, 0) + times
        out["unready_ms"] += lock.get("unready_ms") or 0
        out["launched_paused"] += lock.get("launched_paused") or 0
        for k in LOCK:
            out[k] += lock.get(k) or 0
        out["stall_wait_max_ms"] = max(out["stall_wait_max_ms"], lock.get("stall_wait_max_ms") or 0)
        if lock.get("longest_shared_ms", 0) >= SLOW_MS:
            why = lock.get("longest_ended_by") or "?"
            out["ended_by"][why] = out["ended_by"].get(why, 0) + 1
    return out


def show(name, f):
    t = max(f["timed"], 1)
    print("%s: %d samples (%d with reports), %d timed; summed duration %.1f worker-s" % (
        name, f["samples"], f["full"], f["timed"], f["duration_s"]))
    print("  speed phase: %.1f s wall, %.1f s CPU; per timed sample: preparing %.0f ms, waiting "
          "for the device %.0f ms, exclusive %.1f ms" % (
              f["speed_wall_s"], f["speed_cpu_s"], 1000 * f["prepare_s"] / t,
              1000 * f["waited_s"] / t, 1000 * f["exclusive_s"] / t))
    print("  lock: %d sections, %d stalls (%.1f a stall), gathering %.1f s in %d gathers (%d with "
          "no other writer coming), every sample's wait behind sections %.1f s, %d writer "
          "retries, %d watcher step-outs" % (
              f["timed_sections"], f["stalls"], f["timed_sections"] / max(f["stalls"], 1),
              f["gathered_ms"] / 1000.0, f["gathers"], f["gathers_alone"],
              f["reader_waited_ms"] / 1000.0, f["writer_retries"], f["watch_stepped_out"]))
    print("  first steps (the gate open, until every reader inside is at a bytecode): %d, %.0f ms "
          "each on average, %d ran out; readers said they were ready %d times" % (
              f["ready_waits"], f["ready_wait_ms"] / max(f["ready_waits"], 1),
              f["ready_timeouts"], f["checked_in"]))
    print("  stalls: the gate closed with readers in %.0f ms a stall on average, %d ms "
          "the longest; the phases' CPU %.1f s in all; samples that stayed inside "
          "%d ms or more at once, by what ended it: %s" % (
              f["stall_wait_ms"] / max(f["stalls"], 1), f["stall_wait_max_ms"], f["cpu_s"],
              SLOW_MS, ", ".join("%s %d" % kv for kv in sorted(f["ended_by"].items())) or "none"))
    if f["waited_by"]:
        print("  the timing samples' wait for the device, by how their section began: %s" % (
            ", ".join("%s %d samples %.1f s" % (how, n, s)
                      for how, (n, s) in sorted(f["waited_by"].items()))))
    if f["unready"] or f["unready_ms"]:
        top = sorted(f["unready"].items(), key=lambda kv: -kv[1])[:UNREADY_TOP]
        print("  readers that kept a first step waiting %d ms or more (KFORGE_LOCK_WHERE): %.1f s "
              "in all; where their main thread was (the caller of the long call), times: %s" % (
                  UNREADY_MS, f["unready_ms"] / 1000.0,
                  "; ".join("%s %d" % kv for kv in top) or "none"))
    if f["lent"]:
        print("  lent slots: %d samples ran on one (their duration %.1f worker-s)" % (
            f["lent"], f["lent_s"]))
    if f["launched_paused"]:
        print("  launches while marked compiling (each in through the gate): %d" %
              f["launched_paused"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+", help="the label-off run first")
    ap.add_argument("--names")
    args = ap.parse_args()
    names = args.names.split(",") if args.names else ["run%d" % i for i in range(len(args.files))]
    if len(names) != len(args.files):
        sys.exit("--names: %d names for %d files" % (len(names), len(args.files)))
    got = [(n, figures(load(p))) for n, p in zip(names, args.files)]
    for n, f in got:
        show(n, f)
    base_name, base = got[0]
    for n, f in got[1:]:
        added = f["duration_s"] - base["duration_s"]
        reader = (f["reader_waited_ms"] - base["reader_waited_ms"]) / 1000.0
        speed = f["speed_wall_s"] - base["speed_wall_s"]
        print("%s against %s: %+.1f worker-s; the speed phase %+.1f (preparing %.1f, waiting "
              "for the device %.1f, exclusive %.1f, the rest %.1f), the other samples' waits "
              "behind sections %+.1f, left unexplained (the rest of the samples slower) %+.1f" % (
                  n, base_name, added, speed, f["prepare_s"], f["waited_s"], f["exclusive_s"],
                  speed - f["prepare_s"] - f["waited_s"] - f["exclusive_s"], reader,
                  added - speed - reader))
    return 0


if __name__ == "__main__":
    sys.exit(main())
