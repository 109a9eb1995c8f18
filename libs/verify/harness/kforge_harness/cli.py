"""The harness's command line: worker, fresh, assemble, info."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from . import HARNESS_VERSION
from .assembly import PREAMBLE_MODULES, assemble, module_available
from .worker import fresh_main, worker_main

def assemble_main(args: Any) -> int:
    with open(args.request) as f:
        req = json.load(f)
    present = {mod: module_available(mod) for mod, _ in PREAMBLE_MODULES}
    script, _ = assemble(req["code"], req["kernel_wrapper"], req["unitest_code"], present)
    sys.stdout.write(script)
    return 0


def main(argv: list[str]) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="kforge_harness")
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--control-fd", type=int, required=True)
    w.add_argument("--preload", type=lambda s: [m for m in s.split(",") if m], default=[])
    w.add_argument("--python-path", type=lambda s: [m for m in s.split(os.pathsep) if m],
                   default=[])
    w.add_argument("--probe-gpu", action="store_true")
    f = sub.add_parser("fresh")
    f.add_argument("--request", required=True)
    f.add_argument("--result-fd", type=int, required=True)
    a = sub.add_parser("assemble")
    a.add_argument("--request", required=True)
    i = sub.add_parser("info")
    i.add_argument("--cuda", action="store_true", help="also import torch and ask for a GPU")
    args = p.parse_args(argv)
    if args.cmd == "info":
        out = {"executable": sys.executable, "version": sys.version.split()[0],
               "harness": HARNESS_VERSION,
               "modules": {m: module_available(m) for m, _ in PREAMBLE_MODULES}}
        if args.cuda:
            out["triton"] = module_available("triton")
            try:
                import torch
                out["cuda"] = bool(torch.cuda.is_available())
                if out["cuda"]:
                    out["device"] = torch.cuda.get_device_name(0)
            except Exception as e:  # noqa: BLE001
                out["cuda"] = False
                out["error"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(out))
        return 0
    if args.cmd == "worker":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return worker_main(args)
    if args.cmd == "fresh":
        return fresh_main(args)
    return assemble_main(args)

