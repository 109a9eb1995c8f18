"""The harness's side of the report contract (kforge_harness/report_schema.py and pipes.py): the
declared fields (report_fields.txt) and vocabularies load, a real run's report passes the check,
and a report that breaks it (a field renamed, missing, of the wrong type, unknown, the pool's, of
another version, a number JSON cannot carry) goes out as an error report of phase "harness" that
names the field. Run by tests/verify/harness_report_test.cpp
(VerifyHarnessReport.PythonReportCheck) as
`python3 report_schema_test.py HARNESS_DIR FAKE_TRITON_DIR SAMPLES_DIR`."""

import json
import os
import sys
import tempfile
import unittest

def _arg(env):
    return os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.environ[env])


HARNESS_DIR = _arg("KFORGE_HARNESS_DIR")
FAKE_TRITON = _arg("KFORGE_FAKE_TRITON")
sys.path.insert(0, HARNESS_DIR)
sys.path.insert(0, FAKE_TRITON)
SAMPLES = _arg("KFORGE_SAMPLES")

from kforge_harness import HARNESS_VERSION, pipes, report_schema  # noqa: E402
from kforge_harness.runner import run_sample  # noqa: E402


def minimal(**fields):
    report = {"harness": report_schema.VERSION, "pid": 1, "verdict": "passed",
              "detail": "1 test passed", "phase": "done"}
    report.update(fields)
    return report


def sample_request(name):
    def read(part):
        with open(os.path.join(SAMPLES, name, part + ".py")) as f:
            return f.read()
    return {"code": read("code"), "kernel_wrapper": read("wrapper"),
            "unitest_code": read("test"), "report_version": report_schema.VERSION}


class Declared(unittest.TestCase):
    def test_the_version_is_the_harness_version(self):
        self.assertEqual(HARNESS_VERSION, report_schema.VERSION)
        self.assertGreaterEqual(report_schema.VERSION, 2)

    def test_every_vocabulary_loads(self):
        self.assertIn("passed", report_schema.vocabulary("verdicts"))
        self.assertIn("weak_test", report_schema.vocabulary("flags"))
        self.assertEqual(report_schema.vocabulary("target_results"),
                         ["ok", "error", "unavailable", "not_run"])
        self.assertEqual(report_schema.vocabulary("stage_kinds"), ["analysis", "code", "repair"])
        self.assertEqual(report_schema.VERDICT.passed, "passed")
        self.assertEqual(report_schema.TARGET_RESULT.not_run, "not_run")
        with self.assertRaisesRegex(AttributeError, "'pased' is not in vocabulary/verdicts.txt"):
            report_schema.VERDICT.pased  # noqa: B018

    def test_each_declared_object_field_has_a_declared_parent(self):
        for path in report_schema.FIELDS:
            parent = path.rsplit(".", 1)[0] if "." in path else None
            if parent is None:
                continue
            parent = parent.rstrip("[]{}")
            self.assertIn(parent, report_schema.FIELDS, path)


class Check(unittest.TestCase):
    def test_a_minimal_report_passes(self):
        self.assertIsNone(report_schema.violation(minimal()))

    def test_real_runs_reports_pass(self):
        for name, verdict in (("pass", "passed"), ("triton_vector_add", "passed"),
                              ("assert_fail", "failed"), ("syntax_error", "invalid")):
            old = os.getcwd()
            with tempfile.TemporaryDirectory() as d:
                os.chdir(d)
                try:
                    report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
                    run_sample(sample_request(name), report)
                finally:
                    os.chdir(old)
                    sys.path[:] = [p for p in sys.path if p != d]
            self.assertEqual(report["verdict"], verdict, "%s: %s" % (name, report.get("detail")))
            self.assertIsNone(report_schema.violation(json.loads(json.dumps(report))), name)

    def test_a_renamed_field_is_named(self):
        report = minimal()
        report["details"] = report.pop("detail")
        self.assertEqual(report_schema.violation(report), "detail: is missing")
        report["detail"] = "x"
        self.assertEqual(report_schema.violation(report),
                         "details: is not a field of the report (report_fields.txt)")

    def test_a_nested_field_of_the_wrong_type_is_named(self):
        bad = minimal(tests=[{"name": "test_a", "status": "passed", "duration_ms": "3"}])
        self.assertEqual(report_schema.violation(bad),
                         "tests[0].duration_ms: is string, declared int")
        bad = minimal(triton={"available": True})
        self.assertEqual(report_schema.violation(bad), "triton.version: is missing")
        bad = minimal(speed={"timed": True, "kernels": [{"time_us": 1.0, "gbps": None}],
                             "reference": None, "flags": ["library_work", 3]})
        self.assertEqual(report_schema.violation(bad), "speed.flags[1]: is int, declared name")
        # The speed label's flags are vocabulary/speed_flags.txt's names.
        bad["speed"]["flags"] = ["library_work", "not_a_flag"]
        self.assertIn("speed.flags[1]", report_schema.violation(bad))

    def test_names_come_from_the_vocabularies(self):
        self.assertEqual(report_schema.violation(minimal(verdict="pass")),
                         "verdict: is string, declared name<verdicts>")
        bad = minimal(cross_compile={"targets": {"hip:gfx942": {"result": "fine"}}})
        self.assertEqual(report_schema.violation(bad),
                         "cross_compile.targets{hip:gfx942}.result: is string, "
                         "declared name<target_results>")

    def test_the_pools_fields_and_another_version_are_refused(self):
        self.assertEqual(report_schema.violation(minimal(pool={})),
                         "pool: is the pool's to write")
        self.assertEqual(report_schema.violation(minimal(harness=1)),
                         "harness: is 1, the declared version is %d" % report_schema.VERSION)

    def test_a_bad_report_goes_out_as_an_error_naming_the_field(self):
        out = json.loads(pipes.checked_report(minimal(bogus=1)))
        self.assertEqual(out["verdict"], "error")
        self.assertEqual(out["phase"], "harness")
        self.assertEqual(out["detail"], "harness error: report field bogus: is not a field of "
                         "the report (report_fields.txt)")
        self.assertIsNone(report_schema.violation(out))
        nan = json.loads(pipes.checked_report(minimal(import_ms=float("nan"))))
        self.assertEqual(nan["phase"], "harness")
        self.assertIn("a number JSON cannot carry", nan["detail"])
        good = minimal()
        self.assertEqual(json.loads(pipes.checked_report(good)), good)

    def test_the_request_names_the_version(self):
        self.assertIsNone(report_schema.request_version_error(
            {"report_version": report_schema.VERSION}))
        self.assertIn("expects report version 1",
                      report_schema.request_version_error({"report_version": 1}))
        self.assertIn("expects report version None", report_schema.request_version_error({}))


class WorkerEvents(unittest.TestCase):
    """The worker's events (worker_events.txt): each is checked before it is sent, and one that is
    not declared, or whose fields are not its event's, is refused naming it."""

    READY = {"event": "ready", "pid": 7, "modules": {"torch": None, "triton": "3.6.0"},
             "probe": {"ok": True, "note": "not asked"}, "python": "3.12.3",
             "harness": HARNESS_VERSION,
             "triton_key": {"where": "triton.runtime.cache", "ms": 3, "cpu_ms": 2}}
    STARTED = {"event": "started", "id": 3, "pid": 99}
    FINISHED = {"event": "finished", "id": 3, "status": 0, "maxrss_kb": 1024, "cpu_ms": 40,
                "elapsed_ms": 55}

    def test_the_workers_events_pass(self):
        for event in (self.READY, self.STARTED, self.FINISHED):
            self.assertIsNone(report_schema.event_violation(event), event)

    def test_an_undeclared_event_or_field_is_named(self):
        self.assertEqual(report_schema.event_violation({"event": "paused", "id": 3}),
                         "event: 'paused' is not an event of worker_events.txt "
                         "(ready, started, finished)")
        renamed = dict(self.FINISHED, cpu=40)
        del renamed["cpu_ms"]
        self.assertEqual(report_schema.event_violation(renamed), "finished.cpu_ms: is missing")
        extra = dict(self.STARTED, note="x")
        self.assertEqual(report_schema.event_violation(extra),
                         "started.note: is not a field of the event (worker_events.txt)")
        self.assertEqual(report_schema.event_violation(dict(self.STARTED, pid="99")),
                         "started.pid: is string, declared int")

    def test_send_event_sends_a_declared_event_and_refuses_another(self):
        import socket
        from kforge_harness.worker import send_event
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with a, b:
            send_event(a, self.STARTED)
            self.assertEqual(json.loads(b.recv(1 << 16).decode()), self.STARTED)
            with self.assertRaisesRegex(ValueError, "worker event: event: 'paused' is not an "
                                        "event of worker_events.txt"):
                send_event(a, {"event": "paused", "id": 3})
            b.setblocking(False)
            with self.assertRaises(BlockingIOError):  # nothing was sent
                b.recv(1 << 16)


class WorkerOps(unittest.TestCase):
    """The pool's messages to the worker (worker_ops.txt): the worker checks each it receives,
    and refuses one that is not declared, or whose fields or descriptors are not its op's,
    naming it."""

    RUN = {"op": "run", "id": 3, "request": "/w/3/request.json"}
    PREPARE = {"op": "prepare", "id": 4, "prep": "/w/4/prep.json"}

    def test_the_pools_messages_pass(self):
        self.assertIsNone(report_schema.op_violation(self.RUN, 3))
        self.assertIsNone(report_schema.op_violation(self.PREPARE, 4))
        self.assertIsNone(report_schema.op_violation({"op": "exit"}, 0))
        self.assertEqual(report_schema.OPS.fds, {"run": 3, "prepare": 4, "exit": 0})

    def test_an_undeclared_op_field_or_descriptor_count_is_named(self):
        self.assertEqual(report_schema.op_violation(dict(self.RUN, op="start"), 3),
                         "op: 'start' is not an op of worker_ops.txt (run, prepare, exit)")
        renamed = dict(self.RUN, req="/w/3/request.json")
        del renamed["request"]
        self.assertEqual(report_schema.op_violation(renamed, 3), "run.request: is missing")
        self.assertEqual(report_schema.op_violation(dict(self.PREPARE, note="x"), 4),
                         "prepare.note: is not a field of the message (worker_ops.txt)")
        self.assertEqual(report_schema.op_violation(dict(self.RUN, id="3"), 3),
                         "run.id: is string, declared int")
        self.assertEqual(report_schema.op_violation(self.RUN, 4),
                         "run: came with 4 file descriptors, declared 3 (worker_ops.txt)")
        self.assertEqual(report_schema.op_violation("not json", 0),
                         "the message is not a JSON object: not json")

    def test_a_prestarted_childs_prep_and_request_are_declared(self):
        """What the pool writes for a prestarted child itself (worker_ops.txt's `file prep`, the
        file prepare.prep names, and `file request`, what comes down its request pipe): checked
        by the child as by the pool's writer, naming the field; neither is an op."""
        self.assertEqual(report_schema.OPS.files, ["prep", "request"])
        prep = {"sandbox": {"dir": "/w/4"}, "python_path": ["/p"], "gpu": False,
                "cuda_sync": "auto", "gpu_vendor": "cpu"}
        self.assertIsNone(report_schema.file_violation("prep", prep))
        self.assertEqual(report_schema.file_violation("prep", dict(prep, cuda_sync=4)),
                         "prep.cuda_sync: is int, declared string")
        renamed = dict(prep, warm_gpu=False)
        del renamed["gpu"]
        self.assertEqual(report_schema.file_violation("prep", renamed), "prep.gpu: is missing")
        self.assertEqual(report_schema.file_violation("prep", dict(prep, note=1)),
                         "prep.note: is not a field of the message (worker_ops.txt)")
        self.assertEqual(report_schema.file_violation("prep", dict(prep, python_path="/p")),
                         "prep.python_path: is string, declared list<string>")
        request = {"report_version": report_schema.VERSION, "key": "k", "code": "x"}
        self.assertIsNone(report_schema.file_violation("request", request))  # the runner's fields
        self.assertEqual(report_schema.file_violation("request", {"key": "k"}),
                         "request.report_version: is missing")
        self.assertEqual(report_schema.file_violation("request", ["k"]),
                         "request: is list, declared object+")
        self.assertEqual(report_schema.op_violation(dict(prep, op="prep"), 0),
                         "op: 'prep' is not an op of worker_ops.txt (run, prepare, exit)")

    def test_a_prestarted_child_refuses_an_undeclared_prep_naming_it(self):
        """The real worker's prestarted child, given a prep.json whose field the pool's side
        renamed: it ends the sample with an error verdict naming the field, before its sandbox,
        and reads nothing from its request pipe."""
        import socket
        import subprocess
        harness = os.path.join(os.path.dirname(os.path.dirname(report_schema.__file__)),
                               "kforge-harness.py")
        with tempfile.TemporaryDirectory() as tmp:
            prep_path = os.path.join(tmp, "prep.json")
            with open(prep_path, "w") as f:
                json.dump({"sandbox": {"dir": tmp}, "python_path": [], "warm_gpu": False}, f)
            pool, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with pool:
                proc = subprocess.Popen(
                    [sys.executable, "-s", harness, "worker", "--control-fd",
                     str(worker.fileno())], pass_fds=[worker.fileno()])
                worker.close()
                self.assertEqual(json.loads(pool.recv(1 << 16).decode())["event"], "ready")
                out_r, out_w = os.pipe()
                res_r, res_w = os.pipe()
                go_r, go_w = os.pipe()
                socket.send_fds(pool, [json.dumps(dict(self.PREPARE, prep=prep_path)).encode()],
                                [out_w, out_w, res_w, go_r])
                for fd in (out_w, res_w, go_r, go_w):  # go_w: no request will come
                    os.close(fd)
                with os.fdopen(res_r, "rb") as res:
                    lines = res.read().decode().strip().splitlines()
                os.close(out_r)
                socket.send_fds(pool, [json.dumps({"op": "exit"}).encode()], [])
                proc.wait(timeout=30)
        self.assertTrue(lines, "the child wrote no report")
        report = json.loads(lines[-1])
        self.assertEqual(report["verdict"], "error")
        self.assertEqual(report["phase"], "request")
        self.assertIn("%s: prep.gpu: is missing (worker_ops.txt)" % prep_path, report["detail"])

    def test_the_worker_refuses_an_undeclared_op_naming_it(self):
        """The real worker, sent an op the file does not declare (the pool's name for it
        renamed): it closes what came with it, says why in its log and ends, forking
        nothing."""
        import socket
        import subprocess
        harness = os.path.join(os.path.dirname(os.path.dirname(report_schema.__file__)),
                               "kforge-harness.py")
        pool, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with pool:
            proc = subprocess.Popen(
                [sys.executable, "-s", harness, "worker", "--control-fd", str(worker.fileno())],
                pass_fds=[worker.fileno()], stderr=subprocess.PIPE)
            worker.close()
            ready = json.loads(pool.recv(1 << 16).decode())
            self.assertEqual(ready["event"], "ready")
            r, w = os.pipe()
            with os.fdopen(r, "rb") as out:
                socket.send_fds(pool, [json.dumps(dict(self.RUN, op="start")).encode()],
                                [w, w, w])
                os.close(w)
                _, err = proc.communicate(timeout=30)
                self.assertEqual(out.read(), b"")  # every copy of its write end closed
        self.assertEqual(proc.returncode, 5)
        self.assertIn("worker: refused the pool's message: op: 'start' is not an op of "
                      "worker_ops.txt (run, prepare, exit)", err.decode())


class MutantsVoid(unittest.TestCase):
    """One voiding path for a kernel that faulted in its bounds replay: the bounds phase says
    so in the real run's report (mutants_void), the pool passes it on in the mutant runs'
    request, and their controls void every result (controls.void, void_reason), as after a
    failed control; C++ reads that (verdict_test.cpp,
    AKernelThatFaultedInItsBoundsReplayVoidsEveryMutantResult)."""

    def test_a_fault_in_the_bounds_replay_voids_the_mutant_runs(self):
        import types
        sys.path.insert(0, os.path.join(os.path.dirname(SAMPLES), "bounds"))
        try:
            import kernels
        finally:
            sys.path.pop(0)
        from kforge_harness.kernel_replay import Recorder
        from kforge_harness.phases import bounds_replay
        from kforge_harness.phases.sequence import PHASE_FIGURES

        def records(kernel):
            n, block = 20, 16
            args = [[float(i) for i in range(n)], [0.0] * n, n]
            kwargs = {"BLOCK": block, "grid": ((n + block - 1) // block,), "warmup": False}
            rec = Recorder()
            r = rec.before(kernel.__name__, kernel, args, kwargs)
            try:
                type(kernel).run(kernel, *args, **kwargs)
            except IndexError:
                pass  # the stand-in's lists have no memory past their end
            rec.after(r)
            return rec.records

        def replay(kernel):
            state = types.SimpleNamespace(
                replays=types.SimpleNamespace(records=records(kernel)),
                launch_raw=lambda jit, args, kwargs: type(jit).run(jit, *args, **kwargs))
            part = bounds_replay.run({"bounds_check": True, "bounds_check_time_s": 5},
                                     {"state": state})
            # Where its time went goes to the phase's times (Phases.run takes it out).
            self.assertIn("fills", part.pop(PHASE_FIGURES))
            return part

        faulted = replay(kernels.very_far_write)
        self.assertEqual(faulted["bounds"]["fault"]["kernel"], "very_far_write")
        self.assertEqual(faulted["mutants_void"], bounds_replay.FAULT_VOIDS)
        self.assertIn("illegal memory access in its bounds replay", faulted["mutants_void"])
        self.assertIsNone(report_schema.violation(minimal(**faulted)))
        outside = replay(kernels.far_write)  # out of bounds, within the margins: no fault
        self.assertTrue(outside["bounds"]["out_of_bounds"])
        self.assertIsNone(outside["bounds"]["fault"])
        self.assertNotIn("mutants_void", outside)

    DRIVER = """
import json, os, sys, tempfile
sys.path[:0] = sys.argv[1:3]
from kforge_harness import HARNESS_VERSION, phases
from kforge_harness.phases.sequence import Phases
req = json.load(sys.stdin)
report = {"harness": HARNESS_VERSION, "pid": os.getpid()}
with tempfile.TemporaryDirectory() as d:
    sys.path.insert(0, d)
    os.chdir(d)
    phases.mutant_process(req, report, Phases(report), req["mutants"], (0, 1.0))
sys.stdout.write("\\n" + json.dumps(report, default=str))
"""

    def mutant_report(self, **request):
        """The report of a mutant process of its own on the sample, run in a fresh Python (as
        the worker starts one: the harness's hooks are set once per process)."""
        import subprocess
        req = dict(sample_request("mutant_weak_loose"), mutant=True,
                   mutants=["tail", "scale", "zero"], **request)
        out = subprocess.run([sys.executable, "-c", self.DRIVER, HARNESS_DIR, FAKE_TRITON],
                             input=json.dumps(req), capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout.rsplit("\n", 1)[-1])
        self.assertIsNone(report_schema.violation(report))
        self.assertIn("battery", report, report)
        return report

    def test_the_mutant_runs_of_a_void_request_are_all_void(self):
        why = "the kernel died of an illegal memory access in its bounds replay"
        report = self.mutant_report(mutants_void=why)
        self.assertTrue(report["controls"]["void"])
        self.assertEqual(report["controls"]["void_reason"], why)
        self.assertFalse(report["controls"]["failed"])  # no control failed: void all the same
        results = [m["result"] for m in report["battery"]["mutants"]]
        self.assertTrue(results)
        self.assertTrue(all(r in ("void", "as_control") for r in results), results)
        self.assertEqual((report["battery"]["killed"], report["battery"]["applicable"]), (0, 0))
        # Without it the same runs count: a kill and a survivor.
        plain = self.mutant_report()
        self.assertNotIn("void", plain["controls"])
        self.assertEqual([m["result"] for m in plain["battery"]["mutants"]],
                         ["killed", "survived"])


if __name__ == "__main__":
    unittest.main()
