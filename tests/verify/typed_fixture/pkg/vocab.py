"""Vocabulary names: two spelled as values (findings), the others naming fields, in a docstring
("passed") or marked as another list's word (none a finding)."""

from __future__ import annotations


def verdict_of(report: dict[str, str]) -> str:
    if report.get("error"):
        return "error"
    return report["verdict"] if "passed" in report else "passed"


FLAGS = {"slow": 1}
KIND = "skipped"  # not vocabulary: a word of another list
