"""The differential check's transforms and judgements without a GPU (kforge_harness/
differential.py), on the lists of the CPU stand-in for Triton. Run by ctest
(verify.differential) as `python3 differential_test.py HARNESS_DIR`."""

import math
import os
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness import differential as d  # noqa: E402
from kforge_harness import origin  # noqa: E402

TRANSFORMS = {name: (make, refusable) for name, make, refusable in d.TRANSFORMS}


def judge(name, wrapper, reference, base):
    make, refusable = TRANSFORMS[name]
    want = reference(*base)
    return d.try_transform(name, make, refusable, (wrapper, reference), base,
                           d._nonfinite(d._outputs(want, base)))


def add(x, y):
    return [a + b for a, b in zip(x, y)]


class TransformTest(unittest.TestCase):
    def test_values_change_floats_only_and_never_the_inputs_themselves(self):
        x, idx = [1.0, -2.0, 3.0, 4.0], [0, 1, 2, 3]
        base = (x, idx, 0.5, 7)
        scaled = TRANSFORMS["scaled by 1e3"][0](base)
        self.assertEqual(scaled, ([1e3, -2e3, 3e3, 4e3], [0, 1, 2, 3], 500.0, 7))
        self.assertEqual(TRANSFORMS["negated"][0](base)[0], [-1.0, 2.0, -3.0, -4.0])
        self.assertEqual(TRANSFORMS["zeros (every third element 0)"][0](base)[0],
                         [0.0, -2.0, 3.0, 0.0])
        self.assertEqual(x, [1.0, -2.0, 3.0, 4.0])

    def test_a_size_applies_only_where_every_buffer_shares_it_and_no_int_fixes_it(self):
        shorter = TRANSFORMS["dim 0 one shorter"][0]
        self.assertEqual(shorter(([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])),
                         ([1.0, 2.0], [4.0, 5.0]))
        self.assertIsNone(shorter(([1.0, 2.0, 3.0], [4.0, 5.0])))  # two sizes
        self.assertIsNone(shorter(([1.0, 2.0, 3.0], 3)))  # a size argument
        self.assertIsNone(shorter(([1.0],)))  # nothing to cut
        self.assertIsNone(TRANSFORMS["last dim one shorter"][0](([1.0, 2.0],)))  # one axis


class JudgementTest(unittest.TestCase):
    def test_agreement_and_a_cached_answer(self):
        base = ([0.5, 1.5, -2.0], [1.0, 2.0, 3.0])
        self.assertEqual(judge("scaled by 1e3", add, add, base)["result"], "agrees")
        first = add(*base)
        cached = judge("scaled by 1e3", lambda x, y: list(first), add, base)
        self.assertEqual(cached["result"], "differs")
        self.assertIn("differs beyond the dtype's tolerance", cached["detail"])

    def test_where_the_reference_leaves_its_domain_the_transform_is_skipped(self):
        def log(x):
            return [math.log(v) for v in x]
        base = ([0.5, 1.5, 2.0],)
        out = judge("negated", log, log, base)
        self.assertEqual(out["result"], "skipped")
        self.assertIn("the reference raised ValueError", out["detail"])

        def soft(x):  # a reference that overflows itself on large values
            e = [math.exp(v) if v < 700 else float("inf") for v in x]
            return [v / sum(e) for v in e]
        self.assertEqual(judge("scaled by 1e3", soft, soft, base)["result"], "skipped")

    def test_a_non_finite_answer_where_the_reference_is_finite_differs(self):
        def stable(x):
            m = max(x)
            e = [math.exp(v - m) for v in x]
            return [v / sum(e) for v in e]

        def naive(x):
            e = [math.exp(v) if v < 700 else float("inf") for v in x]
            return [v / sum(e) for v in e]
        out = judge("scaled by 1e3", naive, stable, ([0.5, 1.5, 2.0],))
        self.assertEqual(out["result"], "differs")
        self.assertIn("non-finite values where the reference's are finite", out["detail"])

    def test_a_size_the_wrapper_refuses_is_skipped_a_value_it_refuses_differs(self):
        def fixed(x, y):
            if len(x) % 2:
                raise ValueError("n must be even")
            return add(x, y)
        base = ([1.0, 2.0], [3.0, 4.0])
        self.assertEqual(judge("dim 0 one shorter", fixed, add, base)["result"], "refused")

        def positive_only(x, y):
            if min(x) < 0:
                raise ValueError("x must be positive")
            return add(x, y)
        self.assertEqual(judge("negated", positive_only, add, base)["result"], "differs")

    def test_running_out_of_memory_is_skipped_not_a_disagreement(self):
        # Copies of real-size inputs can need more device memory than the worker has: that says
        # nothing of the answer (the speed label says not_timed for the same cause).
        def big(x, y):
            raise RuntimeError("CUDA out of memory. Tried to allocate 256.00 MiB")
        base = ([1.0, 2.0], [3.0, 4.0])
        out = judge("negated", big, add, base)
        self.assertEqual(out["result"], "skipped")
        self.assertIn("ran out of memory", out["detail"])

        def oom(x, y):
            raise MemoryError()
        self.assertEqual(judge("scaled by 1e3", oom, add, base)["result"], "skipped")

        def wrong(x, y):
            raise RuntimeError("illegal memory access")
        self.assertEqual(judge("negated", wrong, add, base)["result"], "differs")

    def test_a_wrong_number_of_elements_differs(self):
        out = judge("dim 0 one shorter", lambda x, y: add(x, y) + [0.0], add,
                    ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]))
        self.assertEqual(out["result"], "differs")
        self.assertIn("has 3 elements where the reference's has 2", out["detail"])


class _State:
    """What origin.Judge needs of the Triton hooks' state: the launch watch (mutator) that each
    launch of the sample's kernels goes through, the launch counts, the real run's outputs."""

    class _Written:
        written = {"add_kernel": ["out_ptr"]}

    def __init__(self):
        self.mutator, self.launches, self.outputs = None, {}, self._Written()


def _wrapper(state, answer):
    """A wrapper launching an add 'kernel' (through the state's watch, as the hooks do) into
    out, then answering with answer(out, x, y)."""
    def kernel(x_ptr, y_ptr, out_ptr, n):
        for i in range(n):
            out_ptr[i] = x_ptr[i] + y_ptr[i]

    kernel.arg_names = ["x_ptr", "y_ptr", "out_ptr", "n"]

    def wrapper(x, y):
        out = [0.0] * len(x)
        args = (x, y, out, len(x))
        run = lambda: kernel(*args)  # noqa: E731
        (state.mutator.launch("add_kernel", kernel, args, {}, run) if state.mutator else run())
        return answer(out, x, y)
    return wrapper


class OriginTest(unittest.TestCase):
    base = ([0.25 * (i % 13) - 1.5 for i in range(64)], [0.5 - 0.125 * (i % 7) for i in range(64)])

    def judge(self, answer):
        state = _State()
        want = d._outputs(add(*self.base), self.base)
        return origin.Judge(state, d._call).judge(origin.INPUTS, _wrapper(state, answer),
                                                  self.base, want)

    def test_the_kernels_answer_is_the_kernels(self):
        entry = self.judge(lambda out, x, y: out)
        self.assertEqual((entry["result"], entry["share"], entry["runs"]), ("kernel", 0.0, 2))

    def test_the_hosts_answer_beside_a_launched_kernel_is_the_hosts(self):
        for answer in (lambda out, x, y: add(x, y),  # the kernel's output thrown away
                       lambda out, x, y: [h + 0.0 * k for h, k in zip(add(x, y), out)],
                       lambda out, x, y: [k if math.isfinite(k) else h
                                          for k, h in zip(out, add(x, y))]):
            entry = self.judge(answer)
            self.assertEqual((entry["result"], entry["share"], entry["runs"]), ("host", 1.0, 3))

    def test_a_quarter_from_the_kernel_is_the_hosts_half_is_not(self):
        quarter = self.judge(lambda out, x, y: out[:16] + add(x, y)[16:])
        self.assertEqual(quarter["result"], "host")
        self.assertAlmostEqual(quarter["share"], 0.75, places=1)
        half = self.judge(lambda out, x, y: out[:32] + add(x, y)[32:])
        self.assertEqual(half["result"], "kernel")

    def test_an_epilogue_and_a_threshold_of_the_kernels_output_are_the_kernels(self):
        self.assertEqual(self.judge(lambda out, x, y: [v * 0.5 + 1.0 for v in out])["share"], 0.0)
        sign = self.judge(lambda out, x, y: [1.0 if v > 0 else -1.0 for v in out])
        self.assertEqual(sign["result"], "kernel")  # chance agreement, a random run each
        self.assertLess(sign["share"], 0.5)

    def test_a_call_without_a_launch_is_not_judged_here(self):
        state = _State()
        entry = origin.Judge(state, d._call).judge(origin.INPUTS, add, self.base,
                                                   d._outputs(add(*self.base), self.base))
        self.assertEqual(entry["result"], "no_launch")


if __name__ == "__main__":
    unittest.main()
