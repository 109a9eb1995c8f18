"""Each cause of flags that changed from run to run (issue 52), in the harness alone on the CPU
stand-in for Triton: the sample's real run made in this process (runner.run_sample), then the
mutant phases' calls with the lot fixed each way. Run by tests/verify/repeat_test.cpp
(VerifyRepeat.PythonEachCause) as `python3 repeat_test.py HARNESS_DIR FAKE_TRITON_DIR`."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                          os.environ["KFORGE_HARNESS_DIR"])
FAKE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_FAKE_TRITON"])
sys.path.insert(0, HARNESS)
sys.path.insert(0, FAKE)

from kforge_harness import controls, mutants, runner  # noqa: E402
from kforge_harness.report_schema import VERDICT  # noqa: E402

SAMPLES = os.path.dirname(HERE)


def request_of(path):
    def read(name):
        with open(os.path.join(path, name)) as f:
            return f.read()
    return {"code": read("code.py"), "kernel_wrapper": read("wrapper.py"),
            "unitest_code": read("test.py"), "kernel_mutants": {"count": 4, "time_s": 30}}


class Lot(controls.Controls):
    """Controls whose places are fixed: `at` for every draw (the operating system's otherwise)."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def place(self, n):
        return min(self.at, n)


def real_run(corpus, name):
    """The sample's real run, in this process (one per process: the harness sets its hooks up
    once). Returns the sample."""
    report = {}
    sample = runner.run_sample(request_of(os.path.join(SAMPLES, corpus, name)), report)
    if report["verdict"] != VERDICT.passed:
        raise AssertionError("the real run did not pass: %s" % report.get("detail"))
    return sample


def scenario(case, at):
    """One scenario in this process, the lot at `at`; returns what the test compares."""
    if case == "reruns":
        sample = real_run("repeat", "drawn_threshold")
        return [controls.run_tests(sample, "control") is None for _ in range(6)]
    if case == "fresh":
        sample = real_run("repeat", "fault_after_first_import")
        lot, report = Lot(at), {}
        mutants.skip_launch_run(sample, report, lot)
        return [report["verdict"]] + [[r["kind"], r["result"]] for r in lot.out["runs"]]
    if case == "oom":  # `at`: the run with a wrong answer that dies allocating
        import builtins
        builtins._oom_from = at
        sample = real_run("repeat", "mutant_out_of_memory")
        report = {}
        mutants.run_mutants(sample, report, list(mutants.MUTANTS), (4, 30.0))
        c, b, kb = report["controls"], report.get("battery", {}), report.get("kernel_battery", {})
        return [c["failed"], c.get("infrastructure"), c["void_reason"].split(" ran out")[0],
                b.get("stopped"), b.get("killed"), kb.get("stopped"), kb.get("killed")]
    sample = real_run("samples", "mutant_weak_loose")
    lot, report = Lot(at), {}
    mutants.run_battery(sample, list(mutants.MUTANTS), report, lot)
    return [report["battery"]["survived"], [r["kind"] for r in lot.out["runs"]]]


class Cause(unittest.TestCase):
    def run_scenario(self, case, at=0):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), HARNESS, FAKE,
                                  "--scenario", case, str(at)], cwd=tmp, capture_output=True,
                                 text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        return json.loads(out.stdout.strip().splitlines()[-1])

    def test_every_run_of_the_tests_draws_the_real_runs_inputs(self):
        # Its test fails on about half of the draws after the seeded real run's: before, the
        # runs of the tests after it drew on (the third rerun drew a failing value), so a
        # control's result depended on how many runs the lot put before it.
        self.assertEqual(self.run_scenario("reruns"), [True] * 6)

    def test_the_fresh_control_runs_whichever_side_of_the_skip_launch_run_it_lands(self):
        # Its test passes with the launches skipped and dies in every import after the first.
        # Before, the control after the skip-launch run was made only when the tests failed
        # there: flagged unstable_test with the control first, mutant_survived with it after.
        for at in (0, 1):
            self.assertEqual(self.run_scenario("fresh", at),
                             [VERDICT.passed, ["fresh", VERDICT.failed]], at)

    def test_the_output_batterys_control_runs_past_the_first_survivor(self):
        # mutant_weak_loose survives "scale"; a control placed after it was never made before,
        # so whether a failing control voided the battery was the lot's.
        for at in (0, len(mutants.MUTANTS)):
            self.assertEqual(self.run_scenario("battery", at), [["scale"], ["rerun"]], at)

    def test_a_mutant_run_out_of_gpu_memory_is_no_kill(self):
        # Out of memory in the first run with a wrong answer (the skip-launch run), the second
        # (the first output mutant) or the eighth (the second kernel mutant: after the
        # skip-launch run, five output mutants that change the answer, permute_row leaving it as
        # it was, and the first kernel mutant): the battery stops there, nothing counts, and the
        # controls say infrastructure (the pool's flag), not failed (unstable_test).
        self.assertEqual(self.run_scenario("oom", 1)[:3],
                         [False, True, "the skip-launch run"])
        self.assertEqual(self.run_scenario("oom", 2),
                         [False, True, "output mutant tail", "a run ran out of GPU memory", 0,
                          None, None])
        self.assertEqual(self.run_scenario("oom", 8),
                         [False, True, "kernel mutant 2 (k2)", None, 0,
                          "a run ran out of GPU memory", 0])

    def test_a_failed_control_voids_the_survivors_too(self):
        lot = controls.Controls()
        lot.record("rerun", "output mutant 2", {"name": "test_a", "exception": "E"}, 0.0)
        report = {"battery": {"mutants": [{"mutant": "tail", "result": "killed", "by": "t: X"},
                                          {"mutant": "scale", "result": "survived"}],
                              "survived": ["scale"]},
                  "kernel_battery": {"mutants": [{"mutant": "k1", "result": "survived"}],
                                     "survived": [{"mutant": "k1"}]}}
        lot.void(report)
        self.assertEqual([e["result"] for e in report["battery"]["mutants"]], ["void", "void"])
        self.assertEqual(report["battery"]["survived"], [])
        self.assertEqual(report["kernel_battery"]["survived"], [])
        self.assertEqual(report["battery"]["applicable"], 0)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--scenario":
        result = scenario(sys.argv[2], int(sys.argv[3]))
        sys.stdout.flush()
        print(json.dumps(result))
        sys.exit(0)
    unittest.main()
