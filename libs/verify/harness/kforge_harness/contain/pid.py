"""The sample's own PID namespace: an init that reaps, a keeper outside that waits.

With "pid_namespace" (the default) the process that called contain() (the keeper, in the
worker's PID namespace) has unshared the namespaces; it starts an init (PID 1 of the new PID
namespace: it only reaps; kforge-sandbox-init through posix_spawn, or a fork of this process
with verifier.sandbox_init "fork") and forks the sample's process (PID 2), which returns from
contain() and runs the sample. The keeper closes every descriptor, waits for the sample's process,
then kills the init, which ends every process left in the namespace, and ends the way the sample's
process ended (same exit code or signal), so the worker and the pool see the sample's status.
Nothing in the namespace can see, signal or trace a process outside it.
"""

from __future__ import annotations

import os
import resource
import signal

from ..pipes import flush_std
from .jail import Jail
from .libc import PR_SET_DUMPABLE, PR_SET_PDEATHSIG, libc

def _close_all_but_devnull():
    fd = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        if fd != target:
            os.dup2(fd, target)
    os.closerange(3, 1 << 20)


def _init_main():
    """PID 1 of a sample's namespace: reaps orphans until the keeper kills it. Signals from
    inside the namespace cannot end it (the kernel ignores those without a handler)."""
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no ptrace, /proc/1/* not readable
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        _close_all_but_devnull()
        if os.getppid() == 1:  # the keeper died before the death signal was armed
            os._exit(0)
        while True:
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
            signal.sigwait({signal.SIGCHLD})
    finally:
        os._exit(0)


def _keeper_main(init_pid, sample_pid):
    """Outside the namespace: waits for the sample's process, ends the namespace, and ends as the
    sample's process ended."""
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _close_all_but_devnull()
        while True:
            try:
                _, status = os.waitpid(sample_pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break
        # Waited for: the init ends after every process of its namespace has, and an init left
        # to the host's PID 1 might never be reaped (in a container).
        try:
            os.kill(init_pid, signal.SIGKILL)
            os.waitpid(init_pid, 0)
        except OSError:
            pass
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125)
    finally:
        os._exit(125)


def _spawn_init(path):
    """The namespace's init as the small program kforge-sandbox-init, started with posix_spawn
    (a vfork-like clone: nothing of this process is copied), stdin/out/err on /dev/null. The
    first process made after unshare(CLONE_NEWPID) is the namespace's PID 1 whether or not its
    exec works, and once it is gone the namespace takes no other process: a failure here is final
    (the path is checked first)."""
    return os.posix_spawn(path, [path], {}, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_DUP2, 0, 2)])


def _enter_pid_namespace(init_path=None):
    """After unshare(CLONE_NEWPID): starts the namespace's init (init_path, else a fork of this
    process) and forks the sample's process. Returns, only in the sample's process, how the init
    was made ("spawn" or "fork")."""
    flush_std()
    how = "fork"
    if init_path and os.access(init_path, os.X_OK):
        init_pid = _spawn_init(init_path)
        how = "spawn"
    else:
        init_pid = os.fork()
        if init_pid == 0:
            _init_main()
    sample_pid = os.fork()
    if sample_pid == 0:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != 0:  # the keeper (outside the namespace) is already gone
            os._exit(111)
        return how
    _keeper_main(init_pid, sample_pid)


def step(jail: Jail) -> None:
    """When asked for: from here on this process is PID 2 of the sample's own namespace (the
    caller stays outside as the keeper and never returns)."""
    if not jail.pidns:
        return
    jail.sb["init"] = _enter_pid_namespace(jail.spec["init"])
    jail.sb["pid_namespace"] = True
    jail.sb["pid"] = os.getpid()
