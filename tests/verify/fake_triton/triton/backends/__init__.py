"""Triton's backend registry: one entry per backend found in the wheel, each with its compiler.

The stand-in has an NVIDIA and an AMD backend; KFORGE_FAKE_TRITON_BACKENDS (a comma list) keeps
only those named, as an old Triton or a build without the AMD backend would.
"""
import os
from dataclasses import dataclass

from .compiler import FakeAMDBackend, FakeNVIDIABackend


@dataclass(frozen=True)
class Backend:
    compiler: type
    driver: type = None


_ALL = {"nvidia": Backend(FakeNVIDIABackend), "amd": Backend(FakeAMDBackend)}
_KEEP = os.environ.get("KFORGE_FAKE_TRITON_BACKENDS")
backends = {k: v for k, v in _ALL.items()
            if _KEEP is None or k in [n.strip() for n in _KEEP.split(",")]}
