"""What a CUDA context touches, and which sandbox layers a CUDA MPS client survives
(scripts/gpu/bench-mps runs it as root before its runs; each finding is a line "probe: ...").

    python3 probe.py --plain --gpus N [--uid U]
    python3 probe.py --mps-layers --mps DIR --gpus N --uid U

--plain: a process that sees GPU 0 only (CUDA_VISIBLE_DEVICES) makes a context: which
/dev/nvidia* files it holds open, how long it took; then the same with the other GPUs' device
files covered by /dev/null binds (verifier.hide_other_gpus), in a mount namespace.
--mps-layers: the same context as uid U, a client of DIR/0/pipe's MPS daemon, with /dev/shm
the daemons' (DIR/shm), a fresh tmpfs, or the host's, and the pipe directory read-only.
"""

import argparse
import os
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_child.py")


def uuid_of(i):
    return subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i",
                           str(i)], capture_output=True, text=True).stdout.strip()


def run(label, env, pre="", uid=None, timeout=40):
    drop = ("exec setpriv --reuid %d --regid %d --clear-groups " % (uid, uid)) if uid else "exec "
    sh = pre + drop + "%s %s" % (sys.executable, CHILD)
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", sh]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        res = p.stdout.strip().splitlines()[-1:] or ["rc=%d %s" % (p.returncode,
                                                     p.stderr.strip().splitlines()[-1:])]
        print("probe: %s: %s" % (label, res[0] if p.returncode == 0 else
                                 "FAILED rc=%d: %s" % (p.returncode, p.stderr.strip()[-300:])))
    except subprocess.TimeoutExpired:
        print("probe: %s: FAILED: no context within %d s (the client waits)" % (label, timeout))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--mps-layers", action="store_true")
    ap.add_argument("--mps", default="/tmp/kforge-mps")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--uid", type=int, default=0)
    a = ap.parse_args()
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": uuid_of(0),
            "CUDA_DEVICE_MAX_CONNECTIONS": "1", "HOME": "/tmp"}
    others = " ".join("/dev/nvidia%d" % i for i in range(1, a.gpus))
    if a.plain:
        run("plain context, CUDA_VISIBLE_DEVICES=GPU 0", dict(base))
        run("plain context, CUDA_VISIBLE_DEVICES=GPU 0 (again)", dict(base))
        if others:
            pre = "for f in %s; do mount --bind /dev/null $f; done; " % others
            run("other GPUs' device files covered (hide_other_gpus)", dict(base), pre)
            run("other GPUs' device files covered (again)", dict(base), pre)
    if a.mps_layers:
        env = dict(base, CUDA_MPS_PIPE_DIRECTORY="%s/0/pipe" % a.mps)
        pipe = "%s/0/pipe" % a.mps
        ro = "mount --bind %s %s && mount -o remount,bind,ro %s && " % (pipe, pipe, pipe)
        shm = "mount --bind %s/shm /dev/shm && " % a.mps
        run("MPS client as uid %d, /dev/shm the daemons', pipe dir read-only" % a.uid, env,
            shm + ro, a.uid)
        run("MPS client as uid %d, /dev/shm the daemons' (again)" % a.uid, env, shm + ro, a.uid)
        run("MPS client as uid %d, /dev/shm a fresh tmpfs" % a.uid, env,
            "mount -t tmpfs tmpfs /dev/shm && " + ro, a.uid, timeout=15)
        run("MPS client as uid %d, /dev/shm the host's" % a.uid, env, ro, a.uid, timeout=15)
        run("MPS client as root while uid %d's server runs" % a.uid, env, shm, None, timeout=10)


if __name__ == "__main__":
    main()
