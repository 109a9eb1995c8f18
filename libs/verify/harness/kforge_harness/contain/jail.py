"""What every containment step reads (the spec, who we are) and writes (the report's "sandbox")."""

from __future__ import annotations

import os
from typing import Any, Iterable


class Jail:
    def __init__(self, spec: dict[str, Any], sb: dict[str, Any], keep: Iterable[int] = ()) -> None:
        self.spec = spec  # exactly the keys of spec_keys.txt (checked by contain())
        self.sb = sb  # report["sandbox"]: what each step did, or why it could not
        self.keep = tuple(keep)  # descriptors that stay open besides stdio
        self.directory = spec["dir"]
        self.uid = spec["uid"]
        self.gid = spec["gid"]
        self.is_root = os.geteuid() == 0
        self.drop = self.is_root and self.uid is not None  # root changes to the sample's uid
        self.pidns = bool(spec["pid_namespace"])
        self.my_uid, self.my_gid = os.getuid(), os.getgid()
        self.isolated = False  # network and mount namespaces made (set by ns.step)
        self.userns = False  # a user namespace made (as non-root)

    @property
    def owner(self) -> int:
        """The uid that owns the sample's directory."""
        return self.uid if self.drop else self.my_uid

    @property
    def group(self) -> int:
        return self.gid if self.drop and self.gid is not None else self.my_gid
