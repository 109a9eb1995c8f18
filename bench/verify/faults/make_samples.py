"""Writes faulting samples (JSON Lines: key, code, kernel_wrapper, unitest_code) for the fault
containment test of scripts/gpu/bench-mps: one per directory beside this file (code.py: the
kernel, wrapper.py: its launch, test.py: a test that synchronises), COPIES of each.

    python3 make_samples.py OUT.jsonl [COPIES]

Kinds: illegal_address (a store 2**44 elements past its buffer), trap (PTX `trap`), device_assert
(a failing tl.device_assert compiled in with debug=True), hang (a spin on a flag nothing sets,
killed at the sample's deadline).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("illegal_address", "trap", "device_assert", "hang")


def read(kind, name):
    with open(os.path.join(HERE, kind, name)) as f:
        return f.read()


def main():
    out = sys.argv[1]
    copies = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with open(out, "w") as f:
        for c in range(copies):
            for kind in KINDS:
                f.write(json.dumps({"key": "fault_%s@%d" % (kind, c),
                                    "code": read(kind, "code.py"),
                                    "kernel_wrapper": read(kind, "wrapper.py"),
                                    "unitest_code": read(kind, "test.py")}) + "\n")


if __name__ == "__main__":
    main()
