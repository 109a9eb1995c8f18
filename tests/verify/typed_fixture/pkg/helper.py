"""Fully typed; its underscore names are its own."""

from __future__ import annotations

_secret = 1


def _hidden() -> int:
    return _secret


def shown(x: int) -> int:
    return x + _hidden()
