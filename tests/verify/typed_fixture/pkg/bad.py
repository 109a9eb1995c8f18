"""One of each finding: a private import, a private attribute, an undefined name, a public
function without type hints, a method without a return annotation."""

from __future__ import annotations

from . import helper
from .helper import _hidden


def public(x):
    return x + helper._secret + _hidden()


class Thing:
    def method(self, y: int):
        return y + nowhere  # noqa: F821 - pyflakes does not read noqa: still a finding
