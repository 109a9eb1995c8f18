"""Compares the verdicts of the good samples of two runs of kforge-bench-verify --samples-out
(the same candidate without and with faulting samples mixed in): how many changed, and what the
faulting samples got.

    python3 compare.py CLEAN.jsonl WITH_FAULTS.jsonl
"""

import collections
import json
import sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            out[j["key"]] = (j["verdict"], j.get("detail", "")[:160])
    return out


def main():
    clean, faulty = load(sys.argv[1]), load(sys.argv[2])
    good = [k for k in faulty if not k.startswith("fault_") and k in clean]
    changed = [k for k in good if clean[k][0] != faulty[k][0]]
    print("good samples in both runs: %d, verdicts changed: %d" % (len(good), len(changed)))
    for k in changed[:12]:
        print("  changed: %s: %s -> %s (%s)" % (k, clean[k][0], faulty[k][0], faulty[k][1]))
    kinds = collections.Counter()
    for k, (v, d) in faulty.items():
        if k.startswith("fault_"):
            kinds["%s: %s" % (k.split("@")[0], v)] += 1
    for k, n in sorted(kinds.items()):
        print("  faulting %s x%d" % (k, n))
    missing = [k for k in clean if k not in faulty]
    if missing:
        print("  good samples without a verdict in the fault run: %d" % len(missing))


if __name__ == "__main__":
    main()
