"""A stand-in for torch on one GPU whose driver makes contexts one at a time, for
bench/verify/worker_start.py --fake: a process's first CUDA use (the GPU probe's torch.ones, a
prestarted child's torch.empty) holds an exclusive lock on one file for every process of the
machine and sleeps KFORGE_FAKE_CONTEXT_MS (150: on the H200 16 contexts asked at once took
2.2-2.8 s). Nothing else of torch is here."""
import fcntl
import os
import time

__version__ = "0.0+kforge-fake-contexts"

_LOCK = os.environ.get("KFORGE_FAKE_CONTEXT_LOCK", "/tmp/kforge-fake-gpu-contexts.lock")


class _Tensor:
    def __init__(self, value):
        self._value = value

    def sum(self):
        return self

    def item(self):
        return self._value


def _context():
    if cuda._initialized:
        return
    with open(_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        time.sleep(int(os.environ.get("KFORGE_FAKE_CONTEXT_MS", "150")) / 1000.0)
        fcntl.flock(f, fcntl.LOCK_UN)
    cuda._initialized = True


def ones(n, device=None, dtype=None):
    _context()
    return _Tensor(float(n))


def empty(n, device=None, dtype=None):
    _context()
    return _Tensor(0.0)


class cuda:
    _initialized = False

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def init():
        _context()

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def get_device_name(index=0):
        return "Fake GPU (contexts one at a time)"
