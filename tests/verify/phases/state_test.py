"""The harness's phases (kforge_harness/phases) on what a phase leaves in the process, in a real
Python process without a GPU: sequence.Phases around phases made to misbehave, and state.State
on a stand-in for torch's CUDA state (a generator left marked as capturing by a failed graph
capture, another current stream, a capture still under way), the cases a GPU run meets. Run by
tests/verify/phases_test.cpp (VerifyPhases.GuardAndSequenceInARealProcess) as
`python3 state_test.py HARNESS_DIR`."""

import os
import random
import sys
import tempfile
import types
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness.phases.sequence import Phases, Result  # noqa: E402


class Generator:
    """A CUDA generator's state as torch keeps it: a failed capture leaves it capturing, and
    every later draw raises (what made every mutant run after a broken timing capture fail)."""

    def __init__(self):
        self.offset, self.capturing = 0, False

    def clone_state(self):
        g = Generator()
        g.offset = self.offset
        return g

    def graphsafe_set_state(self, state):
        self.offset, self.capturing = state.offset, state.capturing

    def draw(self):
        if self.capturing:
            raise RuntimeError("Offset increment outside graph capture encountered unexpectedly")
        self.offset += 4
        return self.offset


class Cuda:
    def __init__(self):
        self.default_generators = [Generator()]
        self.stream, self.capture = "default", False

    def is_initialized(self):
        return True

    def current_stream(self):
        return self.stream

    def set_stream(self, s):
        self.stream = s

    def is_current_stream_capturing(self):
        return self.capture


def fake_torch():
    t = types.ModuleType("torch")
    t.cuda = Cuda()
    t.rng = 0
    t.get_rng_state = lambda: t.rng
    t.set_rng_state = lambda v: setattr(t, "rng", v)
    t.grad = True
    t.is_grad_enabled = lambda: t.grad
    t.set_grad_enabled = lambda v: setattr(t, "grad", v)
    t.dtype = "float32"
    t.get_default_dtype = lambda: t.dtype
    t.set_default_dtype = lambda v: setattr(t, "dtype", v)
    t.det = False
    t.are_deterministic_algorithms_enabled = lambda: t.det
    t.use_deterministic_algorithms = lambda v: setattr(t, "det", v)
    return t


class WithTorch(unittest.TestCase):
    def setUp(self):
        self.torch = fake_torch()
        sys.modules["torch"] = self.torch

    def tearDown(self):
        sys.modules.pop("torch", None)

    def test_a_generator_left_capturing_is_given_back_its_state(self):
        g = self.torch.cuda.default_generators[0]
        g.draw()
        report = {}
        phases = Phases(report, sets_up=False)

        def failed_capture():
            g.draw()
            g.capturing = True  # the capture broke part-way
            raise RuntimeError("operation not permitted when stream is capturing")
        phases.run("speed", failed_capture, broken=lambda why: {"speed": {"timed": False}})
        self.assertFalse(g.capturing)
        self.assertEqual(g.offset, 4)  # as before the phase
        self.assertIn("RuntimeError", report["phase_errors"]["speed"])
        self.assertEqual(report["speed"], {"timed": False})
        # The next phase draws as it would have without the broken one.
        self.assertEqual(phases.run("bounds", lambda: Result({}, g.draw())), 8)

    def test_state_is_put_back_and_named(self):
        report = {}
        phases = Phases(report, sets_up=False)

        def messy():
            self.torch.cuda.set_stream("side")
            self.torch.set_grad_enabled(False)
            self.torch.set_default_dtype("float64")
            self.torch.set_rng_state(99)
            return {}
        phases.run("speed", messy)
        self.assertEqual(self.torch.cuda.stream, "default")
        self.assertTrue(self.torch.grad)
        self.assertEqual(self.torch.dtype, "float32")
        self.assertEqual(self.torch.rng, 0)
        left = report["phase_state"]["speed"]
        for what in ("current CUDA stream", "torch grad mode", "torch default dtype"):
            self.assertIn(what, left)
        self.assertNotIn("torch random state", left)  # put back silently

    def test_a_capture_under_way_stops_the_process(self):
        report = {}
        phases = Phases(report, sets_up=False)

        def stuck():
            self.torch.cuda.capture = True
            return {"speed": {"timed": True}}
        phases.run("speed", stuck)
        ran = []
        phases.run("bounds", lambda: ran.append(1) or {},
                   broken=lambda why: {"bounds": {"error": why}})
        self.assertEqual(ran, [])
        self.assertTrue(report["phase_errors"]["bounds"].startswith("not run: the speed phase"))
        self.assertIn("capture", report["mutant_phase_skipped"])
        self.assertIn("not run", report["bounds"]["error"])
        self.assertIn("CUDA graph capture under way", report["phase_state"]["speed"])


class WithoutTorch(unittest.TestCase):
    def test_python_state_is_put_back(self):
        report = {}
        phases = Phases(report, sets_up=False)
        cwd, out = os.getcwd(), sys.stdout
        random.seed(1)
        expected = random.random()
        random.seed(1)

        def messy():
            closed = open(os.devnull, "w")
            closed.close()
            sys.stdout = closed
            sys.settrace(lambda *a: None)
            os.chdir(tempfile.gettempdir())
            os.environ["KFORGE_GUARD_TEST"] = "1"
            random.random()
            return {}
        phases.run("speed", messy)
        self.assertIs(sys.stdout, out)
        self.assertIsNone(sys.gettrace())
        self.assertEqual(os.getcwd(), cwd)
        self.assertNotIn("KFORGE_GUARD_TEST", os.environ)
        self.assertEqual(random.random(), expected)
        self.assertEqual(sorted(report["phase_state"]["speed"]),
                         ["os.environ", "sys.settrace", "sys.stdout", "working directory"])

    def test_a_broken_phase_leaves_the_later_ones_running(self):
        report = {}
        phases = Phases(report, sets_up=False)

        def broken():
            raise SystemExit("made to fail")
        phases.run("speed", broken, broken=lambda why: {"speed": {"reason": why}})
        self.assertEqual(phases.run("bounds", lambda: Result({"bounds": {}}, "ran")), "ran")
        self.assertEqual(report["speed"]["reason"], "harness error: SystemExit: made to fail")
        self.assertEqual(report["mutant_phase_skipped"], "the speed phase broke")
        self.assertEqual(set(report["phase_times"]), {"speed", "bounds"})
        self.assertNotIn("bounds", report["phase_errors"])

    def test_a_phase_that_does_not_apply_records_nothing(self):
        report = {}
        Phases(report, sets_up=False).run("cross_compile", lambda: None)
        self.assertEqual(report, {"phase_times": {}})


if __name__ == "__main__":
    unittest.main()
