"""The speed label's statistics, stop rule, flags and the per-device lock, without a GPU:
kforge_harness/timing_stats.py and gpulock.py. Run by tests/verify/timing_test.cpp
(VerifyTiming.PythonStatistics) as `python3 stats_test.py HARNESS_DIR`."""

import os
import random
import sys
import tempfile
import time
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["KFORGE_HARNESS_DIR"])

from kforge_harness import gpulock  # noqa: E402
from kforge_harness import timing_stats as st  # noqa: E402


class MedianTest(unittest.TestCase):
    def test_odd_even_and_empty(self):
        self.assertEqual(st.median([3, 1, 2]), 2.0)
        self.assertEqual(st.median([4, 1, 3, 2]), 2.5)
        with self.assertRaises(ValueError):
            st.median([])


class BootstrapTest(unittest.TestCase):
    def test_interval_holds_the_median_and_is_seeded(self):
        rng = random.Random(1)
        xs = [10 + rng.gauss(0, 1) for _ in range(50)]
        lo, hi = st.bootstrap_median_ci(xs, seed=7)
        self.assertLess(lo, st.median(xs))
        self.assertGreater(hi, st.median(xs))
        self.assertEqual((lo, hi), st.bootstrap_median_ci(xs, seed=7))

    def test_constant_times_give_a_point(self):
        self.assertEqual(st.bootstrap_median_ci([5.0] * 20), (5.0, 5.0))

    def test_ratio_interval_covers_a_known_speedup(self):
        rng = random.Random(2)
        ref = [2.0 * (1 + rng.gauss(0, 0.02)) for _ in range(40)]
        cand = [1.0 * (1 + rng.gauss(0, 0.02)) for _ in range(40)]
        sp = st.speedup(ref, cand)
        lo, hi = st.bootstrap_ratio_ci(ref, cand, seed=3)
        self.assertAlmostEqual(sp, 2.0, delta=0.05)
        self.assertLess(lo, 2.0)
        self.assertGreater(hi, 2.0)
        self.assertLess(hi - lo, 0.1)

    def test_pairs_move_together(self):
        # A clock that drifts by 3x over the reps moves both: paired resampling keeps the ratio.
        ref = [2.0 * (1 + i / 20) for i in range(40)]
        cand = [1.0 * (1 + i / 20) for i in range(40)]
        lo, hi = st.bootstrap_ratio_ci(ref, cand, seed=1)
        self.assertAlmostEqual(lo, 2.0, places=9)
        self.assertAlmostEqual(hi, 2.0, places=9)


class OrderIntervalTest(unittest.TestCase):
    def test_order_statistics_of_the_median(self):
        # 10 values: the 2nd and 9th (coverage 97.9%); 100: the 41st and 60th.
        self.assertEqual(st.median_ci_order(list(range(10, 0, -1))), (2.0, 9.0))
        self.assertEqual(st.median_ci_order(list(range(1, 101))), (41.0, 60.0))
        self.assertEqual(st.median_ci_order([5.0]), (5.0, 5.0))
        with self.assertRaises(ValueError):
            st.median_ci_order([])

    def test_covers_like_the_bootstrap(self):
        rng = random.Random(4)
        xs = [10 + rng.gauss(0, 1) for _ in range(60)]
        lo, hi = st.median_ci_order(xs)
        blo, bhi = st.bootstrap_median_ci(xs, seed=1)
        self.assertLess(lo, st.median(xs))
        self.assertGreater(hi, st.median(xs))
        self.assertAlmostEqual(hi - lo, bhi - blo, delta=0.5 * (bhi - blo))

    def test_stop_half_width_of_a_series_and_of_pairs(self):
        self.assertEqual(st.stop_half_width([[3.0] * 12]), 0.0)
        # Pairs: a clock drifting by 3x moves both, the per-rep ratio stays 2.
        ref = [2.0 * (1 + i / 10) for i in range(30)]
        cand = [1.0 * (1 + i / 10) for i in range(30)]
        self.assertAlmostEqual(st.stop_half_width([ref, cand]), 0.0)
        self.assertGreater(st.stop_half_width([ref]), 0.2)  # alone, the drift is the spread
        self.assertEqual(st.stop_half_width([[1.0], [0.0]]), float("inf"))
        self.assertEqual(st.stop_half_width([[]]), float("inf"))

    def test_cheap_enough_for_the_exclusive_section(self):
        xs = [1 + random.random() for _ in range(200)]
        t0 = time.perf_counter()
        for _ in range(20):
            st.stop_half_width([xs, xs])
        self.assertLess((time.perf_counter() - t0) / 20, 0.002)


class StopRuleTest(unittest.TestCase):
    def test_each_reason(self):
        self.assertIsNone(st.stop_reason(5, 0.1, 0.001, 10, 100, 1.0, 0.02))  # too few reps
        self.assertEqual(st.stop_reason(12, 0.1, 0.01, 10, 100, 1.0, 0.02), "tight")
        self.assertIsNone(st.stop_reason(12, 0.1, 0.05, 10, 100, 1.0, 0.02))
        self.assertEqual(st.stop_reason(12, 1.5, 0.05, 10, 100, 1.0, 0.02), "budget")
        self.assertEqual(st.stop_reason(100, 0.2, 0.05, 10, 100, 1.0, 0.02), "max_reps")
        self.assertIsNone(st.stop_reason(2, 5.0, 0.5, 10, 100, 1.0, 0.02))  # 3 reps at least
        self.assertAlmostEqual(st.relative_half_width(2.0, (1.9, 2.1)), 0.05)


class PeakAndFlagsTest(unittest.TestCase):
    def test_peak_table(self):
        self.assertEqual(st.peak_gbps("NVIDIA H100 80GB HBM3"), 3350.0)
        self.assertEqual(st.peak_gbps("NVIDIA H100 PCIe"), 2000.0)
        self.assertEqual(st.peak_gbps("NVIDIA H200"), 4800.0)
        self.assertEqual(st.peak_gbps("AMD Instinct MI300X"), 5300.0)
        self.assertIsNone(st.peak_gbps("Some GPU 9000"))
        self.assertIsNone(st.peak_gbps(None))
        gbps, frac = st.bandwidth(3.35e9, 1.0, 3350.0)
        self.assertAlmostEqual(gbps, 3.35)
        self.assertAlmostEqual(frac, 0.001)
        self.assertEqual(st.bandwidth(100, 1.0, None)[1], None)

    def test_pass_perf_is_the_lower_bound_above_the_threshold(self):
        k = [{"fraction_of_peak": 0.5}]
        self.assertTrue(st.label(k, {"speedup": 1.5, "ci": [1.2, 1.8]}, 1.0)["pass_perf"])
        self.assertFalse(st.label(k, {"speedup": 1.5, "ci": [0.9, 1.8]}, 1.0)["pass_perf"])
        self.assertFalse(st.label(k, {"speedup": 1.5, "ci": [1.2, 1.8]}, 1.3)["pass_perf"])
        self.assertIsNone(st.label(k, None, 1.0)["pass_perf"])

    def test_flags(self):
        fast = {"speedup": 12.0, "ci": [11.0, 13.0]}
        out = st.label([], fast, 1.0)
        self.assertEqual(out, {"pass_perf": False, "flags": ["perf_suspect"]})
        out = st.label([{"fraction_of_peak": 1.3}], None, 1.0)
        self.assertEqual(out["flags"], ["perf_suspect"])
        out = st.label([], {"speedup": 2.0, "ci": [1.9, 2.1]}, 1.0, reproduced=False,
                       unseen=True, calls_reference=True)
        self.assertEqual(out["flags"], ["not_reproduced", "unseen_work", "calls_reference"])
        self.assertFalse(out["pass_perf"])

    def test_kernel_share_flags(self):
        # The kernels' share of the timed call below the bound: library_work, pass_perf false
        # whatever the speedup; no launch in the timed call: kernel_not_timed (not both).
        cmp = {"speedup": 1.4, "ci": [1.3, 1.5], "launches_per_call": 1, "kernel_share": 0.2}
        out = st.label([], cmp, 1.0, min_kernel_share=0.5)
        self.assertEqual(out, {"pass_perf": False, "flags": ["library_work"]})
        cmp["kernel_share"] = 0.9
        self.assertEqual(st.label([], cmp, 1.0), {"pass_perf": True, "flags": []})
        self.assertEqual(st.label([], cmp, 1.0, min_kernel_share=0.95)["flags"],
                         ["library_work"])
        ghost = {"speedup": 1.6, "ci": [1.5, 1.7], "launches_per_call": 0, "kernel_share": 0.0}
        self.assertEqual(st.label([], ghost, 1.0), {"pass_perf": False,
                                                    "flags": ["kernel_not_timed"]})
        ghost = {"speedup": 1.6, "ci": [1.5, 1.7], "launches_per_call": 1, "kernel_share": 0.0,
                 "share_launches": [1, 0, 1]}
        self.assertEqual(st.label([], ghost, 1.0)["flags"], ["kernel_not_timed"])
        # Not measured (no share): no flag from it.
        self.assertEqual(st.label([], {"speedup": 1.4, "ci": [1.3, 1.5]}, 1.0)["flags"], [])

    def test_the_profilers_share_settles_a_short_kernels(self):
        # A short honest kernel: the events' share (0.3) counts the host's gaps; on the GPU its
        # kernel was all the work (0.97): no library_work, pass_perf as the speedup says.
        cmp = {"speedup": 1.4, "ci": [1.3, 1.5], "launches_per_call": 1, "kernel_share": 0.3}
        self.assertEqual(st.label([], cmp, 1.0)["flags"], ["library_work"])
        self.assertTrue(st.settle_share(cmp, st.gpu_share(9.7, 0.3), 0.5))
        self.assertEqual(cmp["kernel_share"], 0.97)
        self.assertEqual(cmp["kernel_share_by"], "profiler")
        self.assertEqual(st.label([], cmp, 1.0), {"pass_perf": True, "flags": []})
        # Library work behind a token kernel: the GEMM's 179 us against the epilogue's 17 us
        # keeps the flag, as does a profiler that saw nothing or could not run.
        gemm = {"speedup": 1.2, "ci": [1.1, 1.3], "launches_per_call": 1, "kernel_share": 0.09}
        self.assertFalse(st.settle_share(gemm, st.gpu_share(17.0, 179.0), 0.5))
        self.assertEqual(gemm["kernel_share"], 0.09)
        self.assertFalse(st.settle_share(gemm, st.gpu_share(0.0, 0.0), 0.5))
        self.assertFalse(st.settle_share(gemm, None, 0.5))
        self.assertEqual(st.label([], gemm, 1.0)["flags"], ["library_work"])
        # What the H200 showed: an honest add whose wrapper takes host lists pays copies to and
        # from the device and a fill of zeros (3.3 + 1.7 + 0.8 us) beside its 1.0 us kernel.
        # They compute nothing from the inputs: the share is the kernel's, no flag. A GEMM left
        # to cuBLAS, or a copy within the device, still counts against it.
        self.assertTrue(st.counts_as_work("std::enable_if<!(false), void>::type internal::gemvx"))
        self.assertTrue(st.counts_as_work("Memcpy DtoD (Device -> Device)"))
        for name in ("Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)",
                     "Memset (Device)", "void at::native::vectorized_elementwise_kernel<4, "
                     "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int)"):
            self.assertFalse(st.counts_as_work(name), name)
        host = {"speedup": 0.9, "ci": [0.8, 1.0], "launches_per_call": 1, "kernel_share": 0.003}
        self.assertTrue(st.settle_share(host, st.gpu_share(1.04, 0.0), 0.5))
        self.assertEqual(st.label([], host, 1.0)["flags"], [])
        # A share already above the bound is never touched.
        ok = {"kernel_share": 0.8}
        self.assertFalse(st.settle_share(ok, 0.2, 0.5))
        self.assertEqual(ok, {"kernel_share": 0.8})

    def test_unseen_work(self):
        # 60 us of side-stream work the stream's own event finished before: the rep counts it.
        self.assertAlmostEqual(st.rep_time(2e-6, 62e-6), 62e-6)
        self.assertTrue(st.unseen_work(2e-6, 62e-6))
        # The synchronise's latency on a busy CPU (15 us more) is not unseen work.
        self.assertEqual(st.rep_time(50e-6, 65e-6), 50e-6)
        self.assertFalse(st.unseen_work(50e-6, 50e-6))
        # Long calls: more than 1.5 times is needed, not just 20 us.
        self.assertEqual(st.rep_time(1e-3, 1.1e-3), 1e-3)


class GpuLockTest(unittest.TestCase):
    """Real processes on real lock files: a writer waits for readers, and a reader that comes
    while a writer waits queues behind it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.paths = {"gate": os.path.join(self.dir, "g"), "rw": os.path.join(self.dir, "rw")}
        for p in self.paths.values():
            open(p, "w").close()

    def child(self, body):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                body(w)
            finally:
                os._exit(0)
        os.close(w)
        return pid, r

    def read_all(self, r):
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        return data.decode()

    def test_writer_waits_for_a_reader_and_steps_aside_for_the_others(self):
        reader = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        reader.enter()

        def writer(w):
            lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
            t0 = time.monotonic()
            waited = lk.acquire_exclusive(5.0)
            t_in = time.monotonic()
            os.write(w, ("%f %f %d %f\n" % (waited, t_in - t0, lk.retries, t_in)).encode())
            time.sleep(0.3)
            lk.release_exclusive()
        pid, r = self.child(writer)
        time.sleep(0.3)

        def late_reader(w):
            lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
            lk.enter()
            os.write(w, ("%f\n" % time.monotonic()).encode())  # the same clock in every process
        pid2, r2 = self.child(late_reader)
        late_in = float(self.read_all(r2))
        time.sleep(0.2)
        # The writer holds the gate: the early reader's checkpoint steps out and lets it in.
        t_in = time.monotonic()
        sections = len(reader.sections)
        while len(reader.sections) == sections and time.monotonic() - t_in < 3:
            reader.checkpoint()  # (in the writer's 5 ms step aside it stays in: again)
            time.sleep(0.001)
        back = time.monotonic() - t_in
        waited, _, retries, writer_in = self.read_all(r).split()
        os.waitpid(pid, 0)
        os.waitpid(pid2, 0)
        self.assertGreaterEqual(float(waited), 0.45)  # until the first reader stepped out
        # The early reader stayed in past the writer's first window: the writer let the gate go
        # (and took it again), so the late reader got in without waiting for the device's turn.
        self.assertGreaterEqual(int(retries), 1)
        # Ordered, not timed (a loaded host stretches any bound): in before the writer was.
        self.assertLess(late_in, float(writer_in))
        self.assertGreaterEqual(back, 0.25)  # the first one queued behind the timing section
        self.assertTrue(reader.shared)  # and got back in after it

    def test_writers_queue_among_themselves(self):
        self.paths["queue"] = os.path.join(self.dir, "q")
        open(self.paths["queue"], "w").close()
        reader = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        reader.enter()

        def writer(w):
            lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"], self.paths["queue"])
            waited = lk.acquire_exclusive(5.0)
            t_in = time.monotonic()
            time.sleep(0.1)
            t_out = time.monotonic()  # the last moment it holds the device: the next may
            lk.release_exclusive()  # come in before this process runs again
            os.write(w, ("%f %f %f\n" % (waited, t_in, t_out)).encode())
        pid_a, r_a = self.child(writer)
        time.sleep(0.1)
        pid_b, r_b = self.child(writer)  # queued behind the first
        time.sleep(0.3)

        def late_reader(w):
            lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
            t0 = time.monotonic()
            lk.enter()
            os.write(w, ("%f\n" % (time.monotonic() - t0)).encode())
        pid_l, r_l = self.child(late_reader)
        late = float(self.read_all(r_l))
        time.sleep(0.1)
        sections = len(reader.sections)
        t0 = time.monotonic()
        while len(reader.sections) == sections and time.monotonic() - t0 < 3:
            reader.checkpoint()
            time.sleep(0.001)
        a = [float(x) for x in self.read_all(r_a).split()]
        self.assertTrue(reader.shared)  # back in after the first writer
        reader.leave()  # and out for the second
        b = [float(x) for x in self.read_all(r_b).split()]
        for pid in (pid_a, pid_b, pid_l):
            os.waitpid(pid, 0)
        # The late reader is not starved: with bursts (docs/VERIFIER.md, "Exclusive GPU") the
        # second writer, queued while the first timed, keeps the gate from the hand-over, so
        # the late reader gets in after both sections (about 0.36 s on an idle machine, 2.1 s
        # once on a loaded 2-core one), never later than the writers let go (they wait 5 s).
        self.assertLess(late, 4.0)
        self.assertGreaterEqual(b[1], a[2])  # one exclusive section after the other

    def test_writer_gives_up_after_wait(self):
        reader = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        reader.enter()

        def writer(w):
            lk = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
            os.write(w, repr(lk.acquire_exclusive(0.2)).encode())
        pid, r = self.child(writer)
        self.assertEqual(self.read_all(r), "None")
        os.waitpid(pid, 0)
        reader.leave()

    def test_pause_steps_out_for_a_compile(self):
        reader = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        reader.enter()
        reader.pause()
        self.assertFalse(reader.shared)
        other = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        self.assertIsNotNone(other.acquire_exclusive(0.5))  # nobody in: at once
        other.release_exclusive()
        reader.resume()
        self.assertTrue(reader.shared)

    def test_report_names_the_longest_section_and_what_ended_it(self):
        reader = gpulock.GpuLock(self.paths["gate"], self.paths["rw"])
        reader.enter()
        time.sleep(0.06)
        reader.pause()  # a compile
        reader.resume()
        rep = reader.report()
        self.assertGreaterEqual(rep["longest_shared_ms"], 50)
        self.assertEqual(rep["longest_ended_by"], "compile")
        time.sleep(0.12)
        rep = reader.report()  # the section still held is longer now
        self.assertGreaterEqual(rep["longest_shared_ms"], 100)
        self.assertEqual(rep["longest_ended_by"], "open")
        self.assertEqual(rep["writer_retries"], 0)
        reader.leave()


if __name__ == "__main__":
    unittest.main()
