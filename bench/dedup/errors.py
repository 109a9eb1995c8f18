#!/usr/bin/env python3
"""The errors of grouping (and decontamination) on the labelled crawl pairs, sorted by cause.

Reads what the scorer saw of each pair:

    build/bench/kforge-bench-dedup --pairs bench/dedup/crawl_pairs.json \\
        --crawl .bench-data/crawl --explain .bench-data/explain.jsonl
    bench/dedup/errors.py .bench-data/explain.jsonl [--decontamination]

and prints the false negatives and false positives, each under the first cause that fits it:

false negatives (copies not grouped)
  operations conflict      the files' kernels each compute an operation the other's do not
  kernels not read         a side has @jit functions but no kernel of 60 tokens or more
  kernels within           every kernel of one side is in the other (>= 0.9): a link missed
  subset, edited           every kernel of the side with fewer is near one of the other (>= 0.6)
  one kernel, edited       one kernel each side, near (>= 0.6) but below 0.9 and the threshold
  kernels aligned, edited  the same number of kernels pairing one to one (>= 0.6), all near
  port or revision         kernels restructured (the label says port, backend or revision)
  edited copy              below the threshold otherwise
false positives (different files grouped)
  same kernels             the same kernel bodies up to renames
  no kernel                a side without kernels (code generators, other languages)
  linked through kernels   within or aligned, not by file similarity
  template or variant      one template around another operation, or a variant of one
                           algorithm, at or above the threshold with no conflict seen

Numbers are kernel similarities with identifiers normalised (1.00: the same kernel up to renames).
"""

import json
import sys

CONTAIN, ALIGN, THRESHOLD, KERNELLESS = 0.9, 0.6, 0.6, 0.8  # THRESHOLD: the default (groups.hpp)


def ops_set(s):
    return set(s.split(",")) if s else set()


def non_helpers(ks):
    return [k for k in ks if not k["helper"]]


def all_near(ks, t):
    ks = non_helpers(ks)
    return bool(ks) and all(k["best"] >= t - 1e-9 for k in ks)


def fn_cause(d):
    a, b = d["kernels_a"], d["kernels_b"]
    if d["conflict"]:
        x, y = ops_set(d["ops_a"]), ops_set(d["ops_b"])
        return "operations conflict", "only one side: %s | %s" % (
            ",".join(sorted(x - y)), ",".join(sorted(y - x)))
    for side, ks, jit in (("a", a, d["jit_a"]), ("b", b, d["jit_b"])):
        if jit and not ks:
            return "kernels not read", "side %s: %d @jit lines, no kernel of 60 tokens" % (
                side, len(jit))
    if all_near(a, CONTAIN) or all_near(b, CONTAIN):
        return "kernels within", ""
    small, large = (a, b) if len(non_helpers(a)) <= len(non_helpers(b)) else (b, a)
    na, nb = len(non_helpers(small)), len(non_helpers(large))
    if na < nb and all_near(small, ALIGN):
        return "subset, edited", "%d of %d kernels" % (na, nb)
    if na == nb == 1 and all_near(a, ALIGN):
        return "one kernel, edited", "kernel %.2f" % non_helpers(a)[0]["best"]
    if na == nb and all_near(a, ALIGN) and all_near(b, ALIGN):
        return "kernels aligned, edited", "%d kernels" % na
    why = d["why"].lower()
    if any(w in why for w in ("port", "backend", "revision")):
        return "port or revision", ""
    return "edited copy", ""


def fp_cause(d):
    if d["exact"]:
        return "same kernels", ""
    if not d["kernels_a"] and not d["kernels_b"] and (not d["jit_a"] or not d["jit_b"]):
        return "no kernel", ""
    if d["file"] < THRESHOLD - 1e-9:
        return "linked through kernels", ""
    return "template or variant", ""


def kernels_line(d):
    def side(ks):
        return ", ".join("%s%s %.2f" % (k["name"], " (helper)" if k["helper"] else "", k["best"])
                         for k in ks) or "-"
    return "a: %s\n      b: %s" % (side(d["kernels_a"]), side(d["kernels_b"]))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    if len(args) != 1:
        sys.exit(__doc__)
    decon = "--decontamination" in sys.argv
    rows = []
    with open(args[0]) as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit("%s line %d: %s" % (args[0], n, e))
    call, verdict = ("decontamination", "flagged") if decon else ("grouping", "grouped")
    errors = {}
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for d in rows:
        if d["set"] not in (call, "both"):
            continue
        copy, said = d["label"] == "copy", d[verdict]
        counts[("t" if said == copy else "f") + ("p" if said else "n")] += 1
        if said == copy:
            continue
        kind = "false negative" if copy else "false positive"
        if decon:
            cause, note = ("below the kernel threshold", "") if copy else ("kernel near", "")
        else:
            cause, note = fn_cause(d) if copy else fp_cause(d)
        errors.setdefault((kind, cause), []).append((d, note))
    c = counts
    p = c["tp"] / max(1, c["tp"] + c["fp"])
    r = c["tp"] / max(1, c["tp"] + c["fn"])
    print("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)" %
          (call, p, r, c["tp"], c["fp"], c["fn"], c["tn"]))
    for kind in ("false negative", "false positive"):
        causes = sorted(((k, v) for k, v in errors.items() if k[0] == kind),
                        key=lambda kv: -len(kv[1]))
        print("\n%ss: %d" % (kind, sum(len(v) for _, v in causes)))
        for (_, cause), items in causes:
            print("  %s: %d" % (cause, len(items)))
            for d, note in items:
                print("    file %.2f kernel %.2f  %s%s\n      %s ~ %s" %
                      (d["file"], d["kernel"], d["why"], " [%s]" % note if note else "",
                       d["a"], d["b"]))
                if "-v" in sys.argv:
                    print("      " + kernels_line(d))


if __name__ == "__main__":
    main()
