"""Mounts: the host read-only, a /proc of the sample's own (with a PID namespace), /proc/sys
read-only, the sample's directory writable (a size-capped tmpfs, or a bind of itself),
a private /dev/shm, and the writable directories the pool names (Triton's cache)."""

from __future__ import annotations

import os

from .jail import Jail
from .libc import (AT_RECURSIVE, MOUNT_ATTR_RDONLY, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID,
                   MS_PRIVATE, MS_REC, mount, mount_setattr)


def step(jail: Jail) -> None:
    if not jail.isolated:
        return
    sb = jail.sb
    sb["network"] = "isolated"
    sb["userns"] = jail.userns
    try:
        _mounts(jail)
    except OSError as e:
        if jail.pidns:
            raise
        sb["filesystem"] = "not isolated (%s)" % e


def _mounts(jail):
    sb, directory = jail.sb, jail.directory
    mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    try:
        mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)
        sb["filesystem"] = "read-only except the sample directory"
    except OSError as e:
        sb["filesystem"] = "not read-only (%s)" % e
    if jail.pidns:
        # A /proc of the sample's own PID namespace. The CUDA driver writes under /proc
        # while it initialises (seen on an H200: with /proc read-only cudaGetDeviceCount
        # fails with error 304), so it is writable; /proc/sys stays read-only.
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        sb["proc"] = "private"
    else:
        try:
            mount_setattr("/proc", 0, 0, MOUNT_ATTR_RDONLY)
        except OSError as e:
            sb["proc"] = "read-only (%s): CUDA may fail to initialise" % e
    try:
        if os.path.isdir("/proc/sys"):
            mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC, None)
            mount_setattr("/proc/sys", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)
    except OSError as e:
        sb["proc_sys"] = "writable (%s)" % e
    cap = jail.spec["disk_cap_mb"] or 0
    if cap > 0:
        mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV,
              "size=%dm,mode=0700,uid=%d,gid=%d" % (cap, jail.owner, jail.group))
        sb["disk"] = "tmpfs %d MiB" % cap
    else:
        mount(directory, directory, None, MS_BIND | MS_REC, None)
        mount_setattr(directory, AT_RECURSIVE, 0, MOUNT_ATTR_RDONLY)
    if os.path.isdir("/dev/shm"):
        try:
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                  "size=%dm,mode=1777" % max(16, min(cap or 256, 1024)))
        except OSError:
            pass
    for w in jail.spec["writable"] or []:
        if w and os.path.isdir(w):
            mount(w, w, None, MS_BIND | MS_REC, None)
            try:
                mount_setattr(w, AT_RECURSIVE, 0, MOUNT_ATTR_RDONLY)
            except OSError:
                pass
