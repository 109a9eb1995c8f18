"""The per-device lock's watcher in real processes on real lock files, without a GPU
(kforge_harness/gpulock.py): a reader busy between launches steps out for a waiting writer at
its next bytecode, its main thread stopped until the writer is done; between writers its
watcher sleeps on the gate file's inotify bell (or polls without one); where the watcher is off,
held, or the sample took its signal, the writer waits for the whole stay; a process the reader
forks cannot release its parent's lock; a firm hold keeps even a launch's checkpoint off;
timing sections that come together share one stall, and a writer gathers them only while
another process has announced a timing. Run
by tests/verify/timing_test.cpp (VerifyTiming.LockWatcherInRealProcesses) as
`python3 lock_watch_test.py HARNESS_DIR`."""

import json
import os
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness import gpulock  # noqa: E402

SPIN_S = 1.5  # the reader's stay without a launch
COMPILE_S = 2.0  # a long compile: half Python, half one C call
GAP_S = 0.01  # a pause of the reader's main thread at least this long is recorded


def _read_line(fd):
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    return data.decode()


def _read_all(fd):
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


class WatcherTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.paths = {k: os.path.join(self.dir, k) for k in ("gate", "rw", "queue")}
        for p in self.paths.values():
            open(p, "w").close()

    def reader(self, watch=True, own_handler=False, held=False, bell=True, idle_s=0.0,
               on_runner=False):
        """A child that enters as a sample does (gpulock.install), says so, then works on the
        CPU for SPIN_S without a launch (on_runner: on the harness's runner thread, as a
        sample's code runs, blind.call), noting every pause of that work. Returns (pid, read
        end): one line "in", then its report as JSON with the pauses."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                if not bell:  # no inotify: the watcher polls
                    gpulock._bell_of = lambda path: None
                lk = gpulock.install(self.paths, watch=watch)
                time.sleep(idle_s)
                looks_idle = lk.looks
                if own_handler:
                    signal.signal(gpulock.WATCH_SIGNAL, lambda *_: None)
                watch_checks = [0]
                if on_runner:
                    from kforge_harness import blind
                    from kforge_harness.guard import GUARD
                    GUARD.arm()  # the watcher's own sys.monitoring is no sample's scan
                    blind.start()
                    checkpoint = lk.checkpoint

                    def counted(why="launch"):
                        if why == "watch" and threading.get_ident() == gpulock.RUNNER[0]:
                            watch_checks[0] += 1
                        return checkpoint(why)
                    lk.checkpoint = counted  # the checkpoints the watcher's asking ran there
                os.write(w, b"in\n")
                gaps = []
                if held:
                    lk.busy += 1

                def work():
                    t0 = time.monotonic()
                    prev = t0
                    while prev - t0 < SPIN_S:
                        sum(range(100))  # Python work: bytecodes, no launch
                        now = time.monotonic()
                        if now - prev > GAP_S:
                            gaps.append([prev, now])
                        prev = now
                if on_runner:
                    blind.call("test", work)
                else:
                    work()
                if held:
                    lk.busy -= 1
                rep = lk.report()
                rep["gaps"] = gaps
                if on_runner:
                    rep["scans"] = GUARD.report()["scans"]
                    rep["watch_checks"] = watch_checks[0]
                rep["looks_idle"] = looks_idle
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "in\n")
        return pid, r

    def time_as_writer(self, hold_s=0.2):
        """Takes the device as a timing sample does; returns (waited, [x0, x1])."""
        time.sleep(0.1)  # the reader is well into its stay
        lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"], self.paths["queue"])
        waited = lk.acquire_exclusive(10.0)
        self.assertIsNotNone(waited)
        x0 = time.monotonic()
        time.sleep(hold_s)
        x1 = time.monotonic()
        lk.release_exclusive()
        return waited, [x0, x1]

    def finish(self, pid, r):
        rep = json.loads(_read_all(r))
        os.waitpid(pid, 0)
        return rep

    def test_a_busy_reader_steps_out_at_once_and_stops_until_the_writer_is_done(self):
        pid, r = self.reader()
        waited, (x0, x1) = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertEqual(rep["watch"], "on")
        self.assertTrue(rep["watch_bell"])  # woken by the writer's ring, not polling
        # Without the watcher the writer would wait for the whole stay (the next test).
        self.assertLess(waited, 0.5)
        self.assertGreaterEqual(rep["watch_stepped_out"], 1)
        self.assertGreaterEqual(rep["watch_nudges"], rep["watch_stepped_out"])
        # Its main thread did nothing while the writer held the device: the exclusive section
        # lies inside one pause of the reader's work, and outside its shared sections.
        self.assertTrue(any(g0 <= x0 and x1 <= g1 for g0, g1 in rep["gaps"]),
                        "the reader worked during [%f, %f]: %s" % (x0, x1, rep["gaps"]))
        for s0, s1 in rep["shared"]:
            self.assertTrue(s1 <= x0 or s0 >= x1, (s0, s1, x0, x1))
        self.assertGreaterEqual(len(rep["shared"]), 2)  # out for the writer, then back in
        self.assertGreaterEqual(rep["reader_waited_ms"], 150)  # queued behind the section

    def test_a_reader_in_one_long_call_keeps_only_the_writer_waiting(self):
        # A second reader sleeps 0.8 s (one long C call: no bytecode, no step-out) when the
        # writer asks at 0.1 s. The writer's first step waits for it with the gate open: the
        # busy reader says it is at a bytecode and goes on working meanwhile, and is stopped
        # only once the sleeper is back (before: the busy reader was stopped at the gate for
        # the whole sleep, but for 5 ms between windows). The device is still the writer's
        # alone: neither reader is inside during its section.
        r, w = os.pipe()
        slow = os.fork()
        if slow == 0:
            os.close(r)
            try:
                lk = gpulock.install(self.paths, watch=True)
                os.write(w, b"in\n")
                time.sleep(0.8)  # one long C call
                t0 = time.monotonic()
                while time.monotonic() - t0 < 0.5:
                    sum(range(100))
                rep = lk.report()
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "in\n")
        pid, rb = self.reader()
        waited, (x0, x1) = self.time_as_writer()
        busy = self.finish(pid, rb)
        sleeper = json.loads(_read_all(r))
        os.waitpid(slow, 0)
        self.assertGreaterEqual(waited, 0.4)  # the writer waited for the sleeper
        for rep in (busy, sleeper):
            for s0, s1 in rep["shared"]:
                self.assertTrue(s1 <= x0 or s0 >= x1, (s0, s1, x0, x1))
        self.assertTrue(any(g0 <= x0 and x1 <= g1 for g0, g1 in busy["gaps"]), busy["gaps"])
        # The busy reader queued behind the section (0.2 s) and its stall, not the sleep.
        self.assertLess(busy["reader_waited_ms"], 450, busy)
        self.assertGreaterEqual(busy["checked_in"], 1)

    def test_a_sample_in_a_long_compile_keeps_no_writer_waiting(self):
        # A reader inside Triton's compile, through the harness's own hook (Python work and a
        # long C call, COMPILE_S in all), when the writer asks: a compile touches no device,
        # so the hook steps it out and the writer times at once, without a first step or a
        # stall waiting for it (were it in, the writer would wait for the whole compile: the
        # first step for 1 s, the gate for the rest). Its launch after the compile waits for
        # the section.
        from kforge_harness import triton_hooks
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                lk = gpulock.install(self.paths, watch=True)

                def compile_fn():
                    t0 = time.monotonic()
                    while time.monotonic() - t0 < COMPILE_S / 2:
                        sum(range(100))  # the compiler's Python
                    time.sleep(COMPILE_S / 2)  # and its C (LLVM, ptxas)
                    return time.monotonic()

                state = type("State", (), {"compile": triton_hooks.new_compile_stats()})()
                timed = triton_hooks._timed_compile(compile_fn, state)
                os.write(w, b"in\n")
                c0 = time.monotonic()
                c1 = timed()
                gpulock.checkpoint()  # the launch that follows
                launched = time.monotonic()
                rep = lk.report()
                rep.update(compile=[c0, c1], launched=launched,
                           compiles=state.compile["count"])
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "in\n")
        waited, (x0, x1) = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertEqual(rep["compiles"], 1)
        c0, c1 = rep["compile"]
        self.assertLess(c0, x0)
        self.assertLess(waited, COMPILE_S / 2, rep)  # not the compile's length
        for s0, s1 in rep["shared"]:
            self.assertTrue(s1 <= x0 or s0 >= x1, (s0, s1, x0, x1))
        self.assertEqual(rep["checked_in"], 0)  # the first step did not wait for it
        self.assertFalse(x0 < rep["launched"] < x1)
        if c1 > x1:  # the compile outlasted the section (not on a machine slow enough)
            self.assertEqual(rep["launched_paused"], 0)

    def test_a_sample_that_claims_to_compile_and_launches_anyway_waits_for_the_writer(self):
        # A hostile sample marks itself as compiling (the harness's pause, reached from its own
        # code) and launches anyway, between bytecodes and launches only: each launch comes in
        # through the gate as any reader's does, so none of its launches falls in the writer's
        # section and it is never inside then (before: a paused process launched outside the
        # lock, and neither the watcher nor its launches stepped it out).
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                lk = gpulock.install(self.paths, watch=True)
                gpulock.pause()  # "compiling", for good
                os.write(w, b"in\n")
                launches, t0 = [], time.monotonic()
                while time.monotonic() - t0 < SPIN_S:
                    gpulock.checkpoint()  # a launch
                    launches.append(time.monotonic())
                    sum(range(100))
                rep = lk.report()
                rep["launches"] = launches
                rep["paused"] = lk.paused
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "in\n")
        waited, (x0, x1) = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertEqual(rep["paused"], 1)
        self.assertGreaterEqual(rep["launched_paused"], 1)
        inside = [t for t in rep["launches"] if x0 <= t <= x1]
        self.assertEqual(len(inside), 0, "launched during the section [%f, %f]" % (x0, x1))
        self.assertGreater(len(rep["launches"]), 10)
        self.assertTrue(any(t > x1 for t in rep["launches"]))  # it went on after the section
        for s0, s1 in rep["shared"]:
            self.assertTrue(s1 <= x0 or s0 >= x1, (s0, s1, x0, x1))

    def test_where_a_reader_kept_a_first_step_waiting_is_reported(self):
        # With KFORGE_LOCK_WHERE=1 (the benchmark's runs) a reader that stays in one long C
        # call while a writer's first step waits says where: the function that made the call
        # (what label_cost.py sums up); without it, nothing (the report is as before).
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                os.environ["KFORGE_LOCK_WHERE"] = "1"
                from kforge_harness.guard import GUARD
                GUARD.arm()  # the watcher's frame reads are no sample's scan
                lk = gpulock.install(self.paths, watch=True)

                def one_long_c_call():
                    time.sleep(0.8)
                os.write(w, b"in\n")
                one_long_c_call()
                t0 = time.monotonic()
                while time.monotonic() - t0 < 0.3:
                    sum(range(100))
                rep = lk.report()
                rep["scans"] = GUARD.report()["scans"]
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "in\n")
        self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertEqual(rep["scans"], [])
        self.assertEqual(len(rep["unready_at"]), 1, rep)
        site, times = rep["unready_at"][0]
        self.assertTrue(site.startswith("lock_watch_test.py:one_long_c_call:"), site)
        self.assertEqual(times, 1)
        self.assertGreaterEqual(rep["unready_ms"], 100)
        pid, r = self.reader()
        self.time_as_writer()
        self.assertNotIn("unready_at", self.finish(pid, r))

    def test_the_samples_code_on_the_runner_thread_steps_out_too(self):
        # The harness runs a sample's code on its runner thread (blind.py) while the main
        # thread waits in C for the result, so the main thread's handler runs only after it.
        # On Python 3.12 and later the watcher reaches the runner thread (sys.monitoring, only
        # while it asks: gpulock._arm): the sample steps out at once and its work stops until
        # the writer is done. Before 3.12 only its launches and compiles step it out: the
        # writer waits for the whole stay. The device is the writer's alone either way.
        pid, r = self.reader(on_runner=True)
        waited, (x0, x1) = self.time_as_writer()
        rep = self.finish(pid, r)
        for s0, s1 in rep["shared"]:
            self.assertTrue(s1 <= x0 or s0 >= x1, (s0, s1, x0, x1))
        self.assertEqual(rep["scans"], [])  # not taken for the sample's tampering
        if sys.version_info >= (3, 12):
            self.assertEqual(rep["runner_watch"], "on")
            self.assertLess(waited, 0.5)
            self.assertGreaterEqual(rep["runner_stepped_out"], 1)
            self.assertTrue(any(g0 <= x0 and x1 <= g1 for g0, g1 in rep["gaps"]),
                            "the runner worked during [%f, %f]: %s" % (x0, x1, rep["gaps"]))
            # While the events are on, the runner runs the checkpoint at most once every
            # RUNNER_RECHECK_S (and once as they go on), not at every event (issue 54: every
            # line then paid the checkpoint's system calls, hundreds an ask).
            self.assertGreaterEqual(rep["watch_checks"], 1)
            bound = rep["runner_armed_ms"] / (1000 * gpulock.RUNNER_RECHECK_S) + rep["runner_arms"]
            self.assertLessEqual(rep["watch_checks"], bound, rep)
            self.assertEqual(rep["runner_events"], rep["watch_checks"])
        else:
            self.assertTrue(rep["runner_watch"].startswith("off: no sys.monitoring"),
                            rep["runner_watch"])
            self.assertGreaterEqual(waited, SPIN_S - 0.5)
            self.assertEqual(rep["runner_stepped_out"], 0)

    def test_a_timing_sample_that_gives_up_is_a_reader_again(self):
        # A sample's real run with the speed label on, the device held by a reader that never
        # leaves (a hostile one, holding rw shared): its timing gives up after wait_s ("GPU
        # busy") and the process is a reader again for the rest of its work (before: it stayed
        # out of the lock, its later launches not waiting for any writer).
        import fcntl
        holder = os.open(self.paths["rw"], os.O_RDONLY)
        fcntl.flock(holder, fcntl.LOCK_SH)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        base = os.path.join(root, "tests", "verify", "samples", "timing_cpu_faster")

        def read(name):
            with open(os.path.join(base, name)) as f:
                return f.read()
        req = {"code": read("code.py"), "kernel_wrapper": read("wrapper.py"),
               "unitest_code": read("test.py"), "bounds_check": False,
               "timing": {"enabled": True, "budget_s": 0.2, "min_reps": 3, "max_reps": 20,
                          "wait_s": 0.5}}
        work = tempfile.mkdtemp()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                sys.path.insert(0, os.path.join(root, "tests", "verify", "fake_triton"))
                os.chdir(work)
                from kforge_harness import phases
                lk = gpulock.install(self.paths, watch=True)
                rep = {}
                phases.real_run(req, rep, phases.Phases(rep))
                out = {"verdict": rep.get("verdict"), "speed": rep.get("speed"),
                       "shared": lk.shared, "lock": lk.report()}
                os.write(w, (json.dumps(out, default=str) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        out = json.loads(_read_all(r))
        os.waitpid(pid, 0)
        os.close(holder)
        self.assertEqual(out["verdict"], "passed", out)
        self.assertFalse(out["speed"]["timed"], out["speed"])
        self.assertIn("GPU busy", json.dumps(out["speed"]))
        self.assertTrue(out["shared"], out["lock"])  # in again after giving up
        self.assertGreaterEqual(len(out["lock"]["shared"]), 2)

    def test_between_writers_the_watcher_sleeps_on_the_bell(self):
        # Idle for 0.5 s with no writer: the bell wakes it for the other processes' opens of
        # the gate file at most, where polling looks every WATCH_S (50 times).
        pid, r = self.reader(idle_s=0.5)
        self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertTrue(rep["watch_bell"])
        self.assertLessEqual(rep["looks_idle"], 3)
        self.assertGreaterEqual(rep["watch_stepped_out"], 1)

    def test_without_inotify_the_watcher_polls_and_still_steps_out(self):
        pid, r = self.reader(bell=False, idle_s=0.5)
        waited, (x0, x1) = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertFalse(rep["watch_bell"])
        self.assertGreaterEqual(rep["looks_idle"], 10)
        self.assertLess(waited, 0.5)
        self.assertTrue(any(g0 <= x0 and x1 <= g1 for g0, g1 in rep["gaps"]), rep["gaps"])

    def test_without_the_watcher_the_writer_waits_for_the_whole_stay(self):
        pid, r = self.reader(watch=False)
        waited, _ = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertEqual(rep["watch"], "off")
        self.assertGreaterEqual(waited, SPIN_S - 0.5)
        self.assertEqual(rep["watch_stepped_out"], 0)

    def test_the_stall_wait_runs_from_the_ring_to_the_last_reader_out(self):
        # A reader without the watcher stays in for its whole stay (and, started where no timing
        # sample may come, is not one the writer's first step waits for): the writer's stall
        # wait (report.gpu_lock.stall_wait_ms: the windows that held the gate closed with the
        # reader in) begins after it asked and ends when that reader is out; a writer with
        # nobody inside has none.
        pid, r = self.reader(watch=False)
        time.sleep(0.1)
        lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"], self.paths["queue"])
        t_ask = time.monotonic()
        self.assertIsNotNone(lk.acquire_exclusive(10.0))
        lk.release_exclusive()
        rep = self.finish(pid, r)
        mine = lk.report()
        self.assertEqual((mine["stalls"], mine["timed_sections"]), (1, 1))
        x0 = mine["exclusive"][0][0]
        ring = x0 - mine["stall_wait_ms"] / 1000.0
        # Its report, made inside its stay before it left: the stay ended at or after this.
        out = max(s1 for _, s1 in rep["shared"])
        self.assertGreaterEqual(ring + 0.001, t_ask)
        self.assertLessEqual(ring, out)
        self.assertGreaterEqual(x0, out)
        self.assertEqual(mine["stall_wait_max_ms"], mine["stall_wait_ms"])
        self.assertGreaterEqual(mine["writer_retries"], 1)  # the wait spans the windows
        self.assertGreaterEqual(mine["ready_waits"], 1)
        alone = gpulock.GpuLock(self.paths["gate"], self.paths["rw"], self.paths["queue"])
        self.assertIsNotNone(alone.acquire_exclusive(10.0))
        alone.release_exclusive()
        self.assertEqual((alone.report()["stalls"], alone.report()["stall_wait_ms"]), (0, 0))

    def test_a_held_stretch_is_not_cut(self):
        pid, r = self.reader(held=True)
        waited, _ = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertGreaterEqual(waited, SPIN_S - 0.5)
        self.assertEqual(rep["watch_stepped_out"], 0)

    def test_a_firm_hold_keeps_even_a_launch_in(self):
        lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        lk.enter()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a writer at the gate, for 0.3 s
            import fcntl
            fd = os.open(self.paths["gate"], os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(w, b"gate\n")
            time.sleep(0.3)
            os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "gate\n")
        with lk.held(launches=True):  # the side-stream probe: no synchronise, no step-out
            self.assertFalse(lk.checkpoint())
            self.assertTrue(lk.shared)
        with lk.held():  # a warm-up round: the watcher waits, a launch does not
            self.assertTrue(lk.checkpoint())
        self.assertTrue(lk.shared)
        os.waitpid(pid, 0)
        lk.leave()

    def test_a_sample_that_takes_the_signal_stops_the_watcher(self):
        pid, r = self.reader(own_handler=True)
        waited, _ = self.time_as_writer()
        rep = self.finish(pid, r)
        self.assertTrue(rep["watch"].startswith("stopped: the sample set its own handler"),
                        rep["watch"])
        self.assertGreaterEqual(waited, SPIN_S - 0.5)  # back to launches and compiles only

    def test_a_forked_process_cannot_release_its_parents_lock(self):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                gpulock.install(self.paths, watch=False)
                kid = os.fork()
                if kid == 0:
                    # The lock files' open descriptions are shared: a pause here would unlock
                    # the parent's rw.
                    ok = gpulock.CURRENT is None
                    gpulock.pause()
                    gpulock.checkpoint()
                    os._exit(0 if ok else 1)
                _, status = os.waitpid(kid, 0)
                os.write(w, b"%d\n" % os.waitstatus_to_exitcode(status))
                time.sleep(1.0)  # still in
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(_read_line(r), "0\n")
        lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        self.assertIsNone(lk.acquire_exclusive(0.3))  # the parent is still in
        _read_all(r)
        os.waitpid(pid, 0)


@unittest.skipUnless(hasattr(sys, "monitoring"), "sys.monitoring: Python 3.12 and later")
class RunnerEventsTest(unittest.TestCase):
    """What the watcher's sys.monitoring events cost the sample's thread while on (issue 54):
    in a child that is a reader, its own thread taken for the runner, the events turned on as
    the watcher does (gpulock._arm) around a stretch of Python work."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.paths = {k: os.path.join(self.dir, k) for k in ("gate", "rw", "queue")}
        for p in self.paths.values():
            open(p, "w").close()

    def armed_child(self, out_of_lock):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                lk = gpulock.install(self.paths, watch=False)
                lk.marks = True
                gpulock.set_runner(threading.get_ident())
                if out_of_lock:
                    lk.pause()  # in a compile: out of the lock
                armed = gpulock._arm(lk)
                tool = gpulock._armed[0]
                t0 = time.monotonic()
                loops = 0
                while time.monotonic() - t0 < 0.3:
                    for i in range(20):  # jumps back: events
                        loops += i
                elapsed = time.monotonic() - t0
                on = sys.monitoring.get_events(tool) if tool is not None else None
                gpulock._disarm(lk)
                rep = {"armed": armed, "elapsed": elapsed, "events_on": on,
                       "events": lk.runner_events, "shared": lk.shared}
                os.write(w, (json.dumps(rep) + "\n").encode())
            finally:
                os._exit(0)
        os.close(w)
        rep = json.loads(_read_all(r))
        os.waitpid(pid, 0)
        return rep

    def test_the_checkpoint_runs_at_most_once_a_recheck_interval_while_armed(self):
        # Every event ran the checkpoint (three system calls) before: a Python loop on the
        # runner went 1,500 times slower while armed. Now at most once every RUNNER_RECHECK_S.
        rep = self.armed_child(out_of_lock=False)
        self.assertTrue(rep["armed"], rep)
        self.assertTrue(rep["shared"], rep)
        self.assertGreaterEqual(rep["events"], 1, rep)
        self.assertLessEqual(rep["events"], rep["elapsed"] / gpulock.RUNNER_RECHECK_S + 2, rep)
        self.assertNotEqual(rep["events_on"], 0, rep)  # still on: the watcher turns them off

    def test_out_of_the_lock_the_first_event_turns_the_events_off(self):
        # In a compile (paused: out of the lock) there is nothing to step out of; the events
        # stayed on until the watcher looked again, each call and jump of the compile paying.
        rep = self.armed_child(out_of_lock=True)
        self.assertTrue(rep["armed"], rep)
        self.assertFalse(rep["shared"], rep)
        self.assertEqual(rep["events_on"], 0, rep)
        self.assertEqual(rep["events"], 0, rep)


class BurstTest(unittest.TestCase):
    """Timing sections that come together run as one burst: one stall of the readers for all."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.paths = {k: os.path.join(self.dir, k) for k in ("gate", "rw", "queue")}
        for p in self.paths.values():
            open(p, "w").close()

    def writer(self, start_s, hold_s=0.3, wait_s=10.0, gather_s=0.0, linger_s=0.0,
               announce=True, gives_up=False, late=False):
        """A child that, after start_s, takes the device as a timing sample does (a reader first,
        as every sample is; announced as about to time from the start, as a timing sample is
        while it prepares), holds it hold_s and lets it go. gives_up: after start_s it withdraws
        instead (a timing that failed while preparing). Returns (pid, read end): its report as
        JSON, with "waited" (None: not within wait_s). late: it starts (enters) only at start_s,
        instead of waiting start_s inside (a sample in one long C call)."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                if late:
                    time.sleep(start_s)
                    start_s = 0.0
                lk = gpulock.install(self.paths, watch=True)
                if announce:
                    lk.announce()
                time.sleep(start_s)
                if gives_up:
                    lk.withdraw()
                    lk.leave()  # its sample goes on (it steps out whenever a writer waits)
                    time.sleep(linger_s)
                    rep = lk.report()
                    rep["waited"] = None
                    os.write(w, (json.dumps(rep) + "\n").encode())
                    os._exit(0)
                waited = lk.acquire_exclusive(wait_s, gather_s)
                if waited is not None:
                    time.sleep(hold_s)
                    lk.release_exclusive()
                rep = lk.report()
                rep["waited"] = waited
                lk.enter()
                lk.leave()
                os.write(w, (json.dumps(rep) + "\n").encode())
                time.sleep(linger_s)  # alive: what it held must not be held by it any more
            finally:
                os._exit(0)
        os.close(w)
        return pid, r

    def test_sections_that_come_together_share_one_stall(self):
        reader = WatcherTest.reader(self)  # busy on the CPU for SPIN_S, its watcher on
        # The others announce their timings at once (they prepare until 0.45 s and more); the
        # first asks at 0.4 s and gathers (the reader goes on) until they have all asked and
        # queued, at most 0.8 s.
        writers = [self.writer(0.4, gather_s=0.8)] + [self.writer(0.45 + 0.02 * i)
                                                       for i in range(3)]
        reps = [json.loads(_read_all(r)) for _, r in writers]
        for pid, _ in writers:
            os.waitpid(pid, 0)
        rd = WatcherTest.finish(self, *reader)
        sections = sorted(x for rep in reps for x in rep["exclusive"])
        self.assertEqual(len(sections), 4)
        for a, b in zip(sections, sections[1:]):
            self.assertLessEqual(a[1], b[0], "two exclusive sections overlap")
        self.assertEqual(sections[0][2], "stall")  # the busy reader was in
        # Every writer that was queued when the first began timing (out as a reader before:
        # all of them, unless the machine is too loaded to start them in time) timed in its
        # burst, without a stall of its own.
        first = sections[0][0]
        def left(rep):  # when it stepped out as a reader to time
            return max(s1 for s0, s1 in rep["shared"] if s1 <= rep["exclusive"][0][0])
        queued = [rep for rep in reps if rep["exclusive"][0][0] > first and left(rep) < first]
        self.assertGreaterEqual(len(queued), 2, "the writers came too late: the test shows "
                                                "nothing: %s" % [(rep["shared"], rep["exclusive"])
                                                                 for rep in reps])
        for rep in queued:
            self.assertEqual(rep["exclusive"][0][2], "burst", sections)
            self.assertEqual(rep["stalls"], 0)
        self.assertEqual(sum(rep["stalls"] for rep in reps), 1 + 3 - len(queued))
        self.assertEqual(sum(rep["timed_sections"] for rep in reps), 4)
        # From the burst's first section to its last no reader was in: neither the busy reader
        # nor the writers' own processes (readers again after their sections).
        b0, b1 = first, max(rep["exclusive"][0][1] for rep in queued)
        for rep in reps + [rd]:
            for s0, s1 in rep["shared"]:
                self.assertTrue(s1 <= b0 or s0 >= b1, (s0, s1, b0, b1))
        self.assertTrue(any(g0 <= b0 and b1 <= g1 for g0, g1 in rd["gaps"]),
                        "the reader worked during the burst [%f, %f]: %s" % (b0, b1, rd["gaps"]))

    def test_sections_apart_each_stall_and_the_readers_go_on_between(self):
        # The second starts at 0.7 s (inside before, sleeping, it would be a reader in one long
        # C call: the first would wait for it, the gate open, and they would share one stall).
        reader = WatcherTest.reader(self)
        writers = [self.writer(0.1, hold_s=0.1), self.writer(0.7, hold_s=0.1, late=True)]
        reps = [json.loads(_read_all(r)) for _, r in writers]
        for pid, _ in writers:
            os.waitpid(pid, 0)
        rd = WatcherTest.finish(self, *reader)
        sections = sorted(x for rep in reps for x in rep["exclusive"])
        self.assertEqual([x[2] for x in sections], ["stall", "stall"], sections)
        # The reader worked between the two.
        self.assertTrue(any(sections[0][1] <= s0 and s1 <= sections[1][0]
                            for s0, s1 in rd["shared"]), rd["shared"])

    def test_a_writer_that_gives_up_in_a_burst_lets_the_gate_go(self):
        # The first gathers (the late one has announced its timing) until the late one leaves
        # as a reader (0.8 s), then times for 1.5 s; the late one queues, joins the burst,
        # gives up at 1.4 s while the first times.
        late = self.writer(0.8, wait_s=0.6, linger_s=3.0)
        first = self.writer(0.1, hold_s=1.5, gather_s=2.0)
        rep_late = json.loads(_read_all(late[1]))
        self.assertIsNone(rep_late["waited"])
        rep_first = json.loads(_read_all(first[1]))
        os.waitpid(first[0], 0)
        # The first is done, the late one still alive: the gate is free (a reader gets in).
        import fcntl
        fd = os.open(self.paths["gate"], os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the late one held it
        os.close(fd)
        os.kill(late[0], signal.SIGKILL)
        os.waitpid(late[0], 0)
        self.assertEqual(rep_first["stalls"], 0)  # no reader was in: it began "idle"
        self.assertEqual(rep_first["exclusive"][0][2], "idle")
        # In as soon as the late one left as a reader, before the gathering (2 s) ends.
        self.assertLess(rep_first["waited"], 1.6)

    def test_a_writer_with_no_other_coming_does_not_gather(self):
        # gather_s 2 s, a busy reader, and no other process preparing a timing: it stalls at
        # once rather than wait idle for writers that are not coming.
        reader = WatcherTest.reader(self)
        w = self.writer(0.1, hold_s=0.1, gather_s=2.0)
        rep = json.loads(_read_all(w[1]))
        os.waitpid(w[0], 0)
        WatcherTest.finish(self, *reader)
        self.assertEqual(rep["exclusive"][0][2], "stall")
        self.assertLess(rep["waited"], 0.5)
        self.assertEqual((rep["gathers"], rep["gathers_alone"]), (1, 1))

    def test_a_writer_gathers_only_until_the_one_coming_gives_up(self):
        # Another process announced a timing (it prepares), then gives up at 0.75 s without
        # asking: the first gathers (the busy reader going on) until then, not for 3 s. The
        # first asks at 0.25 s, so the other has announced by then on a loaded host too (at
        # 0.1 s it had not, once in three full runs under load 9).
        reader = WatcherTest.reader(self)
        other = self.writer(0.75, gives_up=True, linger_s=1.0)
        w = self.writer(0.25, hold_s=0.1, gather_s=3.0)
        rep = json.loads(_read_all(w[1]))
        os.waitpid(w[0], 0)
        json.loads(_read_all(other[1]))
        os.waitpid(other[0], 0)
        WatcherTest.finish(self, *reader)
        self.assertEqual(rep["exclusive"][0][2], "stall")
        self.assertGreaterEqual(rep["waited"], 0.4)
        self.assertLess(rep["waited"], 1.5)
        self.assertEqual((rep["gathers"], rep["gathers_alone"]), (1, 0))
        self.assertGreaterEqual(rep["gathered_ms"], 300)  # about 500: until the other gave up

    def test_without_gathering_a_lone_writer_still_stalls_once(self):
        reader = WatcherTest.reader(self)
        w = self.writer(0.1, hold_s=0.1)
        rep = json.loads(_read_all(w[1]))
        os.waitpid(w[0], 0)
        rd = WatcherTest.finish(self, *reader)
        self.assertEqual(rep["stalls"], 1)
        self.assertEqual(rep["exclusive"][0][2], "stall")
        self.assertLess(rep["waited"], 0.5)
        self.assertGreaterEqual(rd["watch_stepped_out"], 1)

if __name__ == "__main__":
    unittest.main()
