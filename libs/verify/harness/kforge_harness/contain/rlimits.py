"""Resource limits: processes, open files, file size, no core dumps, address space."""

from __future__ import annotations

import resource

from .jail import Jail


def step(jail: Jail) -> None:
    spec = jail.spec
    limits = [("nproc", resource.RLIMIT_NPROC, spec["max_processes"]),
              ("nofile", resource.RLIMIT_NOFILE, spec["max_open_files"]),
              ("fsize", resource.RLIMIT_FSIZE, (spec["file_size_cap_mb"] or 0) * 1048576),
              ("core", resource.RLIMIT_CORE, 0),
              ("as", resource.RLIMIT_AS, (spec["address_space_cap_mb"] or 0) * 1048576)]
    applied = {}
    for name, res, value in limits:
        if value is None or (value == 0 and name != "core"):
            continue
        try:
            resource.setrlimit(res, (value, value))
            applied[name] = value
        except (ValueError, OSError) as e:
            applied[name] = "failed: %s" % e
    jail.sb["rlimits"] = applied
    if jail.is_root and not jail.drop:
        jail.sb["nproc_note"] = "root: RLIMIT_NPROC is not enforced"
