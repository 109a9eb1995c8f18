import triton
import triton.language as tl

# A kernel whose stores land far past its output after its first launch (the test launches it
# once): the real run passes, and the bounds replay (a later launch) faults. Tests the one voiding
# path of a kernel that faulted in its bounds replay (docs/VERIFIER.md, "Control runs").
LAUNCHES = [0]


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    LAUNCHES[0] += 1
    far = 0 if LAUNCHES[0] <= 1 else 100000
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets + far, tl.load(x_ptr + offsets, mask=mask), mask=mask)
