"""Memory: the sample joins the cgroup the pool made for it (the pool watches RSS without one)."""

from __future__ import annotations

import os

from .jail import Jail
from .libc import write


def step(jail: Jail) -> None:
    cgroup = jail.spec["cgroup"]
    if not cgroup:
        return
    try:
        write(os.path.join(cgroup, "cgroup.procs"), str(os.getpid()))
        jail.sb["memory"] = "cgroup"
    except OSError as e:
        jail.sb["memory"] = "cgroup join failed: %s" % e
