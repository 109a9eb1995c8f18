#!/usr/bin/env python3
"""Where the verifier's time goes, phase by phase, summed over a run of `kforge verify`.

Reads the JSON lines `kforge verify --json FILE` writes (each sample's "phase_times"; with
--full, the verdict lines: report.phase_times and report.mutant.phase_times), or the samples file
of `kforge-bench-verify --corpus --samples-out` (scripts/gpu/bench-real: one-samples.jsonl; a
table per "run", the runs without phases left out), and prints, per
phase of the harness (docs/VERIFIER.md, "Phases"), the samples that ran it, the wall and CPU
seconds summed over them, the mean per sample that ran it and the phase's share of all the
samples' CPU. A phase that compiled Triton kernels gets two more rows: its compiles (Triton's
compile() and launcher builds) and the rest (its runs).

  python3 bench/verify/phase_table.py VERIFY.jsonl [--markdown] [--run LABEL]
"""

import argparse
import json
import sys

ORDER = ("prepare", "test", "speed", "differential", "cross_compile", "bounds", "mutant_prepare",
         "skip_launch", "control", "output_mutants", "kernel_battery")


def phase_times(line):
    """A sample's phases from a --json line or a --full verdict line."""
    if "phase_times" in line:
        return line["phase_times"] or {}
    report = line.get("report") or {}
    out = dict(report.get("phase_times") or {})
    for name, t in ((report.get("mutant") or {}).get("phase_times") or {}).items():
        out["mutant_prepare" if name == "prepare" else name] = t
    return out


def add(sums, name, wall, cpu):
    s = sums.setdefault(name, [0, 0.0, 0.0])
    s[0] += 1
    s[1] += wall / 1000.0
    s[2] += cpu / 1000.0


def summed(lines):
    """{row: [samples, wall s, cpu s]} and the number of samples."""
    sums, n = {}, 0
    for line in lines:
        n += 1
        for name, t in phase_times(line).items():
            if not isinstance(t, dict):
                continue
            wall, cpu = t.get("wall_ms", 0), t.get("cpu_ms", 0)
            add(sums, name, wall, cpu)
            if "compile_ms" in t:
                cw, cc = t["compile_ms"], t.get("compile_cpu_ms", 0)
                add(sums, name + " compiles", cw, cc)
                add(sums, name + " runs", max(0, wall - cw), max(0, cpu - cc))
    return sums, n


def rows(sums):
    # A phase's compiles and runs ("NAME compiles", "NAME runs") go under it, also for a phase
    # this table does not know.
    names = [p for p in ORDER if p in sums] + sorted(
        p for p in sums if p not in ORDER and " " not in p)
    for p in names:
        yield p, sums[p]
        for part in ("compiles", "runs"):
            key = "%s %s" % (p, part)
            if key in sums:
                yield "  (%s)" % part, sums[key]


def print_table(lines, title, markdown):
    sums, n = summed(lines)
    cpu_total = sum(v[2] for k, v in sums.items() if " " not in k) or 1.0
    head = ("phase", "samples", "wall s", "cpu s", "wall ms/sample", "cpu ms/sample",
            "cpu share")
    table = []
    for name, (k, wall, cpu) in rows(sums):
        share = "" if name.startswith(" ") else "%.0f%%" % (100.0 * cpu / cpu_total)
        table.append((name, str(k), "%.1f" % wall, "%.1f" % cpu, "%.0f" % (1000.0 * wall / k),
                      "%.0f" % (1000.0 * cpu / k), share))
    total_wall = sum(v[1] for k, v in sums.items() if " " not in k)
    table.append(("all phases", str(n), "%.1f" % total_wall, "%.1f" % cpu_total,
                  "%.0f" % (1000.0 * total_wall / max(n, 1)),
                  "%.0f" % (1000.0 * cpu_total / max(n, 1)), "100%"))
    print("per-phase time over %d samples (%s)" % (n, title))
    if markdown:
        print()
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for r in table:
            print("| " + " | ".join(r) + " |")
        print()
        return
    widths = [max(len(r[i]) for r in table + [head]) for i in range(len(head))]
    for r in [head] + table:
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                        for i, c in enumerate(r)))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", help="kforge verify --json output, or a --samples-out file")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--run", help="only the samples of this run (a --samples-out file)")
    args = ap.parse_args(argv)
    runs = {}
    with open(args.file) as f:
        for x in f:
            if x.strip():
                line = json.loads(x)
                runs.setdefault(line.get("run", ""), []).append(line)
    for label, lines in runs.items():
        if args.run is not None and label != args.run:
            continue
        if not any(phase_times(line) for line in lines):
            continue  # a plain-python baseline: no phases
        print_table(lines, "%s%s" % (args.file, ", run " + label if label else ""),
                    args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
