"""Kernels of the CPU stand-in for Triton for bounds_test.py: in bounds, and out of bounds in
each way the guard-zone replay must tell apart."""
import random

import triton
import triton.language as tl


@triton.jit
def masked_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # In bounds: every load and store masked. Must not be flagged.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def unmasked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # No mask: the last block reads and writes past the end when n is not a multiple of BLOCK.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def gather(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Reads x at indices from idx_ptr: an index of n reads one element past x.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + i, mask=mask, other=0.0), mask=mask)


@triton.jit
def reads_before(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Reads x[i - 1] for every i, x[-1] included: one element before the buffer. A masked
    # reduction of the read would hide it; here it lands in the output.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + (offs - 1), mask=mask, other=0.0), mask=mask)


@triton.jit
def far_write(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Writes a thousand elements past the end: beyond any guard zone, as a fault would be.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs + 1000, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


@triton.jit
def noisy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # In bounds but nondeterministic (as atomics are): its outputs differ from run to run.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + random.random(), mask=mask)


@triton.jit
def row_gather(x_ptr, row_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    # out[i] = x[row[i] * stride]: a row index of `rows` reads a whole row (stride elements, more
    # than a fixed 64-element zone) past x, as softmax_reducev reads V at b_loc * stride_vbs.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r = tl.load(row_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + r * stride, mask=mask, other=0.0), mask=mask)


@triton.jit
def far_read(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Reads a thousand elements past x, beyond its reach-sized zone (n times the block, 320
    # here): past the zones of every storage, in the arena's margin.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1000, mask=mask, other=0.0), mask=mask)


@triton.jit
def very_far_write(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Writes a million elements past the end: beyond the arena and its margins.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs + 1000000, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


RACE = {"launches": 0, "late": ()}


@triton.jit
def racy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # In bounds, but its outputs differ in a few launches (as a spinning lock's reduction does
    # when another program's partial sum lands late): in the launches RACE["late"] names,
    # counted from RACE["launches"]. Must not be flagged as a read out of bounds (issue 52:
    # spinning_lock_reduction was flagged in one run of two).
    if tl.program_id(0) == 0:
        RACE["launches"] += 1
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    late = 1.0 if RACE["launches"] in RACE["late"] else 0.0
    tl.store(out_ptr + offs, x + late, mask=mask)


@triton.jit
def very_far_read(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Reads twenty thousand elements past x: far beyond its zone (as a read at an index the
    # kernel computed does), past the 4096-element margins the check had before, within the 32768 of today.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + 20000, mask=mask, other=0.0), mask=mask)
