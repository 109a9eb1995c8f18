"""The sandbox of one sample, one step per mechanism, in the order they must happen.

What a sample can and cannot reach is described in docs/VERIFIER.md ("Threat model"); the pool
(libs/verify/src/sandbox.cpp) builds the spec read here, with exactly the keys of spec_keys.txt:
one missing or unknown refuses the sample before any step runs. Each step records what it did in
report["sandbox"]; a step raises OSError only for what must hold (the PID namespace when asked
for, the user namespace as non-root with a PID namespace, the uid drop, hiding the daemon's
files); a layer the kernel refuses otherwise is reported and the run goes on.
"""

from __future__ import annotations

from typing import Any, Iterable

from . import cgroup, creds, env, fds, hide, mnt, ns, passwd, pid, rlimits, spec as spec_keys
from .jail import Jail


def contain(spec: Any, report: dict[str, Any], keep: Iterable[int] = ()) -> None:
    """Confines the calling process (a fresh child). With a PID namespace it returns in a new
    process (PID 2 of the namespace); the caller's process stays outside as its keeper. `keep`:
    the descriptors besides stdin, stdout and stderr that stay open (the result pipe). Raises
    spec.SpecError for a spec without exactly the keys of spec_keys.txt."""
    spec_keys.check(spec)
    jail = Jail(spec, report.setdefault("sandbox", {}), keep)
    fds.step(jail)      # descriptors: stdio and `keep` only
    cgroup.step(jail)   # memory: join the pool's cgroup
    ns.step(jail)       # network, mount, user (as non-root) and PID namespaces
    pid.step(jail)      # become PID 2 of the new PID namespace
    mnt.step(jail)      # read-only host, private /proc, writable sample directory
    hide.step(jail)     # the daemon's database, configuration and state: unreachable
    passwd.step(jail)   # a name for the sample's uid
    creds.step(jail)    # root: the sample's uid; non-root: no capabilities
    rlimits.step(jail)  # processes, files, file size, core, address space
    env.step(jail)      # death signal, working directory, HOME/TMPDIR/USER
