"""A name for the sample's uid: passwd and group files bound over /etc's."""

from __future__ import annotations

import os

from .jail import Jail
from .libc import MOUNT_ATTR_RDONLY, MS_BIND, mount, mount_setattr, write

def _passwd_files(directory, uid, gid, name):
    """passwd and group files that name the sample's uid and gid (home: its directory), written
    into its directory; bound over /etc/passwd and /etc/group."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().splitlines()
        except OSError:
            return []
    passwd = [line for line in read("/etc/passwd")
              if len(line.split(":")) < 3 or line.split(":")[2] != str(uid)]
    passwd.insert(0, "%s:x:%d:%d:kforge sample:%s:/bin/sh" % (name, uid, gid, directory))
    group = read("/etc/group")
    if not any(len(line.split(":")) > 2 and line.split(":")[2] == str(gid) for line in group):
        group.insert(0, "%s:x:%d:" % (name, gid))
    etc = os.path.join(directory, ".kforge-etc")
    os.makedirs(etc, exist_ok=True)
    out = {}
    for base, lines in (("passwd", passwd), ("group", group)):
        path = os.path.join(etc, base)
        write(path, "\n".join(lines) + "\n")
        os.chmod(path, 0o644)
        out[base] = path
    return out


def step(jail: Jail) -> None:
    """A name for the sample's uid (torch._inductor, getpass and optimizers look it up). Only in a
    mount namespace; a failure leaves the sample nameless, not unconfined."""
    if not jail.isolated:
        return
    name = jail.spec["user"] or "kforge-sample"
    try:
        files = _passwd_files(jail.directory, jail.owner, jail.group, name)
        for base, path in files.items():
            target = "/etc/" + base
            if os.path.exists(target):
                mount(path, target, None, MS_BIND, None)
                mount_setattr(target, 0, MOUNT_ATTR_RDONLY, 0)
        if jail.drop:
            for path in files.values():
                os.chown(path, 0, 0)
        jail.sb["user"] = name
    except OSError as e:
        jail.sb["user"] = "no passwd entry (%s)" % e
