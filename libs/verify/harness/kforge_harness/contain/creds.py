"""Credentials: as root, the sample's own uid, gid and groups; as non-root in a user namespace,
no capabilities (caps.drop_all)."""

from __future__ import annotations

import os

from . import caps
from .jail import Jail


def step(jail: Jail) -> None:
    sb = jail.sb
    if jail.drop:
        groups = [g for g in jail.spec["groups"] or [] if isinstance(g, int)]
        os.setgroups(groups)
        os.setresgid(jail.gid, jail.gid, jail.gid)
        os.setresuid(jail.uid, jail.uid, jail.uid)
        sb["uid"] = jail.uid
        stdlib = os.path.dirname(os.__file__)
        if not os.access(stdlib, os.R_OK | os.X_OK):
            raise PermissionError(
                "the Python installation (%s) is not readable by the sandbox uid %d: use a Python "
                "readable by all users (verifier.python) or sandbox_uid_base: 0" % (stdlib,
                                                                                   jail.uid))
        return
    sb["uid"] = os.getuid()
    if jail.is_root:
        sb["uid_note"] = "running as root: no separate uid"
    elif jail.userns:
        caps.drop_all()
        sb["capabilities"] = "none"
