"""Files of one entry per line (`#` starts a comment, blank lines are skipped) that the harness and
the pool both read: the pool compiles the same file in (kforge::listed_lines, cmake/Embed.cmake),
so an entry added on one side is there on the other."""

from __future__ import annotations

import os


def listed(name: str, beside: str) -> list[str]:
    """The entries of the file `name` in the folder of the module file `beside`, in order."""
    out = []
    with open(os.path.join(os.path.dirname(os.path.abspath(beside)), name)) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out
