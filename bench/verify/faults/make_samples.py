"""Writes faulting samples (JSON Lines: key, code, kernel_wrapper, unitest_code) for the fault
containment test of scripts/gpu/bench-mps: each kind's kernel (the .py files beside this one),
a wrapper that launches it, and a test that synchronises, COPIES of each kind.

    python3 make_samples.py OUT.jsonl [COPIES]
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

WRAPPERS = {
    "illegal_address": ("def store_far(x):\n"
                        "    fault_store_far_kernel[(1,)](x, x.numel(), BLOCK=1024)\n"
                        "    return x\n",
                        "def test_store_far():\n"
                        "    x = torch.zeros(1024, device='cuda')\n"
                        "    store_far(x)\n"
                        "    torch.cuda.synchronize()\n"),
    "trap": ("def trap(x):\n"
             "    fault_trap_kernel[(1,)](x, x.numel(), BLOCK=256)\n"
             "    return x\n",
             "def test_trap():\n"
             "    x = torch.ones(256, device='cuda', dtype=torch.int32)\n"
             "    trap(x)\n"
             "    torch.cuda.synchronize()\n"),
    "device_assert": ("def check(x):\n"
                      "    fault_assert_kernel[(1,)](x, x.numel(), BLOCK=256)\n"
                      "    return x\n",
                      "def test_assert():\n"
                      "    x = torch.ones(256, device='cuda', dtype=torch.int32)\n"
                      "    check(x)\n"
                      "    torch.cuda.synchronize()\n"),
    "hang": ("def spin(flag, x):\n"
             "    fault_hang_kernel[(1,)](flag, x)\n"
             "    return x\n",
             "def test_hang():\n"
             "    flag = torch.zeros(1, device='cuda', dtype=torch.int32)\n"
             "    x = torch.zeros(1, device='cuda', dtype=torch.int32)\n"
             "    spin(flag, x)\n"
             "    torch.cuda.synchronize()\n"),
}


def main():
    out = sys.argv[1]
    copies = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with open(out, "w") as f:
        for c in range(copies):
            for kind, (wrapper, test) in WRAPPERS.items():
                with open(os.path.join(HERE, kind + ".py")) as src:
                    code = src.read()
                f.write(json.dumps({"key": "fault_%s@%d" % (kind, c), "code": code,
                                    "kernel_wrapper": wrapper, "unitest_code": test}) + "\n")


if __name__ == "__main__":
    main()
