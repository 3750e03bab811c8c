"""Generate over gRPC by a real daemon through a FLUX.1-dev pipeline folder
(CLIP and T5 text encoders with their tokenizers, transformer, VAE: random
weights, real layouts; ``diffusiond-demo --write_pipeline DIR --pipeline
flux``), driven by diffusionctl as a user would: once with room for every
component, once under a RAM budget that cannot hold all four, where the
daemon must evict and reload as its events say and never over-commit.
"""

import subprocess
import unittest

from daemon_fixture import Daemon, binary, daemon_env, demo_pipeline, models_dir, work_dir
from test_generate import png_size

PIPELINE = "fluxpipe"
COMPONENTS = [f"{PIPELINE}/{c}" for c in ("text_encoder", "text_encoder_2", "transformer", "vae")]
WIDTH, HEIGHT = 64, 48


def flux_models_dir():
    """Returns the models directory with the random FLUX pipeline written on first use."""
    demo_pipeline(PIPELINE, "flux")
    return models_dir()


def ctl_generate(daemon, out, *extra):
    """Runs diffusionctl generate on the FLUX folder; returns its stderr (one line per stage)."""
    r = subprocess.run([binary("DIFFUSIONCTL_BIN", "diffusionctl"), "--address", daemon.address, "generate",
                        PIPELINE, "--prompt", "a lighthouse at dawn", "--width", str(WIDTH), "--height",
                        str(HEIGHT), "--steps", "2", "--seed", "5", "--out", str(out), *extra],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=daemon_env())
    if r.returncode != 0:
        raise AssertionError(f"diffusionctl generate exited {r.returncode}:\n{r.stderr}")
    return r.stderr


def stage_lines(stderr, stage):
    return [line.split()[1] for line in stderr.splitlines() if line.startswith(stage + " ")]


class FluxGenerateTest(unittest.TestCase):

    def test_diffusionctl_generate_through_four_components_then_under_a_budget_for_three(self):
        models = flux_models_dir()
        roomy = Daemon(models, ram_budget="2GiB").start()
        try:
            out = work_dir() / "flux-roomy.png"
            stderr = ctl_generate(roomy, out)
            self.assertEqual(png_size(out.read_bytes()), (WIDTH, HEIGHT))
            self.assertEqual(stage_lines(stderr, "load"), COMPONENTS, stderr)
            self.assertEqual(stage_lines(stderr, "encode"), COMPONENTS[:2], stderr)
            self.assertEqual(len(stage_lines(stderr, "denoise")), 2, stderr)
            self.assertEqual(stage_lines(stderr, "decode"), [COMPONENTS[3]], stderr)
            with roomy.client() as c:
                sizes = {m.model_id: m.ram_bytes for m in c.list_models()}
                peak = c.stats().budget("cpu").high_water_bytes
            reference = out.read_bytes()
        finally:
            roomy.assert_stops_cleanly()
        self.assertEqual(sorted(sizes), sorted(COMPONENTS))
        # One byte short of the peak (every model and the denoise's
        # activations), so something must go, yet every stage fits.
        self.assertGreater(peak, sum(sizes.values()))
        budget = peak - 1
        tight = Daemon(models, ram_budget=str(budget)).start()
        try:
            out = work_dir() / "flux-tight.png"
            stderr = ctl_generate(tight, out)
            evicted = stage_lines(stderr, "evict")
            self.assertTrue(evicted, stderr)
            self.assertTrue(set(evicted) <= set(COMPONENTS), stderr)
            self.assertEqual(out.read_bytes(), reference, "eviction must not change the image")
            with tight.client() as c:
                ram = c.stats().budget("cpu")
                self.assertEqual(ram.capacity_bytes, budget)
                self.assertLessEqual(ram.high_water_bytes, budget, "over-committed")
            # Again: what was evicted is loaded again, and the events say so.
            stderr = ctl_generate(tight, work_dir() / "flux-tight-2.png")
            reloaded = [line for line in stderr.splitlines() if line.startswith("load ") and "already" not in line]
            self.assertTrue(reloaded, stderr)
        finally:
            tight.assert_stops_cleanly()


if __name__ == "__main__":
    unittest.main()
