#!/usr/bin/env python3
"""Tests scripts/lib/function-lengths: the lengths it finds in a fixture whose function names say
their lengths, and that it fails on a function over the limit and passes at it."""
import importlib.machinery
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "lib" / "function-lengths"
FIXTURE = Path(__file__).resolve().parent / "function_lengths"
WORDS = {"three": 3, "four": 4, "six": 6, "eight": 8, "nine": 9}


def load():
    loader = importlib.machinery.SourceFileLoader("function_lengths", str(SCRIPT))
    spec = importlib.util.spec_from_loader("function_lengths", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def expected(name):
    for word, n in WORDS.items():
        if re.search(r"(^|_)%s(_|$)" % word, name):
            return n
    return None


def main():
    fl = load()
    failures = []
    found = list(fl.cxx_functions(FIXTURE / "sample.cpp")) + list(fl.py_functions(FIXTURE / "sample.py"))
    names = []
    for name, first, length in found:
        names.append(name)
        want = expected(name)
        if name == "Holder":
            want = 3
        if name == "lambda":  # lambda_four, then capture_three
            want = 4 if first == 39 else 3
        if want is None:
            failures.append("unexpected function %s (line %d)" % (name, first))
        elif length != want:
            failures.append("%s (line %d): %d lines, expected %d" % (name, first, length, want))
    for must in ["four_lines", "Holder", "method_three", "braces_in_text_eight", "trailing_six",
                 "outer_nine", "lambda", "three_lines", "method_four"]:
        if must not in names:
            failures.append("%s not found (found: %s)" % (must, ", ".join(names)))
    if names.count("lambda") != 2:
        failures.append("expected 2 lambdas, found %d" % names.count("lambda"))
    # The exit code at and over the limit.
    at = subprocess.run([sys.executable, str(SCRIPT), "--max", "9", str(FIXTURE)],
                        capture_output=True, text=True)
    if at.returncode != 0:
        failures.append("--max 9 failed: " + at.stdout + at.stderr)
    over = subprocess.run([sys.executable, str(SCRIPT), "--max", "8", str(FIXTURE)],
                          capture_output=True, text=True)
    if over.returncode != 1 or "outer_nine is 9 lines" not in over.stdout:
        failures.append("--max 8 did not fail naming outer_nine: " + over.stdout)
    for f in failures:
        print("FAIL:", f)
    print("%d functions checked, %d failures" % (len(found), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
