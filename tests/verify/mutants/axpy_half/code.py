import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, z_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    z = alpha * x + y
    tl.store(z_ptr + offsets, z.to(z_ptr.dtype.element_ty), mask=mask)
