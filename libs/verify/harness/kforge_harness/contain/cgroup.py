"""Memory: the sample joins the cgroup the pool made for it (the pool watches RSS without one)."""

import os

from .libc import write


def step(jail):
    cgroup = jail.spec["cgroup"]
    if not cgroup:
        return
    try:
        write(os.path.join(cgroup, "cgroup.procs"), str(os.getpid()))
        jail.sb["memory"] = "cgroup"
    except OSError as e:
        jail.sb["memory"] = "cgroup join failed: %s" % e
