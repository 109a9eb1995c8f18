"""The daemon's own files (database, configuration, state directory), made unreachable."""

import errno
import os

from .libc import (MOUNT_ATTR_RDONLY, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_RDONLY, mount,
                   mount_setattr)

def _hide(path, sb):
    """Makes a path of the daemon's (database, configuration, state directory) unreadable and
    unwritable in the sample's mount namespace: an empty read-only tmpfs over a directory,
    /dev/null (read-only) over a file."""
    try:
        st = os.stat(path)
    except OSError:
        return  # nothing there to hide
    import stat as stat_mod
    try:
        if stat_mod.S_ISDIR(st.st_mode):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                   "size=4k,mode=0500")
        else:
            mount("/dev/null", path, None, MS_BIND, None)
            mount_setattr(path, 0, MOUNT_ATTR_RDONLY, 0)
    except OSError as e:
        # Gone since the stat (SQLite removes its -wal and -shm when the last connection
        # closes): as if it had not been there. Anything else must hold.
        if e.errno == errno.ENOENT and not os.path.lexists(path):
            return
        raise
    sb.setdefault("hidden", []).append(path)



def step(jail):
    """Must hold: with a mount namespace every path in spec["hide"] is covered; without one, only
    root (whose uid change keeps the sample out of the daemon's files) may go on."""
    if jail.isolated:
        for path in jail.spec.get("hide", []):
            if path:
                _hide(path, jail.sb)
    elif jail.spec.get("hide"):
        if not jail.is_root:  # nothing else keeps the daemon's files from the sample
            raise OSError(errno.EPERM, "cannot hide the daemon's files: no mount namespace")
        jail.sb["hidden"] = "not hidden (no mount namespace)"
