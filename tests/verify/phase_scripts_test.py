"""The per-phase benchmark scripts on verdict lines made here (bench/verify/phase_table.py,
phase_diff.py and pool_start.py, which scripts/gpu/timing-cost runs on the H200's): every phase
a report can hold gets a row, a phase's compiles and runs go under it, the labelled run's extra
CPU is split by phase, by the watcher's arms and per bounds launch, and the pool's start is
read from either kind of line. Run by
tests/verify/CMakeLists.txt (verify.phase_scripts) as `python3 phase_scripts_test.py ROOT`."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
BENCH = os.path.join(ROOT, "bench", "verify")


def line(key, phases, mutant=None, lock=None, bounds=None, speed=None):
    report = {"phase_times": phases, "gpu_lock": lock or {}}
    if mutant is not None:
        report["mutant"] = {"phase_times": mutant}
    if bounds is not None:
        report["bounds"] = bounds
    if speed is not None:
        report["speed"] = speed
    return {"key": key, "verdict": "passed", "flags": [], "report": report, "duration_ms": 1000}


def t(wall, cpu, compile_ms=None, compile_cpu=None):
    out = {"wall_ms": wall, "cpu_ms": cpu}
    if compile_ms is not None:
        out.update(compile_ms=compile_ms, compile_cpu_ms=compile_cpu)
    return out


class PhaseScriptsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, lines):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            for x in lines:
                f.write(json.dumps(x) + "\n")
        return path

    def run_script(self, *args):
        got = subprocess.run([sys.executable] + list(args), capture_output=True, text=True)
        self.assertEqual(got.returncode, 0, got.stderr)
        return got.stdout

    def test_every_phase_of_item_1_gets_a_row_and_its_compiles_go_under_it(self):
        # prepare, test, skip-launch, output mutants, the kernel battery's compiles and runs,
        # bounds, timing (speed), cross-compile, and the phases the table does not list by
        # name (a control run of its own): each once, its compiles and runs indented under it.
        phases = {"prepare": t(10, 10), "test": t(900, 800, 600, 550), "speed": t(300, 90),
                  "differential": t(40, 30), "cross_compile": t(200, 190), "bounds": t(500, 400)}
        mutant = {"prepare": t(20, 20), "skip_launch": t(300, 250, 10, 5),
                  "control": t(200, 190, 20, 19), "output_mutants": t(400, 350),
                  "kernel_battery": t(3000, 2800, 2000, 1900), "a_new_phase": t(5, 5, 1, 1)}
        path = self.write("v.jsonl", [line("a@0", phases, mutant)])
        out = self.run_script(os.path.join(BENCH, "phase_table.py"), path)
        names = [r.strip().split("  ")[0] for r in out.splitlines()[2:]]
        self.assertEqual(names, [
            "prepare", "test", "(compiles)", "(runs)", "speed", "differential", "cross_compile",
            "bounds", "mutant_prepare", "skip_launch", "(compiles)", "(runs)", "control",
            "(compiles)", "(runs)", "output_mutants", "kernel_battery", "(compiles)", "(runs)",
            "a_new_phase", "(compiles)", "(runs)", "all phases"], out)

    def test_the_extra_cpu_is_split_by_phase_watcher_and_bounds_launch(self):
        off, on = [], []
        for i in range(4):
            armed = i >= 2  # two samples whose runner thread the watcher armed
            off.append(line("s@%d" % i, {"test": t(1000, 1000, 800, 800), "bounds": t(400, 400)},
                            {"skip_launch": t(100, 100)}, bounds={"checked": 4}))
            on.append(line("s@%d" % i,
                           {"test": t(1100, 1100, 880, 880 if not armed else 880),
                            "speed": t(500, 50),
                            "bounds": dict(t(600, 600), fill_ms=120, fill_mib=10, launch_ms=80,
                                           held_mib=300)},
                           {"skip_launch": t(110, 110)},
                           lock={"runner_arms": 3 if armed else 0, "watch_nudges": 3 if armed else 0},
                           bounds={"checked": 4},
                           speed={"timed": True, "kernels": [{"cuda_graph": 32}]}))
            off[-1]["report"]["phase_times"]["bounds"].update(fill_ms=40, fill_mib=2,
                                                               launch_ms=40, held_mib=44)
        # The armed samples' test runs cost 100 ms more than the unarmed ones' (1.2 against 1.1).
        for x in on[2:]:
            x["report"]["phase_times"]["test"] = t(1140, 1140, 880, 880)
        out = self.run_script(os.path.join(BENCH, "phase_diff.py"),
                              self.write("off.jsonl", off), self.write("on.jsonl", on))
        rows = {r.split()[0] + (" " + r.split()[1] if r.startswith("test") else ""): r
                for r in out.splitlines()[2:8] if r.strip()}
        self.assertIn("+0.8", rows["bounds"], out)  # 4 x 200 ms
        self.assertIn("+0.3", rows["test compiles"], out)  # 4 x 80 ms
        self.assertIn("+0.0", rows["skip_launch"], out)
        self.assertIn("not armed        2 1.10 (+0.0)", out)
        self.assertIn("armed 1-3        2 1.30 (+0.1)", out)
        self.assertIn("timed, CUDA graph     4 samples: cpu +50 a launch (100 -> 150); wall: "
                      "filling free memory +20 a launch, the replays' launches +10; MiB filled "
                      "+8, held as it began +256 a sample", out)
        # Extra CPU: speed 0.2, after it bounds 0.8 + skip_launch 0.04, the watcher the armed
        # samples' runs above 1.1: 2 x (0.26 - 0.22) = 0.08, the rest the compiles 0.32 and the
        # runs at 1.1: 0.08.
        self.assertIn("the extra CPU, +1.5 s: the speed phase's own 0.2, the phases after it "
                      "+0.8, the watcher (armed samples' test runs above the unarmed ratio 1.10) "
                      "+0.1, the rest (the test's compiles and runs at the run's ratio, prepare) "
                      "+0.4", out)

    def test_samples_of_one_run_only_are_left_out_and_no_pair_is_an_error(self):
        got = subprocess.run([sys.executable, os.path.join(BENCH, "phase_diff.py"),
                              self.write("a.jsonl", [line("a@0", {"test": t(1, 1)})]),
                              self.write("b.jsonl", [line("b@0", {"test": t(1, 1)})])],
                             capture_output=True, text=True)
        self.assertNotEqual(got.returncode, 0)
        self.assertIn("no sample key in both", got.stderr)

    def test_a_sync_run_is_compared_with_its_base(self):
        """bench/verify/sync_cost.py (timing-cost's RUN-block runs): wall, host and samples' CPU,
        CPU by phase, where cuda_sync took, and the samples that differ, against the run without
        the suffix (here off)."""
        def sync(asked, applied, why=None):
            cs = {"asked": asked, "applied": applied}
            if why:
                cs["why"] = why
            return cs
        off, block = [], []
        for i in range(3):
            a = line("s@%d" % i, {"test": t(1000, 900, 600, 500), "bounds": t(400, 300)},
                     {"skip_launch": t(100, 80)})
            a["report"]["pool"] = {"cpu_ms": 2000}
            a["report"]["sandbox"] = {"cuda_sync": sync("auto", False, "auto: left to the driver")}
            b = line("s@%d" % i, {"test": t(1000, 700, 600, 500), "bounds": t(350, 100)},
                     {"skip_launch": t(100, 40)})
            b["report"]["pool"] = {"cpu_ms": 1500}
            b["report"]["sandbox"] = {"cuda_sync": sync("blocking", i < 2,
                                                        None if i < 2 else "unavailable: x")}
            off.append(a)
            block.append(b)
        block[1]["flags"] = ["out_of_bounds"]
        block[2]["flags"] = ["perf_suspect"]  # a speed flag: counted apart
        self.write("verdicts-off.jsonl", off)
        self.write("verdicts-off-block.jsonl", block)
        times = os.path.join(self.dir, "times")
        with open(times, "w") as f:
            f.write("off 100.0 200.0\noff-block 300.0 390.0\n")
        host = os.path.join(self.dir, "host-cpu")
        with open(host, "w") as f:
            f.write("off 1200.0 400.0\noff-block 900.0 540.0\n")
        out = self.run_script(os.path.join(BENCH, "sync_cost.py"), self.dir, "off", "off-block",
                              "--times", times, "--host-cpu", host)
        self.assertIn("off-block against off (3 samples in both):", out)
        self.assertIn("wall 90.0 s vs 100.0 s (-10.0%); host busy CPU 900.0 s vs 1200.0 s "
                      "(-25.0%); samples' CPU 4.5 s vs 6.0 s (-25.0%)", out)
        self.assertIn("test compiles 1.5 s vs 1.5 s (+0.0%); test runs 0.6 s vs 1.2 s (-50.0%); "
                      "bounds 0.3 s vs 0.9 s (-66.7%); skip_launch 0.1 s vs 0.2 s (-50.0%)", out)
        self.assertIn("cuda_sync: asked blocking: applied in 2 of 3 samples (not: 1 unavailable: "
                      "x)", out)
        self.assertIn("differing: 1; speed flags alone: 1", out)
        self.assertIn("s@1: ('passed', ()) -> ('passed', ('out_of_bounds',))", out)

    def test_pool_start_reads_both_kinds_of_line(self):
        # bench/verify/pool_start.py: the first and the Nth dispatch from the pool's creation,
        # whatever order the lines come in, from --json lines and from --full verdict lines.
        plain = [{"key": "k%d" % i, "phases": {"dispatched": d, "context": 1000 + 10 * i,
                                                "context_waited": 0 if i < 2 else 50}}
                 for i, d in enumerate([7820, 6370, 9100, 30000])]
        plain.append({"key": "no-dispatch", "phases": {"queue": 3}})
        out = self.run_script(os.path.join(BENCH, "pool_start.py"), self.write("p.jsonl", plain),
                              "--first", "3")
        self.assertIn("first sample dispatched at 6.37 s, 3rd at 9.10 s (4 samples with a "
                      "dispatch time)", out)
        self.assertIn("the first 3: warm-up 1.00-1.02 s (median 1.01), waited for their sample "
                      "0-50 ms; 2 came before their warm-up was done", out)
        full = [{"key": "k%d" % i, "report": {"pool": {"dispatched_ms": d, "queue_ms": 1},
                                              "prestart": {"gpu": "ready", "ms": 1200,
                                                           "waited_ms": 0}}}
                for i, d in enumerate([8000, 6000])]
        out = self.run_script(os.path.join(BENCH, "pool_start.py"), self.write("f.jsonl", full))
        self.assertIn("first sample dispatched at 6.00 s, 2nd at 8.00 s", out)


if __name__ == "__main__":
    unittest.main()
