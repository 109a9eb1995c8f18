"""The sample's process: dies with its parent, works in its own directory, which is its home."""

from __future__ import annotations

import os
import signal

from .jail import Jail
from .libc import PR_SET_PDEATHSIG, libc


def step(jail: Jail) -> None:
    # Set after the uid change, which clears it. In a PID namespace the parent (the keeper) is
    # outside it: getppid() says 0 while it lives.
    parent = os.getppid()
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(111)
    os.umask(0o002)
    os.chdir(jail.directory)
    os.environ["HOME"] = jail.directory
    os.environ["TMPDIR"] = jail.directory
    user = jail.sb.get("user")
    if user and not user.startswith("no passwd"):
        os.environ["USER"] = user
        os.environ["LOGNAME"] = user
