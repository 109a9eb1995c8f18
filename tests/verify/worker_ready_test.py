"""The worker's ready event (kforge_harness/worker.py worker_main) with the GPU probe's child
running while the worker computes Triton's cache key (issue 54): the event says what it said
when the two ran one after the other. A real worker process on a socket pair, the CPU stand-in
for Triton and stand-ins for torch on a working GPU, a GPU without CUDA and one whose first
computation faults; the same answers from the probe run alone (worker.gpu_probe, the serial
path that bench/verify/worker_start.py --probe-all times). Run by tests/verify/CMakeLists.txt
(verify.worker_ready) as `python3 worker_ready_test.py ROOT`."""

import json
import os
import socket
import subprocess
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
HARNESS = os.path.join(ROOT, "libs", "verify", "harness")
FAKES = os.path.join(ROOT, "tests", "verify")
TRITON = os.path.join(FAKES, "fake_triton")


def start_worker(gpu, probe, env_extra=None):
    """A worker on a socket pair; returns (its ready event, its exit code or None if it waits
    for ops, its log)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    path = os.pathsep.join([os.path.join(FAKES, gpu), TRITON])
    argv = [sys.executable, "-s", "-u", os.path.join(HARNESS, "kforge-harness.py"), "worker",
            "--control-fd", str(theirs.fileno()), "--preload=torch,triton,triton.language",
            "--python-path=" + path] + (["--probe-gpu"] if probe else [])
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0", **(env_extra or {}))
    p = subprocess.Popen(argv, pass_fds=[theirs.fileno()], stderr=subprocess.PIPE, env=env)
    theirs.close()
    ours.settimeout(60)
    ready = json.loads(ours.recv(1 << 16).decode())
    try:
        code = p.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        ours.send(json.dumps({"op": "exit"}).encode())
        p.wait(timeout=30)
        code = None
    ours.close()
    with p.stderr:
        return ready, code, p.stderr.read().decode()


def serial_probe(gpu):
    """worker.gpu_probe() alone, in a process with the same stand-ins: what the ready event's
    probe was when the worker probed before it hashed anything."""
    code = ("import sys, json; sys.path[:0] = sys.argv[1:]; import torch\n"
            "from kforge_harness import worker\nprint(json.dumps(worker.gpu_probe()))")
    out = subprocess.run([sys.executable, "-s", "-c", code, HARNESS, os.path.join(FAKES, gpu)],
                         capture_output=True, text=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES="0"),
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


class WorkerReadyTest(unittest.TestCase):
    def check_common(self, ready):
        self.assertEqual(set(ready), {"event", "pid", "modules", "probe", "python", "harness",
                                      "triton_key"})
        self.assertEqual(ready["event"], "ready")
        self.assertEqual(sorted(ready["modules"]), ["torch", "triton", "triton.language"])
        # The key was computed (while the probe ran): where and how long, as before.
        self.assertEqual(ready["triton_key"]["where"], "triton.runtime.cache")
        self.assertEqual(set(ready["triton_key"]), {"where", "ms", "cpu_ms"})

    def test_a_working_gpu(self):
        ready, code, log = start_worker("fake_gpu_second_broken", probe=True)
        self.check_common(ready)
        self.assertIsNone(code, log)  # it waits for the pool's requests
        self.assertEqual(ready["probe"], {"ok": True, "device": "Fake GPU 0"})
        self.assertEqual(ready["probe"], serial_probe("fake_gpu_second_broken"))

    def test_no_probe_asked(self):
        ready, code, log = start_worker("fake_gpu_second_broken", probe=False)
        self.check_common(ready)
        self.assertIsNone(code, log)
        self.assertEqual(ready["probe"], {"ok": True, "note": "not asked"})

    def test_a_gpu_without_cuda(self):
        ready, code, _ = start_worker("fake_gpu_broken", probe=True)
        self.check_common(ready)
        self.assertEqual(code, 4)  # a failed probe ends the worker once it has said so
        self.assertEqual(ready["probe"], {"ok": False,
                                          "error": "torch.cuda.is_available() is False"})
        self.assertEqual(ready["probe"], serial_probe("fake_gpu_broken"))

    def test_a_gpu_whose_kernels_fault(self):
        ready, code, _ = start_worker("fake_gpu_probe_fails", probe=True)
        self.check_common(ready)
        self.assertEqual(code, 4)
        self.assertFalse(ready["probe"]["ok"])
        self.assertIn("illegal memory access", ready["probe"]["error"])
        self.assertEqual(ready["probe"], serial_probe("fake_gpu_probe_fails"))


if __name__ == "__main__":
    unittest.main()
