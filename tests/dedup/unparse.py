#!/usr/bin/env python3
"""Rewrites each record's code through Python's own parser, as a formatter that keeps every name
would: ast.unparse(ast.parse(code)) drops redundant parentheses, trailing commas, comments and
line breaks inside brackets, and writes tuples in parentheses.

usage: unparse.py CORPUS.json FIELD   prints one JSON line per record: {"index", "code"}
(records that Python cannot parse are left out).
"""
import ast
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        records = json.load(f)
    for i, rec in enumerate(records):
        try:
            code = ast.unparse(ast.parse(rec[sys.argv[2]]))
        except SyntaxError:
            continue
        print(json.dumps({"index": i, "code": code}))


if __name__ == "__main__":
    main()
