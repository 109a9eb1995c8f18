"""bench/verify/order_sim.py, the dispatch orders' simulation: its early_long plan spreads the long
samples as kforge's does (cost.cpp; tests/verify/order_test.cpp has the same batch), its coupled
replay with no coupling is the plain one, a durations file written from verdict lines reads back
the same, and --compare counts the samples whose verdict or flags differ. Run by
tests/verify/CMakeLists.txt (verify.order_sim) as `python3 order_sim_test.py ROOT`; the check
against kforge's own plans is verify.order_sim_plan."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SIM = os.path.join(ROOT, "bench", "verify", "order_sim.py")
sys.path.insert(0, os.path.dirname(SIM))
import order_sim  # noqa: E402


def batch(n, longs):
    cost = {i: 1.0 for i in range(n)}
    cost.update(longs)
    return list(range(n)), cost


class OrderSimTest(unittest.TestCase):
    def test_early_long_spreads_the_long_ones_and_keeps_the_rest_in_input_order(self):
        idx, cost = batch(300, {10: 20.0, 150: 18.0, 200: 15.0, 240: 12.0, 270: 11.0, 299: 10.0})
        for share, busy, positions in ((0.06, 0.5, [0, 2, 4, 6, 8, 10]),
                                       (0.2, 0.25, [0, 4, 8, 12, 16, 20])):
            order, is_long, long_s, at_once, spacing = order_sim.plan_early_long(
                idx, cost, 8, share, busy)
            self.assertEqual(is_long, {10, 150, 200, 240, 270, 299})
            self.assertAlmostEqual(long_s, share * 380 / 8)
            self.assertEqual(spacing, 8 // at_once)
            self.assertEqual([p for p, i in enumerate(order) if i in is_long], positions)
            self.assertEqual([i for i in order if i in is_long], [10, 150, 200, 240, 270, 299])
            others = [i for i in order if i not in is_long]
            self.assertEqual(others, sorted(others))
            self.assertEqual(order, order_sim.plan_early_long(idx, cost, 8, share, busy)[0])
        self.assertEqual(order_sim.plan_early_long(idx, cost, 8)[2:], (0.06 * 380 / 8, 4, 2))
        self.assertEqual(order_sim.simulate(idx, cost, 8), 55.0)

    def test_the_pool_runs_at_most_its_share_of_long_ones_at_once(self):
        # Enough short ones (800 s) that some still wait when each long one could start.
        idx, cost = batch(806, {10: 20.0, 150: 18.0, 200: 15.0, 240: 12.0, 270: 11.0, 805: 10.0})
        order, is_long, _, _, _ = order_sim.plan_early_long(idx, cost, 8)
        for at_once in (1, 2, 3):
            wall, took, _, starts = order_sim.simulate_coupled(
                order, cost, 8, set(), 0.0, 0.0, (is_long, at_once, 2, 64))
            for i in is_long:
                running = [j for j in is_long if starts[j] <= starts[i] < starts[j] + took[j]]
                self.assertLessEqual(len(running), at_once, (at_once, i, starts[i]))
            # The long ones start one after another as the earlier ones end, the longest first.
            by_start = sorted(is_long, key=lambda i: (starts[i], order.index(i)))
            self.assertEqual(by_start, [10, 150, 200, 240, 270, 805])
            self.assertEqual(sorted(took), idx)
        # Without the cap (all at once) the plan itself: the same wall as its plain replay.
        wall = order_sim.simulate_coupled(order, cost, 8, set(), 0.0, 0.0,
                                          (is_long, 8, 1, 1000))[0]
        self.assertAlmostEqual(wall, order_sim.simulate(order, cost, 8))

    def test_the_coupled_replay_without_coupling_is_the_plain_one(self):
        idx, cost = batch(120, {3: 14.0, 60: 9.0, 119: 12.0})
        heavy = {3, 60, 119}
        for order in (idx, order_sim.cost_order(idx, cost)):
            wall, took, _, _ = order_sim.simulate_coupled(order, cost, 6, heavy, 0.0, 0.0)
            self.assertAlmostEqual(wall, order_sim.simulate(order, cost, 6))
            for i in idx:
                self.assertAlmostEqual(took[i], cost[i])
        # With coupling the heavy ones run together in cost order and take longer.
        h_ref = order_sim.input_heavy_mean(idx, cost, 6, heavy)
        _, took = order_sim.coupled(order_sim.cost_order(idx, cost), cost, 6, heavy, 0.1, h_ref)
        self.assertGreater(sum(took[i] for i in heavy), sum(cost[i] for i in heavy))

    def test_a_durations_file_reads_back_and_compare_counts_differences(self):
        tmp = tempfile.mkdtemp()
        plan = [{"index": i, "key": f"k{i}@0", "cost_s": 1.5 + i,
                 "features": {"dots": i, "tl_calls": 3 * i, "jit": 1, "constexprs": i,
                              "test_bytes": 100 * i}} for i in range(4)]
        off = [{"index": i, "key": f"k{i}@0", "verdict": "passed", "flags": [],
                "duration_ms": 1000 * (i + 1),
                "report": {"phase_times": {"test": {"wall_ms": 500, "cpu_ms": 400,
                                                    "compile_ms": 300, "compile_cpu_ms": 250}}}}
               for i in range(4)]
        other = [dict(v) for v in off]
        other[2] = dict(other[2], verdict="failed")
        paths = {}
        for name, lines in (("plan", plan), ("off", off), ("other", other)):
            paths[name] = os.path.join(tmp, name + ".jsonl")
            with open(paths[name], "w") as f:
                f.writelines(json.dumps(x) + "\n" for x in lines)
        data = os.path.join(tmp, "d.tsv")
        subprocess.run([sys.executable, SIM, "--make-data", data, "--verdicts", paths["off"],
                        "--verdicts-on", paths["other"], "--plan", paths["plan"],
                        "--note", "made by the test"], check=True)
        recs, note = order_sim.read_data(data)
        self.assertEqual(note, ["made by the test"])
        self.assertEqual(recs[2]["runs"]["off"], (3.0, 0.4, 0.3, 0.25, "passed"))
        self.assertEqual(recs[2]["runs"]["on"][4], "failed")
        self.assertEqual(recs[3]["features"]["test_bytes"], 300)
        out = subprocess.run([sys.executable, SIM, "--compare", "a=" + paths["off"],
                              "b=" + paths["other"], "--plan", paths["plan"], "--workers", "2"],
                             check=True, capture_output=True, text=True).stdout
        self.assertIn("a: wall ?, 4 samples, summed durations 10.0 s (5.0 s per worker)", out)
        self.assertIn("b vs a: 1 samples differ in verdict or non-speed flags", out)


if __name__ == "__main__":
    unittest.main()
