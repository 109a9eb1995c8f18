"""The out-of-bounds check without a GPU (kforge_harness/bounds.py): launches of the CPU
stand-in for Triton (tests/verify/fake_triton) replayed between guard zones. Run by
tests/verify/bounds_test.cpp (VerifyBounds.PythonGuardReplay) as
`python3 bounds_test.py HARNESS_DIR FAKE_TRITON_DIR`."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_FAKE_TRITON"])
sys.path.insert(0, HERE)

import kernels  # noqa: E402  (the stand-in's kernels)
from kforge_harness import bounds  # noqa: E402
from kforge_harness.kernel_replay import Recorder  # noqa: E402


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

    def test_an_access_past_the_guard_zones_is_a_fault(self):
        n = 20
        res = bounds.check(capture_far(n), launch_raw, sync)
        self.assertTrue(res["out_of_bounds"])
        self.assertEqual(res["fault"]["kernel"], "far_write")
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

    def test_launches_are_checked_in_order_and_counted(self):
        n = 20
        recs = capture(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n], 16)
        recs += capture(kernels.unmasked_copy, [floats(n), [0.0] * n, n], 16)
        res = bounds.check(recs, launch_raw, sync)
        self.assertEqual(res["checked"], 2)
        self.assertEqual(res["launches"], 2)
        self.assertEqual([w["launch"] for w in res["writes"]], [2])

    def test_the_budget_stops_the_check(self):
        n = 20
        recs = capture(kernels.masked_add, [floats(n), floats(n), [0.0] * n, n], 16)
        res = bounds.check(recs * 3, launch_raw, sync, budget_s=-1)
        self.assertEqual(res["checked"], 0)
        self.assertIn("budget", res["stopped"])


def capture_far(n):
    return capture(kernels.far_write, [floats(n), [0.0] * n, n], 16)


if __name__ == "__main__":
    unittest.main()
