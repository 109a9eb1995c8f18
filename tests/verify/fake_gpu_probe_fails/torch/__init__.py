"""A stand-in for torch on a GPU whose contexts come up but whose first computation fails, and
only after 2 s (a driver that hangs a while before it reports the fault): the worker's GPU
probe (torch.ones(16, device="cuda").sum()) fails late, while a prestarted child's warm-up
(torch.empty) and a sample that does not use torch run at once. So a pool test can tell a worker
held until its device's probe said ok from one that took a sample before the probe failed."""
import time

__version__ = "0.0+kforge-probe-fails"

uint8 = "uint8"


class _Tensor:
    def __init__(self, value):
        self._value = value


def ones(n, device=None, dtype=None):
    time.sleep(2.0)
    raise RuntimeError("CUDA error: an illegal memory access was encountered (fake GPU)")


def empty(n, device=None, dtype=None):
    return _Tensor(0.0)


class cuda:
    _initialized = False

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def is_initialized():
        return cuda._initialized

    @staticmethod
    def init():
        cuda._initialized = True

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def get_device_name(index=0):
        return "Fake GPU whose kernels fault"

    @staticmethod
    def set_per_process_memory_fraction(fraction, device=None):
        pass

    @staticmethod
    def memory_snapshot():
        return []
