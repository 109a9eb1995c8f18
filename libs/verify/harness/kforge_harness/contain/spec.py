"""The spec contain() applies: exactly the keys listed in spec_keys.txt, the file the pool
(libs/verify/src/sandbox.cpp) builds its spec from too. A key missing or unknown is refused
before any step runs, so a key renamed on one side never silently turns a limit off."""

from __future__ import annotations

from typing import Any

from ..listed import listed

_KEYS_FILE = "spec_keys.txt"
KEYS = frozenset(listed(_KEYS_FILE, __file__))


class SpecError(ValueError):
    pass


def check(spec: Any) -> None:
    """Raises SpecError naming every missing and unknown key."""
    if not isinstance(spec, dict):
        raise SpecError("the sandbox spec is not a JSON object")
    missing = sorted(KEYS - set(spec))
    unknown = sorted(set(spec) - KEYS)
    parts = []
    if missing:
        parts.append("missing key%s %s" % ("s" if len(missing) > 1 else "", ", ".join(missing)))
    if unknown:
        parts.append("unknown key%s %s" % ("s" if len(unknown) > 1 else "", ", ".join(unknown)))
    if parts:
        raise SpecError("sandbox spec: %s (the keys are listed in %s)"
                        % ("; ".join(parts), _KEYS_FILE))
