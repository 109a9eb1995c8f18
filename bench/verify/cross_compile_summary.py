#!/usr/bin/env python3
"""Sums up the cross-compile of a `kforge verify --json` file (one line per sample, with
`cross_compile` and `cross_compile_errors` per target): per target, how many passing samples
compiled, how many did not, and the most frequent reasons, the compiler's messages grouped with
numbers, quoted names and paths blanked out. Prints plain text, or Markdown with --markdown
(the table docs/BENCHMARKS.md takes).

  python3 bench/verify/cross_compile_summary.py VERDICTS.jsonl [--top N] [--markdown]
"""

import argparse
import collections
import json
import re
import sys


def reason(error):
    """The compiler's message as a failure reason: the stage and the message's first line, with
    what differs between kernels (numbers, quoted names, paths, hex) blanked out."""
    text = error.split(" | ")[0]
    text = re.sub(r"/[\w./-]+", "<path>", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "N", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text.strip()[:160]


def summarise(lines):
    samples = 0
    passed = 0
    per = collections.defaultdict(collections.Counter)  # target -> result -> count
    why = collections.defaultdict(collections.Counter)  # target -> reason -> count
    examples = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise SystemExit("line %d: not JSON: %s" % (n, e))
        samples += 1
        if rec.get("verdict") == "passed":
            passed += 1
        for target, result in (rec.get("cross_compile") or {}).items():
            per[target][result] += 1
            if result == "error":
                err = (rec.get("cross_compile_errors") or {}).get(target, "")
                r = reason(err)
                why[target][r] += 1
                examples.setdefault((target, r), (rec.get("key"), err))
    return samples, passed, per, why, examples


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("verdicts")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args(argv)
    try:
        with open(a.verdicts) as f:
            samples, passed, per, why, examples = summarise(f)
    except OSError as e:
        raise SystemExit("%s: %s" % (a.verdicts, e))
    print("%d samples, %d passed on the GPU (only those are cross-compiled)" % (samples, passed))
    for target in sorted(per):
        c = per[target]
        tried = c["ok"] + c["error"]
        rate = 100.0 * c["ok"] / tried if tried else 0.0
        others = ", ".join("%s %d" % (k, v) for k, v in sorted(c.items())
                           if k not in ("ok", "error"))
        print("%s: %d of %d compile (%.1f%%)%s" % (target, c["ok"], tried, rate,
                                                   "; " + others if others else ""))
        top = why[target].most_common(a.top)
        if a.markdown and top:
            print("\n| failures | reason (stage: compiler's message) | e.g. |\n| ---: | --- | --- |")
        for r, n in top:
            key, err = examples[(target, r)]
            if a.markdown:
                print("| %d | `%s` | %s |" % (n, r.replace("|", "\\|"), key))
            else:
                print("  %4d  %s\n        e.g. %s: %s" % (n, r, key, err[:300]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
