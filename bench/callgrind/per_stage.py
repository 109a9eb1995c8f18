#!/usr/bin/env python3
"""Two callgrind profiles of kforged (bench/callgrind/kforged-second-under-callgrind) compared
per pipeline stage: each function's instructions (inclusive, or self with --self) divided by the
stages its daemon ran, A against B, largest differences first. Functions are matched by name
(the source path, which names the tree, is dropped; inlined pieces of one function are summed).
callgrind_annotate runs from /: from a tree's root it also resolves the build's relative source
paths there and counts functions twice.

  per_stage.py A.out STAGES_A B.out STAGES_B [--self] [--top N] [--grep REGEX]
"""

import argparse
import os
import re
import subprocess

LINE = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def load(path: str, inclusive: bool) -> tuple[int, dict[str, int]]:
    """The profile's total and its functions' instructions, by name."""
    out = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
         "--auto=no", os.path.abspath(path)],
        capture_output=True, text=True, check=True, cwd="/").stdout
    total, by_name = 0, {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        rest = re.sub(r"\s*\[[^\]]*\]\s*$", "", m.group(2))
        if rest.strip() == "PROGRAM TOTALS":
            total = n
            continue
        if rest.startswith("???:"):
            name = rest
        else:
            name = rest.split(":", 1)[1] if ":" in rest else rest
            name = re.sub(r"\(.*", "", name)
        by_name[name] = by_name.get(name, 0) + n
    return total, by_name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("stages_a", type=float)
    ap.add_argument("b")
    ap.add_argument("stages_b", type=float)
    ap.add_argument("--self", action="store_true", help="self instructions, not inclusive")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--grep", default="", help="only functions matching this regex")
    args = ap.parse_args()
    ta, da = load(args.a, not args.self)
    tb, db = load(args.b, not args.self)
    sa, sb = args.stages_a, args.stages_b
    print(f"total per stage: A {ta / sa:,.0f}  B {tb / sb:,.0f}  B-A {tb / sb - ta / sa:+,.0f}")
    rows = [(db.get(k, 0) / sb - da.get(k, 0) / sa, k) for k in set(da) | set(db)
            if re.search(args.grep, k)]
    rows.sort(key=lambda r: -abs(r[0]))
    for diff, k in rows[:args.top]:
        print(f"{da.get(k, 0) / sa:>12,.0f} {db.get(k, 0) / sb:>12,.0f} {diff:>+11,.0f}  {k[:150]}")


if __name__ == "__main__":
    main()
