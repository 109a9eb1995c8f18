"""A kernel's outputs, found by watching its launches, and the coverage facts they give.

During the real run every launch of the sample's own kernels goes through Outputs.launch: the
buffers among its arguments are copied before the launch and compared after it; those that
changed are the launch's outputs. What is learned is kept per kernel as the names of the
arguments that were written (the mutant runs change those after each launch), and summed up as
coverage facts: the output sizes the test exercised, whether any size was not a multiple of the
kernel's block (the masked tail path), and whether a size-1 or an empty buffer was passed.
"""

from __future__ import annotations

from typing import Any, Callable

from . import buffers
from .gpusync import synchronize
from .shapes import Json

MAX_SIZES = 64
MAX_PROBES = 4  # per run: launches made again to find outputs a launch left unchanged
MAX_PROBE_BUFFERS = 8  # buffers tried per probe


def arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """[(name, value)] of one launch: positional arguments named after the kernel's parameters
    (or "#i" where the names are unknown), then keyword arguments."""
    names = list(getattr(fn, "arg_names", None) or [])
    out = []
    for i, v in enumerate(args):
        out.append((names[i] if i < len(names) else "#%d" % i, v))
    for k, v in kwargs.items():
        if k not in ("grid", "warmup"):
            out.append((k, v))
    return out


def _blocks(named):
    """The launch's block sizes: integer meta-parameters named BLOCK*."""
    return sorted({v for k, v in named if isinstance(k, str) and k.upper().startswith("BLOCK") and
                   type(v) is int and v > 0})


class Outputs:
    """Finds and remembers the outputs of a run's launches. One per run of the tests."""

    def __init__(self) -> None:
        self.written: dict[str, list[str]] = {}  # kernel name -> [argument names written], in the order first seen
        self.launches = 0
        self.unwatched = 0  # launches whose buffers could not all be copied
        self.sizes: set[int] = set()  # numel of each output
        self.shapes: list[Any] = []
        self.blocks: set[int] = set()
        self.tail_path = False
        self.size_one = False
        self.empty = False
        self.dtypes: set[str] = set()
        self.probes = 0  # launches made again to find outputs that held the answer already
        self.probed: list[str] = []  # the outputs found that way
        # Per launch (1, 2, ... in the run's order): the kernel and its outputs' shapes; the
        # output mutants change each launch with more than one output element on its own.
        self.per_launch: list[Any] = []
        self.multi = 0  # outputs of more than one element seen
        self.constant = 0  # of those, outputs whose elements were all equal
        self.largest = 0  # the most elements of any buffer a launch was given
        self.wrote = 0  # outputs seen

    def launch(self, kernel: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               run: Callable[[], Any]) -> Any:
        """Runs the launch (run()) between a copy of its buffers and the comparison."""
        named = arguments(fn, args, kwargs)
        bufs = [(name, v) for name, v in named if buffers.is_buffer(v)]
        before = [(name, v, buffers.snapshot(v) if buffers.numel(v) else None) for name, v in bufs]
        ret = run()
        self.launches += 1
        if any(snap is None and buffers.numel(v) for _, v, snap in before):
            self.unwatched += 1
        blocks = _blocks(named)
        self.blocks.update(blocks)
        wrote = []
        for name, v, snap in before:
            n = buffers.numel(v)
            self.largest = max(self.largest, n)
            self.size_one |= n == 1
            self.empty |= n == 0
            if buffers.changed(snap, v):
                wrote.append((name, v))
        if not wrote and not self.written.get(kernel) and self.probes < MAX_PROBES:
            wrote = self._probe(before, run)
        shapes = []
        for name, v in wrote:
            self._record(kernel, name, v, blocks)
            shapes.append(buffers.shape(v))
            self.wrote += 1
            if buffers.numel(v) > 1:
                self.multi += 1
                self.constant += buffers.is_constant(v)
        self.per_launch.append((kernel, shapes, max([buffers.numel(v) for _, v in wrote] or [0])))
        return ret

    def _record(self, kernel, name, v, blocks):
        n = buffers.numel(v)
        seen = self.written.setdefault(kernel, [])
        if name not in seen:
            seen.append(name)
        self.sizes.add(n)
        self.dtypes.add(buffers.dtype(v))
        shape = buffers.shape(v)
        if shape not in self.shapes and len(self.shapes) < MAX_SIZES:
            self.shapes.append(shape)
        if any(d % b for d in set(shape + [n]) if d > 0 for b in blocks):
            self.tail_path = True

    def _probe(self, before, run):
        """A launch that changed no buffer, of a kernel with no output seen yet: its outputs may
        already have held the right answer (memory the allocator handed out again after the test
        computed its golden result in it). Each unchanged buffer in turn is filled with values
        safe to read and the launch made again: what changes is written. Every buffer is then put
        back as it was, so the test sees what the one real launch left."""
        self.probes += 1
        watched = [(name, v, snap) for name, v, snap in before if snap is not None]
        for name, v, _ in watched[:MAX_PROBE_BUFFERS]:
            if not buffers.probe_fill(v):
                continue
            filled = buffers.snapshot(v)
            found = []
            try:
                run()
                synchronize()  # a probe launch's writes must be seen
                for other, w, snap in watched:
                    if buffers.changed(filled if w is v else snap, w):
                        found.append((other, w))
            except Exception:  # noqa: BLE001 - the probe must not change the real run's outcome
                found = []
            finally:
                for _, w, snap in watched:
                    buffers.restore(w, snap)
            if found:
                self.probed.extend(n for n, _ in found)
                return found
        return []

    def constant_outputs(self) -> bool:
        """Every output of more than one element had all its elements equal; or every buffer
        of every launch had one element at most (a single-element test: its output cannot
        differ from element to element either). A full reduction of many elements into one is
        not flagged."""
        if self.multi:
            return self.constant == self.multi
        return self.wrote > 0 and self.largest <= 1

    def isolated_launches(self) -> list[int]:
        """The launches the output mutants change one at a time: those that wrote more than one
        element, the first of each (kernel, output shapes). Empty when only one launch wrote
        anything (changing every launch at once is then the same)."""
        wrote = [i for i, (_, _, n) in enumerate(self.per_launch, 1) if n > 0]
        if len(wrote) < 2:
            return []
        seen, out = set(), []
        for i, (kernel, shapes, n) in enumerate(self.per_launch, 1):
            key = repr((kernel, shapes))
            if n > 1 and key not in seen:
                seen.add(key)
                out.append(i)
        return out

    def facts(self) -> Json:
        """The coverage facts for the report (and export): not a verdict."""
        return {"launches": self.launches,
                "outputs": {k: list(v) for k, v in self.written.items()},
                "output_sizes": sorted(self.sizes)[:MAX_SIZES],
                "output_shapes": self.shapes,
                "output_dtypes": sorted(self.dtypes),
                "blocks": sorted(self.blocks),
                "tail_path": self.tail_path if self.blocks else None,
                "size_one": self.size_one,
                "empty": self.empty,
                "probed_outputs": list(self.probed),
                "constant_outputs": self.constant_outputs(),
                "unwatched_launches": self.unwatched}
