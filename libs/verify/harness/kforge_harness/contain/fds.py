"""Descriptor hygiene: nothing the worker or the pool had open reaches the sample (not the
worker's control socket, not the pidfds of its siblings: with one, a sample could signal
another). Only stdin, stdout, stderr and the descriptors the caller keeps (the result pipe, and
a prestarted child's go pipe) stay open."""

from __future__ import annotations

import os

from .jail import Jail


def step(jail: Jail) -> None:
    keep = sorted(set(fd for fd in jail.keep if fd > 2))
    low = 3
    for fd in keep + [1 << 20]:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    jail.sb["fds_kept"] = keep
