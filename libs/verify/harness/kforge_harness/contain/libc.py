"""The system calls the containment needs that Python's os module lacks, through ctypes."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Optional

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (generic syscall table)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = None


def libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def errmsg(what: str) -> str:
    e = ctypes.get_errno()
    return "%s: %s" % (what, os.strerror(e))


def mount(src: Optional[str], target: str, fstype: Optional[str], flags: int,
          data: Optional[str]) -> None:
    r = libc().mount(src.encode() if src else None, target.encode(),
                     fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                     data.encode() if data else None)
    if r != 0:
        raise OSError(ctypes.get_errno(), errmsg("mount %s" % target))


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def mount_setattr(path: str, flags: int, attr_set: int, attr_clr: int) -> None:
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    r = libc().syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD),
                       ctypes.c_char_p(path.encode()), ctypes.c_uint(flags),
                       ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if r != 0:
        raise OSError(ctypes.get_errno(), errmsg("mount_setattr %s" % path))


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)

