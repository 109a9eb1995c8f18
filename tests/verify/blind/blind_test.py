"""The harness's blind calls, guard and control rule on their own (real Python, no pool):
  python3 blind_test.py HARNESS_DIR FAKE_TRITON_DIR
tests/verify/tamper_test.cpp runs it; the pool runs of the tampering corpus are there too."""

import os
import sys
import threading
import unittest

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
del sys.argv[1:]

from kforge_harness import blind  # noqa: E402
from kforge_harness.controls import Controls  # noqa: E402
from kforge_harness.guard import GUARD, Guard  # noqa: E402


class BlindTest(unittest.TestCase):
    def test_the_call_runs_on_one_thread_with_the_verifier_out_of_sys_modules(self):
        def probe():
            f, names = sys._getframe(), []
            while f is not None:
                names.append(f.f_code.co_name)
                f = f.f_back
            return (threading.current_thread().name, threading.get_ident(), names,
                    [m for m in sys.modules if m.startswith("kforge_harness")])
        a = blind.call("run", probe)
        b = blind.call("skip_launch", probe)
        self.assertEqual(a[0], "Thread-1")
        self.assertEqual(a[1], b[1])  # the same thread every time
        self.assertEqual(a[2], ["probe", "run", "run", "_bootstrap_inner", "_bootstrap"])
        self.assertEqual(a[2], b[2])
        self.assertEqual(a[3], [])
        self.assertIn("kforge_harness.blind", sys.modules)  # put back

    def test_the_speed_labels_timed_calls_come_from_the_runner_frame(self):
        # The timing loop, the kernel-share calls and the plain calls of the speed label
        # (timing.py) call the wrapper from the runner frame, as the real run does: no frame of
        # the timer on the wrapper's stack, the verifier out of sys.modules (issue 52).
        from kforge_harness import timing, timing_timer as tt
        stacks = []

        def wrapper(x):
            f, names = sys._getframe(), []
            while f is not None:
                names.append((f.f_code.co_filename.rsplit("/", 1)[-1], f.f_code.co_name))
                f = f.f_back
            stacks.append((names, [m for m in sys.modules if m.startswith("kforge_harness")]))
            return x + 1
        seen = []
        call = timing._SampleCall(wrapper, [1], lambda: seen.append("before"),
                                  lambda out: seen.append(out) or out)
        timer = tt.Timer(None)
        timer.via = timing.RUN.between
        with blind.stretch("timing"):
            _, t, out, clean, _ = timer.rep(call)
            tt.loop(timer, [lambda rep: call], 5.0, {"min_reps": 3, "max_reps": 3}, 0.5)
            tt.warm_up(timer, [call], seconds=0.0)
            call()
        self.assertEqual((out, clean), (2, True))
        self.assertGreater(t, 0.0)
        self.assertEqual(seen[:2], ["before", 2])  # the bookkeeping on this thread
        self.assertEqual(len(stacks), 1 + 3 + 2 + 1)  # rep, loop, warm-up (twice), plain
        self.assertEqual(blind.call("run", wrapper, 1), 2)  # as a test run calls it
        test_run = stacks.pop()
        self.assertEqual(test_run[0][:2], [("blind_test.py", "wrapper"), ("<string>", "run")])
        for names, mods in stacks:
            self.assertEqual(names, test_run[0])
            self.assertEqual(mods, [])

    def test_a_timed_call_and_a_plain_one_look_the_same_from_the_runner_frame(self):
        # What a sample can read from its frames while its code runs: the runner frame's locals
        # (names, types, the line), the queues they hold (lengths, a job or a result pulled
        # with get_nowait), the thread. The same in a timed rep (start, call and end handed
        # over at once), a plain call of the runner's (the differential check's, the stream
        # watch's) and a test's call; a timed rep once left the rep's end queued behind the
        # call (inbox.qsize() 1) and its start's result handed back (outbox.qsize() 1), and a
        # plain call of the timing's held its arguments four more times (sys.getrefcount).
        import _queue
        from kforge_harness import timing, timing_timer as tt
        seen, counts = [], []

        def wrapper(x):
            f = sys._getframe(1)
            while f.f_code.co_filename != "<string>":
                f = f.f_back
            loc = dict(f.f_locals)
            pulled = []
            for name in ("inbox", "outbox"):
                try:
                    got = loc[name].get_nowait()
                except _queue.Empty:
                    continue
                loc[name].put(got)
                pulled.append((name, got))
            t = threading.current_thread()
            counts.append(sys.getrefcount(x))
            seen.append((sorted((k, type(v).__name__) for k, v in loc.items()), f.f_lineno,
                         loc["inbox"].qsize(), loc["outbox"].qsize(), pulled,
                         t.name, t.ident, [q.qsize() for q in t._args]))
            return x

        def test_it():
            return wrapper(3)
        timer = tt.Timer(None)
        timer.via = timing.RUN.between
        box = [1.0]
        call = timing._SampleCall(wrapper, [box], lambda: None, lambda out: out)
        with blind.stretch("timing"):
            timer.rep(call)  # a timed rep
            call()  # a plain call of the timing's (the stream watch's)
        self.assertEqual(counts[0], counts[1])  # the arguments held alike (sys.getrefcount)
        blind.call("differential", wrapper, 2)
        blind.call("run", test_it)
        self.assertEqual(len(seen), 4)
        self.assertEqual(seen[0][2:5], (0, 0, []))
        for other in seen[1:]:
            self.assertEqual(other, seen[0])

    def test_a_result_the_sample_puts_on_the_queues_is_not_taken_for_the_calls(self):
        # A sample that reaches the runner's queues (its frame's locals, the thread's _args)
        # and hands back a result of its own (a test "passed"), or queues a batch of its own to
        # be run after the call: the verifier takes the call's own result, in step, and the
        # guard records it (tampered).
        def forge():
            f = sys._getframe(1)
            f.f_locals["outbox"].put((True, ["forged"]))
            raise AssertionError("the real result")

        def inject():
            threading.current_thread()._args[0].put((lambda: "injected",))
            return "mine"
        before = len(GUARD.findings)
        with self.assertRaises(AssertionError):
            blind.call("run", forge)
        self.assertEqual(blind.call("run", inject), "mine")
        self.assertEqual(blind.call("run", abs, -4), 4)  # in step after both
        found = GUARD.findings[before:]
        self.assertEqual(len(found), 2)
        self.assertEqual({f["what"] for f in found}, {"the runner's results"})

    def test_an_error_between_the_timers_events_comes_back_and_the_queue_stays_in_step(self):
        def boom(x):
            raise KeyError(x)
        ends = []
        with self.assertRaises(KeyError):
            blind.call_between("timing", lambda: 1, boom, (3,), lambda: ends.append(2))
        self.assertEqual(ends, [2])  # the end ran (a profiler's exit), once
        self.assertEqual(blind.call_between("timing", lambda: 1, abs, (-3,), lambda: 2),
                         (1, 3, 2))

    def test_an_exception_comes_back_with_its_traceback(self):
        def boom():
            raise ValueError("x")
        try:
            blind.call("run", boom)
        except ValueError as e:
            tb, files = e.__traceback__, []
            while tb is not None:
                files.append((tb.tb_frame.f_code.co_filename.rsplit("/", 1)[-1],
                              tb.tb_frame.f_code.co_name))
                tb = tb.tb_next
        self.assertEqual(files[-2:], [("<string>", "run"), ("blind_test.py", "boom")])

    def test_a_coroutine_test_is_run_to_its_end(self):
        async def t():
            return 7
        self.assertEqual(blind.call("run", t), 7)


class GuardTest(unittest.TestCase):
    def test_a_replacement_a_new_code_and_a_deletion_are_found(self):
        import math
        import json
        g = Guard()
        g.arm()
        g.check("run")
        self.assertEqual(g.findings, [])
        real_isclose, real_code = math.isclose, json.dumps.__code__
        real_floor = math.floor
        try:
            math.isclose = lambda *a, **k: True
            json.dumps.__code__ = (lambda *a, **k: "{}").__code__
            del math.floor
            g.check("output_mutant")
        finally:
            math.isclose, json.dumps.__code__, math.floor = real_isclose, real_code, real_floor
        found = {(f["what"], f["how"], f["phase"]) for f in g.findings}
        self.assertIn(("math.isclose", "replaced", "output_mutant"), found)
        self.assertIn(("json.dumps", "code replaced", "output_mutant"), found)
        self.assertIn(("math.floor", "deleted", "output_mutant"), found)
        self.assertTrue(g.report()["tampered"])

    def test_scans_in_the_sample_are_recorded_and_the_verifiers_own_are_not(self):
        import gc
        GUARD.arm()
        before = len(GUARD.scans)
        gc.get_referrers(self)  # the verifier's main thread, no sample call: not recorded
        self.assertEqual(len(GUARD.scans), before)
        r, w = os.pipe()
        GUARD.out_fd = w
        try:
            blind.call("kernel_mutant", lambda: len(gc.get_objects()))
        finally:
            GUARD.out_fd = None
            os.close(w)
        line = os.read(r, 4096)
        os.close(r)
        self.assertEqual(GUARD.scans[-1], {"event": "gc.get_objects", "phase": "kernel_mutant"})
        self.assertEqual(line, b'{"guard": "gc.get_objects"}\n')


class TraceTest(unittest.TestCase):
    """A trace or profile function the sample's code sets on its runner thread sees every later
    run's calls: the guard flags it and resets it before anything else runs (guard.traces)."""

    def test_a_trace_and_a_profile_left_on_the_runner_thread_are_flagged_and_reset(self):
        GUARD.arm()
        seen = []

        def tracer(frame, event, arg):
            seen.append(frame.f_code.co_name)
            return None

        def leave_them():
            sys.settrace(tracer)
            sys.setprofile(lambda *a: None)
            return sys.gettrace() is tracer

        self.assertTrue(blind.call("run", leave_them))
        # The next call of the sample's code, on the same thread, finds neither.
        after = blind.call("skip_launch", lambda: (sys.gettrace(), sys.getprofile()))
        self.assertEqual(after, (None, None))
        del seen[:]

        def later_test():
            return 1
        blind.call("output_mutant", later_test)
        self.assertNotIn("later_test", seen)  # the tracer saw nothing of the later runs
        found = {(f["what"], f["how"], f["phase"]) for f in GUARD.findings}
        how = "left set (on the sample's thread, reset)"
        self.assertIn(("sys.settrace", how, "run"), found)
        self.assertIn(("sys.setprofile", how, "run"), found)
        self.assertTrue(GUARD.report()["tampered"])
        # The setting itself was seen as it happened, the guard's own reset was not.
        events = [s["event"] for s in GUARD.scans]
        self.assertIn("sys.settrace", events)
        self.assertEqual(events.count("sys.settrace"), 1)

    def test_a_phase_gets_back_what_it_left_as_phase_state(self):
        from kforge_harness.phases.sequence import Phases
        report = {}

        def phase():
            blind.call("speed", sys.setprofile, lambda *a: None)
            return {}
        Phases(report, sets_up=False).run("speed", phase)
        self.assertNotIn("phase_state", report)  # reset after the call already
        self.assertIsNone(blind.call("kernel_mutant", sys.getprofile))


class ControlRuleTest(unittest.TestCase):
    def test_a_failed_control_voids_the_kills_and_names_those_it_explains(self):
        c = Controls()
        c.record("rerun", "output mutant 3", {"name": "test_add", "exception": "AssertionError",
                                             "message": "wrong"}, 0.0)
        report = {"battery": {"mutants": [
            {"mutant": "tail", "result": "killed", "by": "test_add: AssertionError: wrong"},
            {"mutant": "interior", "result": "killed", "by": "test_other: ValueError: x"},
            {"mutant": "permute", "result": "not_applicable"}], "killed": 2, "applicable": 2},
            "kernel_battery": {"mutants": [
                {"mutant": "k1", "result": "killed", "by": "test_add: AssertionError"},
                {"mutant": "k2", "result": "equivalent"}], "killed": 1, "applicable": 1}}
        c.void(report)
        self.assertEqual([e["result"] for e in report["battery"]["mutants"]],
                         ["as_control", "void", "not_applicable"])
        self.assertEqual(report["battery"]["killed"], 0)
        self.assertEqual(report["battery"]["applicable"], 0)
        self.assertEqual(report["kernel_battery"]["mutants"][0]["result"], "as_control")
        self.assertTrue(c.out["failed"] and c.out["void"])

    def test_passing_controls_change_nothing(self):
        c = Controls()
        c.record("fresh", "before the skip-launch run", None, 0.0)
        report = {"battery": {"mutants": [{"mutant": "tail", "result": "killed", "by": "t: E"}]}}
        c.void(report)
        self.assertEqual(report["battery"]["mutants"][0]["result"], "killed")
        self.assertFalse(c.out["failed"])

    def test_a_run_out_of_gpu_memory_voids_every_result_as_the_verifiers_failure(self):
        # torch's OutOfMemoryError by name, a CUDA or Triton launcher's words by message: not a
        # failed control (unstable_test) nor a kill, but every result void as infrastructure.
        for failure in ({"name": "test_add", "exception": "OutOfMemoryError",
                         "message": "CUDA out of memory. Tried to allocate 2.00 GiB"},
                        {"name": "<import>", "exception": "RuntimeError",
                         "message": "Triton Error [CUDA]: out of memory"}):
            c = Controls()
            self.assertFalse(c.record("rerun", "kernel mutant 2", failure, 0.0))
            self.assertTrue(c.stopped())
            self.assertFalse(c.out["failed"])
            self.assertTrue(c.out["infrastructure"] and c.out["void"])
            self.assertIn("the rerun control run kernel mutant 2 ran out of GPU memory (%s: %s"
                          % (failure["name"], failure["exception"]), c.out["void_reason"])
            report = {"battery": {"mutants": [
                {"mutant": "tail", "result": "killed", "by": "test_add: AssertionError"}]}}
            c.void(report)
            self.assertEqual(report["battery"]["mutants"][0]["result"], "void")
        # An assertion whose message has the words, and Triton's OutOfResources (the kernel's
        # shared memory, the same in every run), are the test's own.
        for failure in ({"name": "t", "exception": "AssertionError", "status": "failed",
                         "message": "CUDA out of memory"},
                        {"name": "t", "exception": "OutOfResources", "status": "error",
                         "message": "out of resource: shared memory, Required: 98304, "
                                    "Hardware limit: 65536"}):
            c = Controls()
            c.record("rerun", "output mutant 1", failure, 0.0)
            self.assertTrue(c.out["failed"])
            self.assertNotIn("infrastructure", c.out)

    def test_places_are_drawn_over_every_position(self):
        c = Controls()
        self.assertEqual({c.place(3) for _ in range(400)}, {0, 1, 2, 3})


if __name__ == "__main__":
    unittest.main(verbosity=1)
