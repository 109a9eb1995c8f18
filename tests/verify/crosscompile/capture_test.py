"""The harness's cross-compilation (kforge_harness/crosscompile.py) with launches and a Triton
faked in Python: what a launch's specialisation is captured as, and what each target's result
is when the compiler passes, raises, aborts, hangs or is missing. Run by
tests/verify/crosscompile_test.cpp (VerifyCrossCompile.PythonCapture) as
`python3 capture_test.py HARNESS_DIR`."""

import os
import sys
import time
import unittest
from collections import namedtuple

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness import crosscompile as cc  # noqa: E402


class Fn:
    """A JIT function as Triton's ASTSource sees it."""

    def __init__(self, name, arg_names):
        self.__name__ = name
        self.arg_names = arg_names
        self.cache_key = "k-" + name


class Src:
    def __init__(self, fn, signature, constants=None, attrs=None):
        self.fn, self.signature = fn, signature
        self.constants, self.attrs = constants or {}, attrs or {}


class Compiled:
    """What JITFunction.run returns in Triton 3.x: .src (the ASTSource) and .metadata."""

    def __init__(self, src):
        self.src = src
        self.metadata = namedtuple("M", "num_warps arch")(4, "sm90")


class Future:
    def __init__(self, kernel):
        self.kernel = kernel

    def result(self):
        return self.kernel


ADD = Fn("add_kernel", ["x_ptr", "out_ptr", "n", "BLOCK"])


def add_launch(block=64, n=4096):
    sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"}
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    if n % 16 == 0:
        attrs[(2,)] = [["tt.divisibility", 16]]
    return Compiled(Src(ADD, sig, {(3,): block}, attrs))


class Target:
    def __init__(self, backend, arch, warp_size):
        self.backend, self.arch, self.warp_size = backend, arch, warp_size


class Backend:
    def __init__(self, compiler):
        self.compiler = compiler


class AMD:
    @staticmethod
    def supports_target(t):
        return t.backend == "hip"

    def add_stages(self, stages, options):
        stages["ttir"] = lambda m, md: m
        stages["ttgir"] = lambda m, md: m
        stages["amdgcn"] = lambda m, md: m


class AST:
    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn, self.signature, self.constants, self.attrs = fn, signature, constexprs, attrs


def make_parts(behaviour, seen=None):
    """A Triton whose compile() does `behaviour` for kernels named in it; runs the stages."""

    def compile_fn(src, target=None, options=None):
        if seen is not None:
            seen.append((src.fn.__name__, dict(src.signature), dict(src.constants),
                         dict(src.attrs), dict(options), (target.backend, target.arch,
                                                          target.warp_size)))
        stages = {}
        AMD().add_stages(stages, options)
        what = behaviour.get(src.fn.__name__)
        for name, stage in stages.items():
            stage("m", {})
            if what == "raise" and name == "amdgcn":
                raise RuntimeError("<inline asm>:1:2: error: invalid instruction\n"
                                   "  mov.b32 $0, $1;\n  ^\nsecond\nthird\nlast words")
            if what == "abort" and name == "ttgir":
                sys.stderr.write("noise\nLLVM ERROR: Cannot select: intrinsic\n")
                sys.stderr.flush()
                os.abort()
            if what == "hang":
                time.sleep(60)
        return object()

    # stage tracking wraps AMD.add_stages in the child: compile_fn calls it through the class.
    return (AST, Target, compile_fn, {"amd": Backend(AMD)})


class CaptureTest(unittest.TestCase):
    def test_a_launch_is_captured_with_its_exact_specialisation(self):
        specs = cc.Specs()
        specs.note("add_kernel", add_launch(), {"num_warps": 8, "num_stages": 2,
                                                 "maxnreg": 128, "BLOCK": 64},
                   autotune="BLOCK: 64, num_warps: 8, num_stages: 2")
        self.assertEqual(len(specs.specs), 1)
        d = specs.specs[0].describe()
        self.assertEqual(d["kernel"], "add_kernel")
        self.assertEqual(d["signature"], {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32",
                                          "BLOCK": "constexpr"})
        self.assertEqual(d["constexprs"], {"BLOCK": 64})
        self.assertEqual(d["attrs"], {"x_ptr": [["tt.divisibility", 16]],
                                      "out_ptr": [["tt.divisibility", 16]],
                                      "n": [["tt.divisibility", 16]]})
        # Only the options that mean the same on every backend: not CUDA's maxnreg.
        self.assertEqual(d["options"], {"num_warps": 8, "num_stages": 2})
        self.assertEqual(d["autotune_config"], "BLOCK: 64, num_warps: 8, num_stages: 2")

    def test_repeated_launches_count_once_and_each_new_specialisation_is_kept(self):
        specs = cc.Specs()
        for _ in range(3):
            specs.note("add_kernel", add_launch(), {})
        specs.note("add_kernel", add_launch(block=128), {})
        specs.note("add_kernel", add_launch(n=4097), {})  # n no longer divisible by 16
        specs.note("add_kernel", add_launch(), {"num_warps": 2})
        self.assertEqual(specs.launches, 6)
        self.assertEqual(len(specs.specs), 4)
        self.assertEqual(specs.specs[1].describe()["constexprs"], {"BLOCK": 128})
        self.assertNotIn("n", specs.specs[2].describe()["attrs"])
        self.assertEqual(specs.specs[3].options, {"num_warps": 2})

    def test_an_async_compile_is_resolved_and_a_launch_without_source_is_named(self):
        specs = cc.Specs()
        specs.note("add_kernel", Future(add_launch()), {})
        specs.note("other", None, {})
        specs.note("other", object(), {})
        self.assertEqual(len(specs.specs), 1)
        self.assertEqual(len(specs.uncaptured), 2)
        self.assertIn("NoneType", specs.uncaptured[0])

    def test_tuple_paths_and_odd_constexprs_are_described_by_name(self):
        fn = Fn("k", ["t", "dtype"])
        src = Src(fn, {"t": ("*fp32", "i32"), "dtype": "constexpr"},
                  {(1,): Fn("helper", [])}, {(0, 0): [["tt.divisibility", 16]]})
        specs = cc.Specs()
        specs.note("k", Compiled(src), {})
        d = specs.specs[0].describe()
        self.assertEqual(d["signature"]["t"], ["*fp32", "i32"])
        self.assertEqual(d["constexprs"], {"dtype": "jit:helper"})
        self.assertEqual(d["attrs"], {"t[0]": [["tt.divisibility", 16]]})

    def test_targets_are_parsed_strictly(self):
        self.assertEqual(cc.parse_target("hip:gfx942"), ("hip", "gfx942", 64))
        self.assertEqual(cc.parse_target("hip:gfx90a"), ("hip", "gfx90a", 64))
        self.assertEqual(cc.parse_target("hip:gfx1100"), ("hip", "gfx1100", 32))
        for bad, words in (("gfx942", "BACKEND:ARCH"), ("cuda:sm90", "backend 'cuda'"),
                           ("hip:mi300", "not an AMD architecture")):
            with self.assertRaises(ValueError) as e:
                cc.parse_target(bad)
            self.assertIn(words, str(e.exception))

    def test_errors_are_shortened_to_the_stage_and_first_lines(self):
        e = RuntimeError("line one\n\nline two\nline three\nline four\nthe reason")
        msg = cc.shorten_error(e, "amdgcn")
        self.assertEqual(msg, "amdgcn: RuntimeError: line one | line two | line three | "
                              "... the reason")
        self.assertLessEqual(len(cc.shorten_error(RuntimeError("x" * 5000), "ttgir")),
                             cc.MAX_ERROR)


class CompileTest(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kforge-cc-%d" % os.getpid())
        os.makedirs(self.dir, exist_ok=True)

    def specs(self, *names):
        specs = cc.Specs()
        for name in names:
            fn = Fn(name, ["x_ptr", "BLOCK"])
            specs.note(name, Compiled(Src(fn, {"x_ptr": "*fp32", "BLOCK": "constexpr"},
                                          {(1,): 32}, {(0,): [["tt.divisibility", 16]]})),
                       {"num_warps": 4, "maxnreg": 64})
        return specs

    def test_each_target_compiles_every_specialisation_with_the_launch_options(self):
        seen = []
        out = cc.cross_compile(self.specs("a", "b"), ["hip:gfx942", "hip:gfx90a"], 30,
                               self.dir, parts=make_parts({}, seen))
        self.assertEqual(out["targets"]["hip:gfx942"]["result"], "ok")
        self.assertEqual(out["targets"]["hip:gfx942"]["kernels"], 2)
        self.assertEqual(out["targets"]["hip:gfx90a"]["result"], "ok")
        self.assertEqual([k["kernel"] for k in out["kernels"]], ["a", "b"])
        self.assertEqual(out["launches"], 2)
        # The compiles ran in forked children: nothing was seen in this process.
        self.assertEqual(seen, [])

    def test_a_compiler_error_names_the_kernel_the_stage_and_the_first_lines(self):
        out = cc.cross_compile(self.specs("a", "bad"), ["hip:gfx942"], 30, self.dir,
                               parts=make_parts({"bad": "raise"}))
        t = out["targets"]["hip:gfx942"]
        self.assertEqual(t["result"], "error")
        self.assertEqual(t["kernel"], "bad")
        self.assertEqual(t["stage"], "amdgcn")
        self.assertEqual(t["failed"], 1)
        self.assertTrue(t["error"].startswith("amdgcn: RuntimeError: <inline asm>:1:2: error: "
                                              "invalid instruction"), t["error"])
        self.assertIn("... last words", t["error"])

    def test_a_compiler_that_aborts_is_an_error_of_its_target_only(self):
        out = cc.cross_compile(self.specs("crash", "b"), ["hip:gfx942", "hip:gfx90a"], 30,
                               self.dir, parts=make_parts({"crash": "abort"}))
        for target in ("hip:gfx942", "hip:gfx90a"):
            t = out["targets"][target]
            self.assertEqual(t["result"], "error")
            self.assertEqual(t["kernel"], "crash")
            self.assertEqual(t["stage"], "ttgir")
            self.assertIn("the compiler crashed (SIGABRT)", t["error"])
            self.assertIn("LLVM ERROR: Cannot select: intrinsic", t["error"])
        self.assertEqual(os.listdir(self.dir), [])  # the compiler's log is removed

    def test_a_compiler_that_hangs_is_killed_at_the_deadline(self):
        t0 = time.monotonic()
        out = cc.cross_compile(self.specs("slow"), ["hip:gfx942", "hip:gfx90a"], 1.0, self.dir,
                               parts=make_parts({"slow": "hang"}))
        self.assertLess(time.monotonic() - t0, 10)
        self.assertIn("did not end within its deadline", out["targets"]["hip:gfx942"]["error"])
        self.assertEqual(out["targets"]["hip:gfx90a"]["stage"], "deadline")

    def test_a_missing_backend_or_triton_is_unavailable_not_an_error(self):
        parts = make_parts({})
        no_amd = (parts[0], parts[1], parts[2], {})
        out = cc.cross_compile(self.specs("a"), ["hip:gfx942"], 30, self.dir, parts=no_amd)
        self.assertEqual(out["targets"]["hip:gfx942"],
                         {"result": "unavailable",
                          "reason": "this Triton has no backend for hip:gfx942"})
        sys.modules.pop("triton", None)
        out = cc.cross_compile(self.specs("a"), ["hip:gfx942"], 30, self.dir)
        self.assertEqual(out["targets"]["hip:gfx942"]["result"], "unavailable")
        self.assertEqual(out["targets"]["hip:gfx942"]["reason"], "triton is not loaded")

    def test_no_captured_launch_means_nothing_to_compile(self):
        out = cc.cross_compile(cc.Specs(), ["hip:gfx942"], 30, self.dir, parts=make_parts({}))
        self.assertEqual(out["targets"]["hip:gfx942"]["result"], "not_run")


if __name__ == "__main__":
    unittest.main(verbosity=2)
