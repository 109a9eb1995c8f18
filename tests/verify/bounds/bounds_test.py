"""The out-of-bounds check without a GPU (kforge_harness/bounds.py): launches of the CPU
stand-in for Triton (tests/verify/fake_triton) replayed between guard zones. Run by
tests/verify/bounds_test.cpp (VerifyBounds.PythonGuardReplay) as
`python3 bounds_test.py HARNESS_DIR FAKE_TRITON_DIR`."""

import importlib.util
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_FAKE_TRITON"])
sys.path.insert(0, HERE)

import kernels  # noqa: E402  (the stand-in's kernels)
from kforge_harness import bounds, kernel_replay  # noqa: E402
from kforge_harness.kernel_replay import Recorder  # noqa: E402

MARGIN = kernel_replay.MARGIN


def launch_raw(jit, args, kwargs):
    return type(jit).run(jit, *args, **kwargs)


def sync():
    pass


def capture(kernel, args, block):
    """Records one launch of kernel on args (as the real run's recorder does); returns it."""
    n = args[-1]
    rec = Recorder()
    kwargs = {"BLOCK": block, "grid": ((n + block - 1) // block,), "warmup": False}
    r = rec.before(kernel.__name__, kernel, args, kwargs)
    try:
        type(kernel).run(kernel, *args, **kwargs)
    except IndexError:
        pass  # the stand-in's plain lists have no memory past their end: it raises instead
    rec.after(r)
    return rec.records


def floats(n):
    return [float(i + 1) for i in range(n)]


class BoundsTest(unittest.TestCase):
    def check(self, kernel, args, block=16):
        res = bounds.check(capture(kernel, args, block), launch_raw, sync)
        self.assertEqual(res["errors"], [])
        return res

    def test_masked_kernels_are_clean_at_any_size(self):
        for n in (1, 15, 16, 17, 40):
            res = self.check(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n])
            self.assertFalse(res["out_of_bounds"], res)
            self.assertEqual(res["checked"], 1)
            self.assertEqual(bounds.describe(res), "")

    def test_a_gather_of_in_bounds_indices_is_clean(self):
        n = 20
        res = self.check(kernels.gather, [floats(n), [n - 1 - i for i in range(n)], [0.0] * n, n])
        self.assertFalse(res["out_of_bounds"], res)

    def test_an_unmasked_tail_writes_outside_its_output(self):
        # n = 20, block 16: the second block writes elements 20..31 of a 20-element output.
        n = 20
        res = self.check(kernels.unmasked_copy, [floats(n), [0.0] * n, n])
        self.assertTrue(res["out_of_bounds"])
        self.assertEqual(res["writes"], [{"kernel": "unmasked_copy", "launch": 1,
                                          "buffers": ["out_ptr"]}])
        self.assertIn("kernel unmasked_copy writes outside out_ptr (launch 1)",
                      bounds.describe(res))

    def test_the_same_kernel_at_a_block_multiple_is_clean(self):
        n = 32
        res = self.check(kernels.unmasked_copy, [floats(n), [0.0] * n, n])
        self.assertFalse(res["out_of_bounds"], res)

    def test_an_index_one_past_the_end_reads_outside_the_buffer_it_names(self):
        n = 20
        idx = list(range(n))
        idx[5] = n  # x[n]: one element past x
        res = self.check(kernels.gather, [floats(n), idx, [0.0] * n, n])
        self.assertTrue(res["out_of_bounds"])
        self.assertEqual(res["writes"], [])
        self.assertEqual(res["reads"], [{"kernel": "gather", "launch": 1, "buffers": ["x_ptr"]}])
        self.assertIn("kernel gather reads outside x_ptr", bounds.describe(res))

    def test_a_read_before_the_buffer_is_found(self):
        n = 20
        res = self.check(kernels.reads_before, [floats(n), [0.0] * n, n])
        self.assertEqual(res["reads"], [{"kernel": "reads_before", "launch": 1,
                                         "buffers": ["x_ptr"]}])

    def test_a_write_past_the_zones_lands_in_the_arenas_margin(self):
        # A thousand elements past out (its zone holds 320): in the margin after the arena's
        # last storage, held like that storage's zones, so it is found as a write of out.
        n = 20
        res = bounds.check(capture(kernels.far_write, [floats(n), [0.0] * n, n], 16),
                           launch_raw, sync)
        self.assertTrue(res["out_of_bounds"])
        self.assertIsNone(res["fault"])
        self.assertEqual(res["writes"], [{"kernel": "far_write", "launch": 1,
                                          "buffers": ["out_ptr"]}])

    def test_an_access_past_the_margins_is_a_fault(self):
        n = 20
        res = bounds.check(capture_far(n), launch_raw, sync)
        self.assertTrue(res["out_of_bounds"])
        self.assertEqual(res["fault"]["kernel"], "very_far_write")
        self.assertIn("out-of-bounds store", res["fault"]["error"])
        self.assertIn("faulted on fresh buffers", bounds.describe(res))

    def test_a_replay_that_raised_the_drivers_fault_words_is_a_fault(self):
        # Each phrase of kforge_harness/fault_words.txt (the pool reads the same file) counts,
        # even where the device stays usable after it; any other error is the launch's own.
        n = 20
        recs = capture(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n], 16)
        self.assertGreaterEqual(len(bounds.FAULT_WORDS), 5)
        self.assertIn("Memory access fault by GPU", bounds.FAULT_WORDS)
        for words in bounds.FAULT_WORDS:
            def raising(jit, args, kwargs, words=words):
                raise RuntimeError("HIP error: %s node-2 (launch 1)" % words)
            res = bounds.check(recs, raising, sync)
            self.assertTrue(res["out_of_bounds"], words)
            self.assertIn(words, res["fault"]["error"])

        def other(jit, args, kwargs):
            raise RuntimeError("CUDA error: out of memory")
        res = bounds.check(recs, other, sync)
        self.assertFalse(res["out_of_bounds"], res)
        self.assertIsNone(res["fault"])
        self.assertEqual(len(res["errors"]), 1)

    def test_a_nondeterministic_kernel_is_judged_on_writes_only(self):
        n = 20
        res = self.check(kernels.noisy, [floats(n), [0.0] * n, n])
        self.assertFalse(res["out_of_bounds"], res)
        self.assertEqual(res["nondeterministic"], ["noisy"])

    def racy(self, late):
        n = 20
        recs = capture(kernels.racy, [floats(n), [0.0] * n, n], 16)
        kernels.RACE.update(launches=0, late=late)
        try:
            return bounds.check(recs, launch_raw, sync)
        finally:
            kernels.RACE.update(launches=0, late=())

    def test_a_racy_kernel_whose_zero_replays_agree_is_not_read_out_of_bounds(self):
        # Replays 1 and 3 (zones 0x00) agree, replay 2 (0xFF) differs: before, a read of the
        # zones; the 0xFF replay made again (5) does not agree with it, so it is a race.
        res = self.racy((2,))
        self.assertFalse(res["out_of_bounds"], res)
        self.assertEqual(res["reads"], [])
        self.assertEqual(res["nondeterministic"], ["racy"])

    def test_a_finding_that_does_not_come_back_when_judged_again_is_not_flagged(self):
        # Both 0xFF replays (2, 5) differ from both 0x00 ones: a read, on that judgement; judged
        # again (the arena elsewhere on a GPU) it does not come back, so it is not flagged.
        res = self.racy((2, 5))
        self.assertFalse(res["out_of_bounds"], res)
        self.assertEqual(res["reads"], [])
        self.assertEqual(res["unconfirmed"], [{"kernel": "racy", "launch": 1}])

    def test_a_real_read_comes_back_when_judged_again(self):
        n = 20
        res = self.check(kernels.reads_before, [floats(n), [0.0] * n, n])
        self.assertTrue(res["out_of_bounds"], res)
        self.assertEqual(res["unconfirmed"], [])

    def test_launches_are_checked_in_order_and_counted(self):
        n = 20
        recs = capture(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n], 16)
        recs += capture(kernels.unmasked_copy, [floats(n), [0.0] * n, n], 16)
        res = bounds.check(recs, launch_raw, sync)
        self.assertEqual(res["checked"], 2)
        self.assertEqual(res["launches"], 2)
        self.assertEqual([w["launch"] for w in res["writes"]], [2])
        # Where the check's time went is left for the phase's times (issue 54), not in the
        # report's bounds object: at least four replays a launch, each after a fill of free
        # memory (nothing to fill on the stand-in), and the replays' launches.
        self.assertNotIn("fills", res)
        self.assertGreaterEqual(bounds.COSTS["fills"], 8)
        self.assertEqual(bounds.COSTS["fill_mib"], 0)
        self.assertGreaterEqual(bounds.COSTS["fill_ms"], 0)
        self.assertGreaterEqual(bounds.COSTS["launch_ms"], 0)

    def test_the_phase_says_where_its_time_went_and_what_it_read(self):
        # Issue 54: the replays' guards, the comparisons of their outputs, the rest of the
        # judgement outside the fills and launches, and the device's answers read back: none
        # on the stand-in (lists are compared where they are; a GPU's replay reads each
        # replay's guards once and each judgement's comparisons once: bench/verify/bounds_equiv.py).
        n = 20
        recs = capture(kernels.reads_before, [floats(n), [0.0] * n, n], 16)
        res = bounds.check(recs, launch_raw, sync)
        self.assertTrue(res["out_of_bounds"])
        for key in ("guard_ms", "compare_ms", "judge_ms", "fill_ms", "launch_ms"):
            self.assertGreaterEqual(bounds.COSTS[key], 0, key)
        self.assertEqual(bounds.COSTS["reads"], 0)
        # reads_before: four replays, a second 0xFF one, one per storage to name it (two),
        # and all of it again to confirm the finding.
        self.assertEqual(bounds.COSTS["fills"], 2 * (4 + 1 + 2))

    def test_the_budget_stops_the_check(self):
        n = 20
        recs = capture(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n], 16)
        res = bounds.check(recs * 3, launch_raw, sync, budget_s=-1)
        self.assertEqual(res["checked"], 0)
        self.assertIn("budget", res["stopped"])


class ComparisonTest(unittest.TestCase):
    """kernel_replay.differs and its batched form (differs_later, read by settle): what the
    bounds replay compares several pairs of outputs with, in one read of the device."""

    def pairs(self):
        rng = random.Random(54)
        specials = [float("nan"), float("inf"), -float("inf")]
        out = []
        for _ in range(300):
            n = rng.randrange(0, 6)
            x = [rng.choice(specials) if rng.random() < 0.15 else rng.uniform(-5, 5)
                 for _ in range(n)]
            y = [v if rng.random() < 0.7 else (rng.choice(specials) if rng.random() < 0.3 else
                                              v + rng.uniform(-1e-5, 1e-5) * rng.choice([0, 1, 9]))
                 for v in x]
            ints = [rng.randrange(-3, 3) for _ in range(n)]
            out.append(([x, ints], [y, list(ints) if rng.random() < 0.8 else ints[::-1]]))
        return out

    def test_comparisons_read_together_answer_as_one_at_a_time(self):
        pairs = self.pairs()
        one = [kernel_replay.differs(a, b) for a, b in pairs]
        self.assertTrue(any(one) and not all(one))
        for size in (1, 2, 3, 7):
            for at in range(0, len(pairs), size):
                group = pairs[at:at + size]
                got = kernel_replay.settle([kernel_replay.differs_later(a, b) for a, b in group])
                self.assertEqual(got, one[at:at + size])

    def test_the_first_output_that_differs_decides_before_a_later_error(self):
        # differs stops at the first output that differs; computing the rest without waiting
        # for the device must not turn that answer into an error, nor hide an error where
        # nothing before it differs.
        self.assertTrue(kernel_replay.differs([[1.0], [1.0]], [[2.0], None]))
        with self.assertRaises(TypeError):
            kernel_replay.differs([[1.0], [1.0]], [[1.0], None])
        self.assertFalse(kernel_replay.differs([[float("nan")], [2]], [[5.0], [2]]))
        self.assertTrue(kernel_replay.differs([[1.0, 2.0]], [[1.0]]))


@unittest.skipUnless(importlib.util.find_spec("torch"), "torch is not installed: the tensor "
                     "comparisons and guards are checked by bench/verify/bounds_equiv.py on a GPU")
class TensorComparisonTest(unittest.TestCase):
    """The batched comparisons and guards against the reads they replaced, on CPU tensors
    (bench/verify/bounds_equiv.py, which a GPU host runs on CUDA)."""

    def test_the_batched_checks_answer_as_the_reads_they_replaced(self):
        sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "verify"))
        import bounds_equiv
        kernel_replay.MARGIN = bounds.MARGIN = 8 << 20
        bounds_equiv.FAR[0] = (4 << 20) // 4
        try:
            self.assertEqual(bounds_equiv.part_comparisons("cpu", 7)["mismatches"], 0)
            self.assertEqual(bounds_equiv.part_guards("cpu")["mismatches"], 0)
        finally:
            kernel_replay.MARGIN = bounds.MARGIN = MARGIN

    def test_a_replaced_funnel_of_the_batched_reads_is_found(self):
        """Every guard zone's and comparison's answer passes read_bools (torch.stack, then
        tolist): a sample's code that replaced torch.stack could hide a zone it wrote, so the
        guard watches it (guard.WATCHED) and finds the replacement."""
        import torch
        from kforge_harness import guard
        g = guard.Guard()
        g.arm()
        zone = torch.zeros(64, dtype=torch.uint8)
        zone[3] = 7  # written by the kernel
        self.assertEqual(kernel_replay.read_bools([(zone != 0).any()]), [True])
        real = torch.stack
        torch.stack = lambda ts, *a, **k: real([t & False for t in ts], *a, **k)
        try:
            self.assertEqual(kernel_replay.read_bools([(zone != 0).any()]), [False])
            g.check("bounds")
        finally:
            torch.stack = real
        self.assertIn("torch.stack", [f["what"] for f in g.findings])


class Neighbours:
    """The CPU stand-in's memory around a replay's arena, as the allocator leaves it: nothing
    (a pointer past the arena raises, as a fault), zeros, NaN, or values left by earlier work."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        def place(arena, kind=self.kind):
            if kind == "none":
                return arena, 0
            n = 4096
            if kind == "zeros":
                around = [0.0] * n
            elif kind == "nan":
                around = [float("nan")] * n
            else:
                rng = random.Random(kind)
                around = [rng.uniform(-9.0, 9.0) for _ in range(n)]
            return around + arena + list(around), n
        self.saved = kernel_replay.place_lists
        kernel_replay.place_lists = place
        return self

    def __exit__(self, *exc):
        kernel_replay.place_lists = self.saved


NEIGHBOURS = ("none", "zeros", "nan", "left-by-run-1", "left-by-run-2")


def rows_args(rows, stride, row_index):
    """x of rows x stride elements; 20 outputs reading x[row_index(i) * stride]."""
    n = 20
    return [floats(rows * stride), [row_index(i) for i in range(n)], [0.0] * n, stride, n]


def comparable(res):
    return {k: v for k, v in res.items() if k != "ms"}


class RepeatTest(unittest.TestCase):
    """The same launch gets the same finding whatever lies past its zones (issue 52, item 4):
    the zones are sized from the launch's reach, in one arena per replay."""

    def check_everywhere(self, kernel, args, block=16):
        recs = capture(kernel, args, block)
        out = []
        for kind in NEIGHBOURS:
            with Neighbours(kind):
                res = bounds.check(recs, launch_raw, sync)
            self.assertEqual(res["errors"], [], kind)
            out.append((kind, comparable(res)))
        return out

    def test_a_read_rows_past_is_caught_the_same_whatever_lies_beyond(self):
        # One row index is `rows + 1`: x[(rows + 1) * 100] is 100 elements past x, beyond a 64-element
        # zone: what it read depended on the neighbours (nothing: a fault; zeros or NaN in both
        # replays: nothing seen). Now it lands in x's own zone in every run.
        rows, stride = 4, 100
        args = rows_args(rows, stride, lambda i: rows + 1 if i == 7 else i % rows)
        results = self.check_everywhere(kernels.row_gather, args)
        for kind, res in results:
            self.assertTrue(res["out_of_bounds"], (kind, res))
            self.assertIsNone(res["fault"], kind)
            self.assertEqual(res["reads"], [{"kernel": "row_gather", "launch": 1,
                                             "buffers": ["x_ptr"]}], kind)
            self.assertEqual(res, results[0][1], kind)

    def test_a_read_a_row_before_is_caught_the_same_whatever_lies_before(self):
        rows, stride = 4, 100
        args = rows_args(rows, stride, lambda i: -1 if i == 3 else i % rows)
        results = self.check_everywhere(kernels.row_gather, args)
        for kind, res in results:
            self.assertEqual(res["reads"], [{"kernel": "row_gather", "launch": 1,
                                             "buffers": ["x_ptr"]}], kind)
            self.assertEqual(res, results[0][1], kind)

    def test_the_same_kernel_in_bounds_stays_clean_whatever_lies_beyond(self):
        rows, stride = 4, 100
        args = rows_args(rows, stride, lambda i: i % rows)
        for kind, res in self.check_everywhere(kernels.row_gather, args):
            self.assertFalse(res["out_of_bounds"], (kind, res))
            self.assertEqual(res["checked"], 1)
        for kind, res in self.check_everywhere(kernels.masked_add,
                                               [floats(40), floats(40), [0.0] * 40, 40]):
            self.assertFalse(res["out_of_bounds"], (kind, res))

    def test_a_read_past_the_zones_is_caught_the_same_whatever_lies_beyond(self):
        # x[i + 1000]: beyond x's zone and out's (320 elements each), past the arena's end.
        # Without the margin it met the neighbours (nothing: a fault; zeros, NaN or values left
        # by earlier work: the same in both replays, nothing seen); now it reads the margin
        # after the arena, held like the last storage's zones, in every placement.
        n = 20
        results = self.check_everywhere(kernels.far_read, [floats(n), [0.0] * n, n])
        for kind, res in results:
            self.assertTrue(res["out_of_bounds"], (kind, res))
            self.assertIsNone(res["fault"], kind)
            self.assertEqual(res["reads"], [{"kernel": "far_read", "launch": 1,
                                             "buffers": ["out_ptr"]}], kind)
            self.assertEqual(res, results[0][1], kind)

    def test_a_read_far_past_the_zones_is_caught_the_same_whatever_lies_beyond(self):
        # x[i + 20000]: five times past the margins the check had before (4096 elements), where
        # it met the neighbours (nothing: a fault; zeros, NaN or values left by earlier work:
        # nothing seen) and the flag followed them (issue 52: flash_decode2_phi lost
        # out_of_bounds, softmax_reducev gained it between two runs). The margins now reach
        # that far: a read of the margin after the arena in every placement.
        n = 20
        results = self.check_everywhere(kernels.very_far_read, [floats(n), [0.0] * n, n])
        for kind, res in results:
            self.assertTrue(res["out_of_bounds"], (kind, res))
            self.assertIsNone(res["fault"], kind)
            self.assertEqual(res["reads"], [{"kernel": "very_far_read", "launch": 1,
                                             "buffers": ["out_ptr"]}], kind)
            self.assertEqual(res, results[0][1], kind)

    def test_the_zones_cover_the_launch_reach_and_repeat(self):
        rows, stride = 4, 100
        rec = capture(kernels.row_gather, rows_args(rows, stride, lambda i: i % rows), 16)[0]
        # stride (100) times the largest index it can take (the block, 16), at least the zone
        # of a fixed size; the same record always gets the same zones.
        self.assertEqual(kernel_replay.reach(rec), 100 * 16)
        self.assertEqual(kernel_replay.zone_sizes(rec, True)[1], 1600)
        self.assertEqual(kernel_replay.zone_sizes(rec, True), kernel_replay.zone_sizes(rec, True))
        self.assertEqual(kernel_replay.zone_sizes(rec, False)[1], kernel_replay.LIST_GUARD)


def capture_far(n):
    return capture(kernels.very_far_write, [floats(n), [0.0] * n, n], 16)


if __name__ == "__main__":
    unittest.main()
