#!/usr/bin/env python3
"""What `kforge import` and `kforge run create` cost with the viewer's search index.

Writes kforge-bench-pipeline's corpus (bench/daemon_bench.hpp's write_corpus: TritonBench-G's
code with a numbered kernel appended, both descriptions, key bench-N) of N samples, then for
each binary given, interleaved ROUNDS times: a fresh database, `kforge import` of the corpus,
`kforge run create` of a run over every sample, and a search of that run through the viewer's
own path (`kforge serve`, one fetch of /run?tag=bench&q=WORD), each command's wall time and CPU
time (user + system, from wait4), and the database's size. Prints one line per command and
round, then the medians.

Usage: bench/report/import.py [--samples 1500] [--rounds 3] NAME=KFORGE_BINARY ...
  e.g. bench/report/import.py base=/work/wt/base51/build-rel/apps/kforge/kforge \\
                              new=build-rel/apps/kforge/kforge
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# shared/ beside the checkout (/work/main: /work/shared) or beside a worktree's parent.
CORPUS = next((p for p in (os.path.join(os.path.dirname(ROOT), "shared", "corpus",
                                        "TritonBench_G_v1.json"),
                           os.path.join(os.path.dirname(os.path.dirname(ROOT)), "shared",
                                        "corpus", "TritonBench_G_v1.json"))
               if os.path.exists(p)), "")


def write_corpus(path: str, n: int, source: str) -> None:
    if not source or not os.path.exists(source):
        sys.exit("no corpus: give --corpus TritonBench_G_v1.json")
    records = json.load(open(source))
    with open(path, "w") as out:
        for i in range(n):
            r = records[i % len(records)]
            code = (r.get("output", "") +
                    "\n\n@triton.jit\ndef kforge_bench_kernel(x_ptr, n, BLOCK: tl.constexpr):"
                    "\n    pid = tl.program_id(0)\n\n# kforge-bench sample " + str(i) + "\n")
            out.write(json.dumps({"key": "bench-%d" % i, "code": code,
                                  "description_1": r.get("simp_instru", ""),
                                  "description_2": r.get("comp_instru", "")}) + "\n")


def timed(cmd: list) -> tuple:
    """Runs cmd; returns (wall s, CPU s) or exits with its output."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read() if p.stdout else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), out.decode(errors="replace")))
    return wall, ru.ru_utime + ru.ru_stime


def search(kforge: str, config: str, word: str) -> tuple:
    """Starts kforge serve, fetches one search page; returns (wall s of the fetch, status)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([kforge, "-q", "-c", config, "serve", "--listen", "127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = "http://127.0.0.1:%d/" % port
        for _ in range(200):
            try:
                urllib.request.urlopen(base, timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        t0 = time.monotonic()
        body = urllib.request.urlopen(base + "run?tag=bench&q=" + word, timeout=600).read()
        wall = time.monotonic() - t0
        m = re.search(rb'id="count">(\d+) of', body)
        return wall, int(m.group(1)) if m else -1
    finally:
        p.terminate()
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--word", default="softmax", help="the search of the viewer's fetch")
    ap.add_argument("bins", nargs="+", help="NAME=PATH of a kforge binary")
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.bins]
    work = tempfile.mkdtemp(prefix="kforge-bench-import-")
    try:
        corpus = os.path.join(work, "corpus.jsonl")
        write_corpus(corpus, args.samples, args.corpus)
        figures: dict = {}
        print("%d samples; wall s / CPU s of each command, database MB, matches of the search"
              % args.samples)
        for rnd in range(args.rounds):
            for name, kforge in bins:
                d = os.path.join(work, "%s-%d" % (name, rnd))
                os.makedirs(d)
                config = os.path.join(d, "kforge.yaml")
                with open(config, "w") as f:
                    f.write("store:\n  path: %s\nllm:\n  base_url: http://127.0.0.1:9/v1\n"
                            "  model: fake-model\n  api_key_env: \"\"\n" % os.path.join(d, "k.db"))
                imp = timed([kforge, "-q", "-c", config, "import", corpus])
                create = timed([kforge, "-q", "-c", config, "run", "create", "bench",
                                "--pipeline", "v2"])
                mb = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                         if f.startswith("k.db")) / 1e6
                found = search(kforge, config, args.word)
                row = {"import": imp, "run create": create, "search": (found[0], 0.0)}
                for k, v in row.items():
                    figures.setdefault((name, k), []).append(v)
                print("round %d %-6s import %.2f / %.2f  run create %.2f / %.2f  "
                      "first search %.3f s (%d)  db %.1f MB" %
                      (rnd + 1, name, imp[0], imp[1], create[0], create[1], found[0], found[1],
                       mb), flush=True)
                shutil.rmtree(d)
        print("medians (wall / CPU s):")
        for name, _ in bins:
            print("  %-6s " % name + "  ".join(
                "%s %.2f / %.2f" % (k, statistics.median(w for w, _ in figures[(name, k)]),
                                    statistics.median(c for _, c in figures[(name, k)]))
                for k in ("import", "run create", "search")))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
