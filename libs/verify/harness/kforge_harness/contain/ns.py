"""Namespaces: network (nothing to reach), mount (a read-only view of the host), PID (only its
own processes; entered by pid.step), and as non-root a user namespace that maps the pool's uid
to itself. Without a PID namespace a refused layer is reported and the run goes on; with one,
the user namespace (as non-root) and the PID namespace must hold."""

from __future__ import annotations

import ctypes

from .jail import Jail
from .libc import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, errmsg, libc, write


def step(jail: Jail) -> None:
    sb = jail.sb
    flags = CLONE_NEWNET | CLONE_NEWNS | (CLONE_NEWPID if jail.pidns else 0)
    if not jail.is_root:
        flags |= CLONE_NEWUSER
    if libc().unshare(ctypes.c_int(flags)) != 0:
        err = errmsg("unshare")
        if jail.pidns:
            raise OSError(ctypes.get_errno(), "%s (a PID namespace%s is required)"
                          % (err, "" if jail.is_root else " in a user namespace"))
        if not jail.is_root and libc().unshare(ctypes.c_int(CLONE_NEWNET | CLONE_NEWNS)) == 0:
            jail.isolated = True
        else:
            sb["network"] = "not isolated (%s)" % err
            sb["filesystem"] = "not isolated (%s)" % err
        return
    jail.isolated = True
    if jail.is_root:
        return
    jail.userns = True
    try:
        write("/proc/self/setgroups", "deny")
        write("/proc/self/uid_map", "%d %d 1" % (jail.my_uid, jail.my_uid))
        write("/proc/self/gid_map", "%d %d 1" % (jail.my_gid, jail.my_gid))
    except OSError as e:
        if jail.pidns:
            raise
        sb["userns"] = "map failed: %s" % e
