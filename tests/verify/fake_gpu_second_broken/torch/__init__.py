"""A stand-in for torch on a machine with two GPUs of which the second is broken: CUDA works
where CUDA_VISIBLE_DEVICES is not "1" (cuda:0) and is never available where it is (cuda:1).
It has what the harness touches on a worker and a sample that does not use torch itself."""
import os

__version__ = "0.0+kforge-second-gpu-broken"

uint8 = "uint8"


def _broken():
    return os.environ.get("CUDA_VISIBLE_DEVICES") == "1"


class _Tensor:
    def __init__(self, value):
        self._value = value

    def sum(self):
        return self

    def item(self):
        return self._value


def ones(n, device=None, dtype=None):
    return _Tensor(float(n))


def empty(n, device=None, dtype=None):
    return _Tensor(0.0)


class cuda:
    _initialized = False

    @staticmethod
    def is_available():
        return not _broken()

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
        return "Fake GPU " + os.environ.get("CUDA_VISIBLE_DEVICES", "?")

    @staticmethod
    def set_per_process_memory_fraction(fraction, device=None):
        pass

    @staticmethod
    def memory_snapshot():
        return []
