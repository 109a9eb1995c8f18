"""The context probe.py makes in each setting: a CUDA context on GPU 0 of what it sees, the
/dev/nvidia* files the process then holds, and the MPS processes it can see."""

import os, time, glob
t = time.time()
import torch
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
ms = (time.time() - t) * 1000
held = set()
for fd in glob.glob("/proc/self/fd/*"):
    try:
        p = os.readlink(fd)
    except OSError:
        continue
    if p.startswith("/dev/nvidia"):
        held.add(p)
servers = []
for d in glob.glob("/proc/[0-9]*/comm"):
    try:
        if open(d).read().strip() == "nvidia-cuda-mps":
            servers.append(d.split("/")[2])
    except OSError:
        pass
print("ok uid=%d ms=%.0f sum=%.0f fds=%s mps_procs=%d" % (os.getuid(), ms, float(x.sum()),
      ",".join(sorted(held)), len(servers)))
