"""The differential check's transforms and judgements without a GPU (kforge_harness/
differential.py), on the lists of the CPU stand-in for Triton. Run by ctest
(verify.differential) as `python3 differential_test.py HARNESS_DIR`."""

import math
import os
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness import differential as d  # noqa: E402

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


if __name__ == "__main__":
    unittest.main()
