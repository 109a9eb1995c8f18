"""The daemon's own files (database, configuration, state directory), made unreachable."""

from __future__ import annotations

import errno
import os

from .jail import Jail
from .libc import (MOUNT_ATTR_RDONLY, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_RDONLY, mount,
                   mount_setattr)


def _hide(path, sb):
    """Makes a path of the daemon's (database, configuration, state directory) unreadable and
    unwritable in the sample's mount namespace: an empty read-only tmpfs over a directory,
    /dev/null (read-only) over a file."""
    import stat as stat_mod
    # SQLite removes its -wal and -shm when the last connection closes and makes them again on
    # the next open, so such a file can vanish between the stat and the mount, and be back by
    # the time the mount has failed (any process with the database open: the daemon, the CLI).
    # Missing at the stat: as if it had not been there. Gone at the mount: look again. Unlinked
    # right after the bind (which detaches the bind from this namespace, so that making it
    # read-only fails with EINVAL or ENOENT): look again too.
    for _ in range(50):
        try:
            st = os.stat(path)
        except OSError:
            return  # nothing there to hide
        if stat_mod.S_ISDIR(st.st_mode):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                  "size=4k,mode=0500")
        else:
            try:
                mount("/dev/null", path, None, MS_BIND, None)
            except OSError as e:
                if e.errno == errno.ENOENT:
                    continue
                raise
            try:
                mount_setattr(path, 0, MOUNT_ATTR_RDONLY, 0)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EINVAL):
                    continue
                raise
        sb.setdefault("hidden", []).append(path)
        return
    raise OSError(errno.ENOENT, "%s kept vanishing while it was being hidden" % path)


def step(jail: Jail) -> None:
    """Must hold: with a mount namespace every path in spec["hide"] is covered; without one, only
    root (whose uid change keeps the sample out of the daemon's files) may go on."""
    if jail.isolated:
        for path in jail.spec["hide"] or []:
            if path:
                _hide(path, jail.sb)
    elif jail.spec["hide"]:
        if not jail.is_root:  # nothing else keeps the daemon's files from the sample
            raise OSError(errno.EPERM, "cannot hide the daemon's files: no mount namespace")
        jail.sb["hidden"] = "not hidden (no mount namespace)"
