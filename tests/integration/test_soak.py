"""Soak: many load/unload cycles of one demo model, and many Steps on one,
against a real daemon. After every unload the RAM budget's used and reserved
bytes are 0; the daemon's RSS (VmRSS) and its /metrics exposition do not grow
from cycle to cycle, nor RSS from step to step.

DIFFUSIOND_SOAK_CYCLES (default 200) and DIFFUSIOND_SOAK_STEPS (default 500)
set the counts; docs/reliability.md has the figures of a longer run.
"""

import os
import sys
import time
import unittest

import diffusiond_client as dc
from daemon_fixture import SANITIZED, DEMO_MODEL, DaemonTestCase, caption

CYCLES = int(os.environ.get("DIFFUSIOND_SOAK_CYCLES", "200"))
STEPS = int(os.environ.get("DIFFUSIOND_SOAK_STEPS", "500"))
WARM_UP = 50  # cycles or steps before RSS is taken as the baseline
# RSS may grow by 1% of the baseline plus this much between the baseline and
# the end. RSS moves in pages as the heap and gRPC's arenas settle; on a
# daemon of a few hundred MiB, 1% alone is a few MiB, about one demo model
# (see docs/reliability.md for the noise measured). A leak of a model's weights
# per cycle, or of a step's tensors per step, passes this within a few cycles.
RSS_SLACK_BYTES = 4 << 20

_X = dc.WireTensor.from_floats([0.01 * (i % 13) for i in range(16 * 16 * 16)], (1, 16, 1, 16, 16))
_T = dc.WireTensor.from_floats([0.5], (1,))


def exposition_lines(text):
    """Returns the exposition's sample lines: series, not values, so counters
    that gained a digit do not count as growth."""
    return sorted(line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#"))


class SoakTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    def assert_rss_flat(self, what, baseline, last):
        if SANITIZED:
            return
        allowed = baseline // 100 + RSS_SLACK_BYTES
        self.assertLessEqual(last - baseline, allowed,
                             f"{what}: RSS grew from {baseline} to {last} bytes (allowed {allowed})")

    def test_load_unload_cycles_leave_nothing_behind(self):
        rss = []
        first_lines = None
        model_bytes = 0
        start = time.monotonic()
        for cycle in range(1, CYCLES + 1):
            info = self.client.load_model(DEMO_MODEL, model_id="soak", timeout=30)
            model_bytes = info.ram_bytes
            freed = self.client.unload_model("soak", wait=True, timeout=30)
            self.assertEqual(freed.ram_bytes_freed, info.ram_bytes, f"cycle {cycle}")
            cpu = self.client.stats().budget("cpu")
            self.assertEqual((cpu.committed_bytes, cpu.reserved_bytes), (0, 0), f"cycle {cycle}: {cpu}")
            rss.append(self.daemon.rss_bytes())
            if cycle == 1:
                first_lines = exposition_lines(self.daemon.scrape())
        seconds = time.monotonic() - start
        last_lines = exposition_lines(self.daemon.scrape())
        baseline = rss[min(WARM_UP, CYCLES) - 1]
        print(f"\nsoak: {CYCLES} load/unload cycles of a {model_bytes}-byte model in {seconds:.1f} s; RSS after "
              f"cycle 1 {rss[0]}, after cycle {min(WARM_UP, CYCLES)} {baseline}, max {max(rss)}, last {rss[-1]} "
              f"({(rss[-1] - baseline) / (1 << 20):+.2f} MiB); /metrics {len(first_lines)} series after the "
              f"first unload, {len(last_lines)} after the last", file=sys.stderr)
        self.assert_rss_flat("load/unload", baseline, rss[-1])
        self.assertEqual(last_lines, first_lines, "/metrics did not return to its size after the first unload")

    def test_steps_keep_rss_flat(self):
        self.client.load_model(DEMO_MODEL, model_id="soak-steps", timeout=30)
        inputs = {"x": _X, "t": _T, "cap_feats_0": caption()}
        rss = []
        start = time.monotonic()
        for i in range(1, STEPS + 1):
            out = self.client.step("soak-steps", inputs, timeout=30)["out"]
            self.assertEqual(out.shape, (1, 16, 1, 16, 16))
            if i % 10 == 0 or i == STEPS:
                rss.append((i, self.daemon.rss_bytes()))
        seconds = time.monotonic() - start
        baseline = next(r for i, r in rss if i >= min(WARM_UP, STEPS))
        cpu = self.client.stats().budget("cpu")
        print(f"\nsoak: {STEPS} Steps in {seconds:.1f} s; RSS after step {min(WARM_UP, STEPS)} {baseline}, "
              f"max {max(r for _, r in rss)}, last {rss[-1][1]} ({(rss[-1][1] - baseline) / (1 << 20):+.2f} MiB)",
              file=sys.stderr)
        self.assertEqual(cpu.reserved_bytes, 0, cpu)
        self.assert_rss_flat("steps", baseline, rss[-1][1])
        self.client.unload_model("soak-steps")


if __name__ == "__main__":
    unittest.main()
