"""The kernel mutants without a GPU: the mutation operators (kforge_harness/kernel_ops.py) on
kernel sources, their deterministic choice, and the equivalence replay (kernel_replay.py,
kernel_mutants.judge) on launches of the CPU stand-in for Triton (tests/verify/fake_triton).
Run by tests/verify/mutants_test.cpp (VerifyKernelMutants.PythonOperatorsAndReplay) as
`python3 kernel_test.py HARNESS_DIR FAKE_TRITON_DIR`."""

import ast
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_FAKE_TRITON"])
sys.path.insert(0, HERE)

import kernels  # noqa: E402  (the stand-in's kernels)
from kforge_harness import kernel_ops as ops  # noqa: E402
from kforge_harness.kernel_mutants import Originals, build_jit, judge, unspecialised  # noqa: E402,E501
from kforge_harness.kernel_replay import Launch, Recorder  # noqa: E402

with open(os.path.join(HERE, "kernels.py")) as _f:
    TREE = ast.parse(_f.read())


def kernel_def(name):
    return ops.find_def(TREE, name)


def sites_of(name):
    return ops.sites(kernel_def(name), name)


def mutated(name, op, variant=None, contains=None):
    """The mutated sources of kernel `name` under operator `op`."""
    out = []
    for s in sites_of(name):
        if s["op"] == op and (variant is None or s["variant"] == variant):
            out.append(ops.mutate(kernel_def(name), s))
    return out


class State:
    """What the replay needs of the harness's Triton state: a launch past the hooks."""

    def __init__(self):
        self.launch_raw = lambda jit, args, kwargs: type(jit).run(jit, *args, **kwargs)


def record(kernel, args, kwargs):
    rec = Recorder()
    r = rec.before(kernel.__name__, kernel, args, kwargs)
    type(kernel).run(kernel, *args, **kwargs)
    rec.after(r)
    return rec


def launch_1d(kernel, n, block, inputs):
    out = [0.0] * n
    return record(kernel, inputs + [out, n], {"BLOCK": block, "grid": ((n + block - 1) // block,),
                                               "warmup": False})


class OperatorTest(unittest.TestCase):
    def test_every_operator_makes_the_change_it_names(self):
        want = {
            ("relu_kernel", "where_swap"): "tl.where(x > 0, 0.0, x)",
            ("relu_kernel", "constant"): "tl.where(x > 0, x, 1.0)",
            ("add_kernel", "other"): "other=1.0",
            ("add_kernel", "compare"): "mask = offsets <= n",
            ("add_kernel", "arith"): "x - y",
            ("add_kernel", "drop"): "tl.store(out_ptr + offsets, x, mask=mask)",
            ("add_kernel", "mask_drop"): "tl.load(x_ptr + offsets)",
            ("add_kernel", "bound"): "mask = offsets < n - 1",
            ("transpose_kernel", "index_swap"): "tl.load(x_ptr + rn[None, :] * stride_xm + "
                                                "rm[:, None], mask=mask)",
            ("transpose_kernel", "stride_swap"): "rm[:, None] * stride_zn",
            ("row_block_sum_kernel", "reduce_axis"): "tl.sum(x, 0)",
            ("add_kernel", "offset"): "offsets = pid * BLOCK + tl.arange(0, BLOCK) + 1",
            ("add_kernel", "mask_invert"): "mask=~mask",
        }
        self.assertEqual({op for _, op in want}, set(ops.OPERATORS))
        for (name, op), text in want.items():
            with self.subTest(kernel=name, op=op):
                sources = mutated(name, op)
                self.assertTrue(any(text in s for s in sources), "\n---\n".join(sources))
                for s in sources:
                    ast.parse(s)  # every mutant is valid Python
                    self.assertTrue(s.startswith("def %s(" % name), s[:80])

    def test_sites_name_their_line_and_say_what_changes(self):
        by_op = {}
        for s in sites_of("add_kernel"):
            by_op.setdefault(s["op"], s)
        d = kernel_def("add_kernel")
        self.assertEqual(by_op["mask_drop"]["line"], d.lineno + 4)
        self.assertIn("is removed", by_op["mask_drop"]["desc"])
        self.assertIn("`<` is `<=`", by_op["compare"]["desc"])
        self.assertIn("one less", by_op["bound"]["desc"])

    def test_compile_time_constants_and_pointers_are_left_alone(self):
        for name in ("add_kernel", "row_sum_kernel", "transpose_kernel", "relu_kernel"):
            for s in sites_of(name):
                src = ops.mutate(kernel_def(name), s)
                with self.subTest(kernel=name, site=s["desc"]):
                    self.assertNotIn("tl.arange(1,", src)
                    self.assertNotIn("program_id(1)", src) if name != "transpose_kernel" else None
                    self.assertNotIn("axis=1)\n    offsets", src)
                    self.assertNotIn("_ptr -", src)  # pointer arithmetic is not mutated
        consts = [s for s in sites_of("row_sum_kernel") if s["op"] == "constant"]
        self.assertEqual(consts, [])  # 0 in tl.arange, axis=0, other=0.0: all frozen
        # A 1-D block has no other axis to reduce over: no reduce_axis (it would not compile).
        self.assertNotIn("reduce_axis", {s["op"] for s in sites_of("row_sum_kernel")})
        # Pointers named without _ptr (X, Out) are found from the addresses of tl.load and
        # tl.store and kept out of index swaps and arithmetic, as x_ptr is.
        d = kernel_def("row_block_sum_kernel")
        self.assertEqual(ops.pointer_names(d), {"X", "Out"})
        # The same on the real kernels of tests/verify/strong_g (TritonBench-G): no index swap
        # or arithmetic mutant multiplies or divides a pointer, whatever the kernel calls it.
        real = os.path.join(HERE, "..", "strong_g")
        checked = 0
        for k in sorted(os.listdir(real)):
            code = os.path.join(real, k, "code.py")
            if not os.path.isfile(code):
                continue
            with open(code) as f:
                tree = ast.parse(f.read())
            for fn in tree.body:
                if not (isinstance(fn, ast.FunctionDef) and any(
                        "jit" in ast.unparse(d) for d in fn.decorator_list)):
                    continue
                ptrs = ops.pointer_names(fn)
                for s in ops.sites(fn, fn.name):
                    if s["op"] not in ("index_swap", "arith"):
                        continue
                    checked += 1
                    for b in ast.walk(ast.parse(ops.mutate(fn, s))):
                        if isinstance(b, ast.BinOp) and \
                                isinstance(b.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)):
                            for side in (b.left, b.right):
                                self.assertFalse(isinstance(side, ast.Name) and side.id in ptrs,
                                                 "%s: %s" % (k, s["desc"]))
        self.assertGreater(checked, 100)
        # A product of integers (a grouped tile order) is index arithmetic: * -> +, never a
        # division, which would make a float the compiler refuses.
        grouped = ast.parse("def k(X, n, GROUP: tl.constexpr):\n"
                            "    g = tl.program_id(0) // n\n"
                            "    first = g * GROUP\n"
                            "    tl.store(X + first, 1.0)\n").body[0]
        self.assertEqual(ops.int_names(grouped), {"GROUP", "g", "first"})
        self.assertEqual([x.get("to") for x in ops.sites(grouped, "k") if x["op"] == "arith"],
                         ["+"])
        # Its reduction's axis, given by position (tl.sum(x, 1)), is no constant to change.
        self.assertEqual([s for s in sites_of("row_block_sum_kernel") if s["op"] == "constant"],
                         [])
        swaps = [s for s in sites_of("row_block_sum_kernel") if s["op"] == "index_swap"]
        self.assertTrue(swaps)
        for s in sites_of("row_block_sum_kernel"):
            if s["op"] not in ("index_swap", "arith"):
                continue
            src = ops.mutate(d, s)
            with self.subTest(site=s["desc"]):
                self.assertIn("tl.load(X + ", src)
                self.assertIn("tl.store(Out + rows", src)
                for bad in ("X *", "* X", "X -", "X /", "Out *", "* Out", "Out -", "Out /"):
                    self.assertNotIn(bad, src)

    def test_the_choice_is_deterministic_spread_and_counted(self):
        per = [("add_kernel", sites_of("add_kernel")), ("relu_kernel", sites_of("relu_kernel"))]
        a = ops.choose(per, 6)
        b = ops.choose([(k, list(s)) for k, s in per], 6)
        self.assertEqual([(s["kernel"], s["op"], s["index"]) for s in a],
                         [(s["kernel"], s["op"], s["index"]) for s in b])
        self.assertEqual(len(a), 6)
        # The two kernels take turns; within a kernel the operators do.
        self.assertEqual([s["kernel"] for s in a], ["add_kernel", "relu_kernel"] * 3)
        add_ops = [s["op"] for s in a if s["kernel"] == "add_kernel"]
        self.assertEqual(len(set(add_ops)), len(add_ops))
        self.assertEqual(add_ops[0], "constant" if any(
            s["op"] == "where_swap" for s in per[0][1]) else add_ops[0])
        self.assertEqual(len(ops.choose(per, 1000)), sum(len(s) for _, s in per))
        self.assertEqual(ops.choose(per, 0), [])


class ReplayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.state = State()

    def mutant(self, name, op, variant=None, text=None):
        d = kernel_def(name)
        for i, s in enumerate(sites_of(name)):
            if s["op"] != op or (variant is not None and s["variant"] != variant):
                continue
            src = ops.mutate(d, s)
            if text is None or text in src:
                return build_jit(getattr(kernels, name), src, d, i, self.dir)
        self.fail("no %s mutant of %s" % (op, name))

    def judge(self, rec, mjit):
        return judge(rec.records, mjit, self.state, Originals(self.state))

    def test_a_mutant_is_compiled_as_a_kernel_of_its_own_from_a_file(self):
        m = self.mutant("add_kernel", "arith", text="x - y")
        self.assertIsNot(m, kernels.add_kernel)
        self.assertTrue(m.fn.__code__.co_filename.startswith(self.dir))
        self.assertEqual(m.fn.__code__.co_firstlineno, kernel_def("add_kernel").lineno)
        out = [0.0] * 3
        type(m).run(m, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], out, 3, BLOCK=4, grid=(1,), warmup=False)
        self.assertEqual(out, [0.0, 1.0, 2.0])
        out = [0.0] * 3  # the original is left as it was
        kernels.add_kernel[(1,)]([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], out, 3, BLOCK=4)
        self.assertEqual(out, [2.0, 3.0, 4.0])

    def test_one_compile_of_a_mutant_serves_every_size_the_original_compiles_for(self):
        # Triton specialises an integer that is 1 or a multiple of 16 (a compile each); a
        # mutant is compiled without it (its constexprs kept), so the tail variant's n - 1 and
        # the test's other sizes reuse its one compile. The stand-in records the keys.
        m = self.mutant("add_kernel", "arith", text="x - y")
        self.assertEqual(m.do_not_specialize, ["x_ptr", "y_ptr", "out_ptr", "n"])
        for n in (1, 16, 17):
            x = [1.0] * n
            type(m).run(m, x, x, [0.0] * n, n, BLOCK=32, grid=(1,), warmup=False)
            kernels.add_kernel[(1,)](x, x, [0.0] * n, n, BLOCK=32)
        self.assertEqual(len(m.specialisations), 1)
        self.assertGreaterEqual(len(kernels.add_kernel.specialisations), 3)
        type(m).run(m, x, x, [0.0] * 17, 17, BLOCK=64, grid=(1,), warmup=False)
        self.assertEqual(len(m.specialisations), 2)  # a constexpr is still a compile of its own
        d = kernel_def("add_kernel")
        self.assertEqual(unspecialised(d, [0, "n"]), [0, "n", "x_ptr", "y_ptr", "out_ptr"])

    def test_an_activation_tested_where_it_is_the_identity_is_not_equivalent(self):
        # The test's inputs are positive; the replay's are fresh normal values.
        rec = launch_1d(kernels.relu_kernel, 64, 64, [[float(i + 1) for i in range(64)]])
        self.assertEqual(self.judge(rec, self.mutant("relu_kernel", "constant"))[0], "differs")
        self.assertEqual(self.judge(rec, self.mutant("relu_kernel", "where_swap"))[0], "differs")

    def test_a_change_only_where_the_original_is_undefined_is_equivalent(self):
        # log on positive inputs: a kernel that differs from it only where log(x) is NaN or -inf
        # cannot be told apart by any test of log's domain.
        rec = launch_1d(kernels.log_kernel, 50, 64, [[float(i + 1) for i in range(50)]])
        d = kernel_def("log_kernel_guarded")
        src = ast.unparse(d).replace("@triton.jit\n", "").replace("log_kernel_guarded",
                                                                   "log_kernel") + "\n"
        guarded = build_jit(kernels.log_kernel, src, kernel_def("log_kernel"), 99, self.dir)
        self.assertEqual(self.judge(rec, guarded), ("equivalent", None))
        # while a change where log is defined is not
        self.assertEqual(self.judge(rec, self.mutant("log_kernel", "offset"))[0], "differs")
        self.assertEqual(self.judge(rec, self.mutant("log_kernel", "bound"))[0], "differs")

    def test_a_unit_scale_is_drawn_afresh(self):
        # The test's scale is 1: x / scale equals x * scale there, not on a fresh scale.
        x = [float(i + 1) for i in range(40)]
        rec = record(kernels.scale_kernel, [x, [0.0] * 40, 1.0, 40],
                     {"BLOCK": 64, "grid": (1,), "warmup": False})
        launch = Launch(rec.records[0], "same", 5)
        self.assertGreaterEqual(launch.args[2], 1.25)
        self.assertLessEqual(launch.args[2], 2.0)
        self.assertEqual(launch.args[3], 40)  # integers as captured
        m = self.mutant("scale_kernel", "arith", text="x / scale")
        self.assertEqual(self.judge(rec, m), ("differs", None))

    def test_an_operand_or_a_factor_is_dropped_and_a_unit_one_is_not_equivalent(self):
        # x + y -> x and -> y; x * scale -> x and -> scale; never an address or an index.
        self.assertEqual(sorted(s for s in mutated("scale_kernel", "drop")
                                if "x, mask=mask)" in s or "scale, mask=mask)" in s),
                         sorted(mutated("scale_kernel", "drop")))
        self.assertEqual(len(mutated("add_kernel", "drop")), 2)
        inline = ast.parse("def k(x_ptr, y_ptr, o_ptr, a, n, B: tl.constexpr):\n"
                           "    offs = tl.program_id(0) * B + tl.arange(0, B)\n"
                           "    v = tl.load(x_ptr + offs) * a - tl.load(y_ptr + offs)\n"
                           "    tl.store(o_ptr + offs, v / n)\n").body[0]
        drops = [ops.mutate(inline, s).splitlines()[2].strip() for s in ops.sites(inline, "k")
                 if s["op"] == "drop"]
        self.assertIn("v = tl.load(x_ptr + offs) - tl.load(y_ptr + offs)", drops)  # a dropped
        self.assertIn("v = a - tl.load(y_ptr + offs)", drops)
        self.assertIn("v = tl.load(x_ptr + offs) * a", drops)  # the subtrahend dropped
        self.assertIn("tl.store(o_ptr + offs, v)", drops[-1:] + [
            ops.mutate(inline, s).splitlines()[3].strip() for s in ops.sites(inline, "k")
            if s["op"] == "drop" and "v / n" in s["desc"]])
        self.assertEqual(len(drops), 4)  # none in offs (index arithmetic) or an address
        # The test's second operand is all zeros and its scale 1: the replay's fresh inputs
        # still tell the mutants apart from the original.
        rec = launch_1d(kernels.add_kernel, 70, 64, [[float(i) for i in range(70)], [0.0] * 70])
        for variant in (0, 1):
            m = self.mutant("add_kernel", "drop", variant=variant)
            self.assertEqual(self.judge(rec, m), ("differs", None))
        rec = record(kernels.scale_kernel, [[float(i + 1) for i in range(40)], [0.0] * 40, 1.0,
                                            40], {"BLOCK": 64, "grid": (1,), "warmup": False})
        self.assertEqual(self.judge(rec, self.mutant("scale_kernel", "drop", variant=0)),
                         ("differs", None))

    def test_a_fill_that_never_reaches_the_output_is_equivalent(self):
        # add_kernel stores under the same mask it loads with: other= never shows.
        rec = launch_1d(kernels.add_kernel, 70, 64, [[1.0] * 70, [2.0] * 70])
        self.assertEqual(self.judge(rec, self.mutant("add_kernel", "other")), ("equivalent", None))

    def test_a_mask_that_only_the_tail_needs_is_found_with_sizes_one_less(self):
        # A row sum launched only at a block multiple (64 columns, BLOCK_N 64): other= does not
        # show with the captured sizes; with n_cols and stride 63 it does.
        x = [float(i % 7) for i in range(4 * 64)]
        rec = record(kernels.row_sum_kernel, [x, [0.0] * 4, 64, 64],
                     {"BLOCK_N": 64, "grid": (4,), "warmup": False})
        self.assertEqual(rec.records[0].blocks, {64})
        self.assertEqual(rec.records[0].shrink, {("a", 2), ("a", 3)})
        self.assertEqual(self.judge(rec, self.mutant("row_sum_kernel", "other")),
                         ("differs_tail", None))
        # At 60 columns the captured sizes show it already.
        x = [float(i % 7) for i in range(4 * 60)]
        rec = record(kernels.row_sum_kernel, [x, [0.0] * 4, 60, 60],
                     {"BLOCK_N": 64, "grid": (4,), "warmup": False})
        self.assertEqual(self.judge(rec, self.mutant("row_sum_kernel", "other")),
                         ("differs", None))

    def test_a_mutant_that_reaches_outside_its_buffers_is_unsafe(self):
        rec = launch_1d(kernels.add_kernel, 70, 64, [[1.0] * 70, [2.0] * 70])
        self.assertEqual(self.judge(rec, self.mutant("add_kernel", "mask_drop"))[0], "unsafe")

    def test_a_mutant_that_does_not_run_is_stillborn(self):
        rec = record(kernels.row_sum_kernel, [[1.0] * 64, [0.0], 64, 64],
                     {"BLOCK_N": 64, "grid": (1,), "warmup": False})
        src = ops.mutate(kernel_def("row_sum_kernel"),
                         [s for s in sites_of("row_sum_kernel") if s["op"] == "compare"][0]
                         ).replace("tl.sum(x, axis=0)", "tl.no_such_op(x)")
        m = build_jit(kernels.row_sum_kernel, src, kernel_def("row_sum_kernel"), 7, self.dir)
        outcome, why = self.judge(rec, m)
        self.assertEqual(outcome, "stillborn")
        self.assertIn("AttributeError", why)

    def test_integer_buffers_are_replayed_as_captured_and_floats_afresh(self):
        idx = [3, 0, 2, 1]
        x = [10.0, 20.0, 30.0, 40.0]
        rec = record(kernels.gather_kernel, [x, idx, [0.0] * 4, 4],
                     {"BLOCK": 16, "grid": (1,), "warmup": False})
        r = rec.records[0]
        launch = Launch(r, "same", 1)
        self.assertEqual(launch.args[1], idx)
        self.assertIsNot(launch.args[1], idx)
        self.assertNotEqual(launch.args[0], x)
        self.assertEqual(Launch(r, "same", 1).args[0], launch.args[0])  # seeded
        self.assertEqual(self.judge(rec, self.mutant("gather_kernel", "constant")),
                         ("differs", None))

    def test_a_launch_is_recorded_once_and_only_the_first_few(self):
        rec = Recorder()
        for n in (8, 8, 9, 10, 11, 12, 13):
            r = rec.before("add_kernel", kernels.add_kernel, [[1.0] * n, [1.0] * n, [0.0] * n, n],
                           {"BLOCK": 64, "grid": (1,), "warmup": False})
            rec.after(r)
        self.assertEqual(len(rec.of("add_kernel")), 4)
        self.assertEqual(rec.kernels(), [("add_kernel", kernels.add_kernel)])


class RequestTest(unittest.TestCase):
    def test_the_kernel_battery_of_a_request_is_read_strictly(self):
        from kforge_harness.runner import kernel_options
        self.assertEqual(kernel_options({}), (0, 0.0))
        self.assertEqual(kernel_options({"kernel_mutants": {"count": 8, "time_s": 30}}),
                         (8, 30.0))
        for bad in ({"count": 8}, {"count": -1, "time_s": 1}, {"count": 2, "time_s": 0},
                    {"count": "8", "time_s": 1}, {"count": 1, "time_s": 1, "extra": 1}, [8, 30],
                    {"count": True, "time_s": 1}):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError):
                    kernel_options({"kernel_mutants": bad})


if __name__ == "__main__":
    unittest.main(verbosity=2)
