"""Generate over gRPC by a real daemon through a FLUX.1-dev pipeline folder
(CLIP and T5 text encoders with their tokenizers, transformer, VAE: random
weights, real layouts; ``diffusiond-demo --write_pipeline DIR --pipeline
flux``), driven by diffusionctl as a user would: once with room for every
component, once under a RAM budget that cannot hold all four, where the
daemon must evict and reload as its events say and never over-commit.
"""

import struct
import subprocess
import unittest
import zlib

from daemon_fixture import Daemon, binary, daemon_env, demo_pipeline, models_dir, work_dir
from test_generate import png_size

import diffusiond_client as dc

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


def grey_or_rgb_png(width, height, channels, pixel):
    """An 8-bit PNG (grey for 1 channel, RGB for 3) whose pixel (x, y) is pixel(x, y) (a tuple)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes(v for x in range(width) for v in pixel(x, y)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0 if channels == 1 else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


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

    def test_diffusionctl_padding_mask_crop_returns_the_init_images_size(self):
        """--padding_mask_crop: a 90x70 photo and its mask, of another size than
        --width x --height; the daemon inpaints the mask's box at 64x48 and
        pastes it back, so the PNG has the photo's size and its bytes where
        the mask is black (core/pipeline/mask_crop.h; upstream's own images
        are compared in tools/e2e/vs_upstream_generate.py)."""
        models = flux_models_dir()
        image, mask = work_dir() / "crop-photo.png", work_dir() / "crop-mask.png"
        image.write_bytes(grey_or_rgb_png(90, 70, 3, lambda x, y: (x * 2, y * 3, (x + y) % 256)))
        mask.write_bytes(grey_or_rgb_png(90, 70, 1, lambda x, y: (255 if 40 <= x < 61 and 30 <= y < 41 else 0,)))
        daemon = Daemon(models, ram_budget="2GiB").start()
        try:
            out = work_dir() / "flux-crop.png"
            ctl_generate(daemon, out, "--image", str(image), "--mask", str(mask), "--padding_mask_crop", "4")
            self.assertEqual(png_size(out.read_bytes()), (90, 70))
            with daemon.client() as c:
                with self.assertRaisesRegex(dc.InvalidArgumentError, "not image_tensor"):
                    c.generate(PIPELINE, "x", image=dc.WireTensor.zeros((3, 48, 64)), mask_image=mask.read_bytes(),
                               padding_mask_crop=4, seed=1)
                with self.assertRaisesRegex(dc.InvalidArgumentError, "black everywhere"):
                    c.generate(PIPELINE, "x", width=WIDTH, height=HEIGHT, steps=1, image=image.read_bytes(),
                               mask_image=grey_or_rgb_png(90, 70, 1, lambda x, y: (0,)), padding_mask_crop=4, seed=1)
        finally:
            daemon.assert_stops_cleanly()


if __name__ == "__main__":
    unittest.main()
