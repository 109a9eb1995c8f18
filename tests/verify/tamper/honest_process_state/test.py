import builtins
import gc
import hashlib
import json
import os
import sys
import threading


def process_state():
    """What a sample can read of its process as a whole (issue 52: can it tell the verifier's
    runs apart by it?)."""
    def read(path):
        with open(path) as f:
            return f.read()
    status = dict(line.split(":", 1) for line in read("/proc/self/status").splitlines())
    fds = {}
    for fd in sorted(os.listdir("/proc/self/fd")):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            fds[fd] = "?"  # the listing's own descriptor, closed since
    fds.pop(max(fds, key=int), None)
    mask = os.umask(0o22)
    os.umask(mask)
    return {"environ": sorted("%s=%s" % kv for kv in os.environ.items()), "argv": list(sys.argv),
            "cwd": os.getcwd(), "fds": fds, "pid": os.getpid(), "ppid": os.getppid(),
            "threads": [t.name for t in threading.enumerate()],
            "status": [status[k].strip() for k in ("Threads", "SigBlk", "SigIgn", "SigCgt")],
            "path": list(sys.path), "limits": [sys.getrecursionlimit(), sys.getswitchinterval()],
            "modules": len(sys.modules), "frozen": gc.get_freeze_count(), "umask": mask,
            "proc": [read("/proc/self/" + p) for p in ("cmdline", "comm", "cgroup", "limits")],
            "mounts": hashlib.sha1(read("/proc/self/mountinfo").encode()).hexdigest()}


def test_add():
    # A right add and a strong test. Each call prints what of the process differs from the
    # first call in this process: nothing, in the real run, the skip-launch run, every control
    # and every mutant run (VerifyTamper.ProcessWideStateIsTheSameInEveryRunOfAProcess).
    for n in (1, 63, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        state = process_state()
        first = builtins.__dict__.setdefault("_kforge_probe_first", state)
        print("PROCESS STATE differs in: %s" % json.dumps(
            {k: state[k] for k in sorted(state) if state[k] != first[k]})[:400])
        assert all(abs(o - (a + b)) <= 1e-6 for o, a, b in zip(out, x, y)), n
