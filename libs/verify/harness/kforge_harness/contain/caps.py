"""Capabilities: none left, and none to be gained back through execve."""

from __future__ import annotations

import ctypes

from .libc import PR_SET_NO_NEW_PRIVS, LINUX_CAPABILITY_VERSION_3, errmsg, libc

class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_all() -> None:
    """Clears every capability (those a user namespace grants included) and forbids gaining any
    back through execve: the sample cannot undo its mounts."""
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), errmsg("prctl(PR_SET_NO_NEW_PRIVS)"))
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc().capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), errmsg("capset"))

