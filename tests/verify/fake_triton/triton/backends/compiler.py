"""GPUTarget and the backends' compilers, as in Triton 3.x, compiling on the CPU for show.

The AMD compiler fails the way the real one does on what does not port: inline PTX (an error of
the AMD assembler), more than 1024 threads per block once a warp is 64 wide, and a marker
(kforge_fake_llvm_abort) makes it abort like an LLVM ERROR; kforge_fake_compile_hang hangs.
"""
import os
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: object
    warp_size: int


class BaseBackend:
    def __init__(self, target):
        self.target = target

    @staticmethod
    def parse_attr(desc):
        return [["tt.divisibility", 16]] if "D" in desc else []

    def parse_options(self, opts):
        return dict(opts)


class FakeNVIDIABackend(BaseBackend):
    binary_ext = "cubin"

    @staticmethod
    def supports_target(target):
        return target.backend == "cuda"

    def add_stages(self, stages, options, *args):
        for name in ("ttir", "ttgir", "llir", "ptx", "cubin"):
            stages[name] = lambda src, metadata: src


class FakeAMDBackend(BaseBackend):
    binary_ext = "hsaco"

    @staticmethod
    def supports_target(target):
        return target.backend == "hip"

    def add_stages(self, stages, options, *args):
        warp = self.target.warp_size

        def ttgir(src, metadata):
            if "kforge_fake_compile_hang" in src:
                time.sleep(3600)
            threads = options.get("num_warps", 4) * warp
            if threads > 1024:
                raise RuntimeError("num_warps * warp_size = %d threads per block exceeds 1024"
                                   % threads)
            return src

        def llir(src, metadata):
            if "kforge_fake_llvm_abort" in src:
                sys.stderr.write("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync\n")
                sys.stderr.flush()
                os.abort()
            return src

        def amdgcn(src, metadata):
            if "inline_asm_elementwise" in src and ".b32" in src:
                raise RuntimeError("<inline asm>:1:2: error: invalid instruction\n"
                                   "        mov.b32 $0, $1;\n        ^")
            return src

        stages["ttir"] = lambda src, metadata: src
        stages["ttgir"] = ttgir
        stages["llir"] = llir
        stages["amdgcn"] = amdgcn
        stages["hsaco"] = lambda src, metadata: src.encode()
