"""Generate over gRPC by a real daemon: prompt to PNG through a Z-Image
pipeline folder (Qwen3 text encoder + tokenizer, transformer, VAE: random
weights, real layouts; ``diffusiond-demo --write_pipeline``). One daemon has
room for all three components; another has a RAM budget that holds only two
of them (and the denoise's activations), so the encoder must be evicted to
make room. The Python client and diffusionctl both drive it.
"""

import struct
import subprocess
import unittest

from daemon_fixture import COMPONENTS, PIPELINE, Daemon, binary, daemon_env, pipeline_models_dir, work_dir

import diffusiond_client as dc

WIDTH, HEIGHT = 64, 48


def png_size(png):
    """Returns (width, height) from a PNG's IHDR, checking the signature."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def generate(client, events, **kwargs):
    return client.generate(PIPELINE, "a red lighthouse, 灯塔", "blurry", width=WIDTH, height=HEIGHT, steps=2,
                           guidance_scale=3.0, seed=7, on_progress=events.append, **kwargs)


class GenerateTest(unittest.TestCase):
    """One daemon with room for everything: the image, the events, reuse."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(pipeline_models_dir(), ram_budget="2GiB").start()
        cls.addClassCleanup(cls.daemon.kill)
        cls.client = cls.daemon.client()
        cls.addClassCleanup(cls.client.close)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.assert_stops_cleanly()

    def test_prompt_to_png_through_three_cached_models(self):
        events = []
        image = generate(self.client, events)
        self.assertEqual((image.width, image.height, image.seed), (WIDTH, HEIGHT, 7))
        self.assertEqual(png_size(image.png), (WIDTH, HEIGHT))
        self.assertIn(b"parameters", image.png)  # the request, in a text chunk
        stages = [e.stage for e in events]
        self.assertEqual(stages.count("denoise"), 2)
        self.assertIn("encode", stages)
        self.assertEqual(stages[-1], "decode")
        self.assertEqual(sorted({e.model_id for e in events if e.stage == "load"}), COMPONENTS)
        listed = {m.model_id: m for m in self.client.list_models()}
        self.assertEqual({listed[c].role for c in COMPONENTS}, {"text-encoder", "denoiser", "vae"})
        again = generate(self.client, [])
        self.assertEqual(again.png, image.png, "same seed, same image")

    def test_encode_then_denoise_then_decode(self):
        conditioning, tokens = self.client.encode_prompt(f"{PIPELINE}/text_encoder", "a lighthouse")
        self.assertGreater(tokens, 3)
        self.assertEqual(conditioning["cap_feats"].shape[0], tokens)
        self.client.load_model(f"{PIPELINE}/transformer")
        latents = self.client.denoise(f"{PIPELINE}/transformer", conditioning, shape=(16, HEIGHT // 8, WIDTH // 8),
                                      steps=2, seed=3)
        image = self.client.decode(f"{PIPELINE}/vae", latents)
        self.assertEqual(png_size(image.png), (WIDTH, HEIGHT))

    def test_encode_names_its_pipeline_by_family_or_folder(self):
        by_name, _ = self.client.encode_prompt(f"{PIPELINE}/text_encoder", "a lighthouse", pipeline="z-image")
        by_folder, _ = self.client.encode_prompt(f"{PIPELINE}/text_encoder", "a lighthouse", pipeline=PIPELINE)
        self.assertEqual(by_name["cap_feats"].data, by_folder["cap_feats"].data)
        with self.assertRaises(dc.InvalidArgumentError) as e:  # FLUX has no Qwen3 encoder
            self.client.encode_prompt(f"{PIPELINE}/text_encoder", "a lighthouse", pipeline="flux")
        self.assertIn("is not a text encoder of the flux pipeline", e.exception.details)

    def test_bad_requests_are_invalid_arguments(self):
        for kwargs in ({"width": 50}, {"pipeline_override": f"{PIPELINE}/vae"}, {"steps": 2000}):
            with self.subTest(kwargs):
                with self.assertRaises(dc.InvalidArgumentError):
                    pipeline = kwargs.pop("pipeline_override", PIPELINE)
                    self.client.generate(pipeline, "x", width=kwargs.get("width", WIDTH), height=HEIGHT,
                                         steps=kwargs.get("steps", 1), seed=1)

    def test_diffusionctl_generate_writes_the_png(self):
        out = work_dir() / "ctl-generate.png"
        ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl")
        r = subprocess.run([ctl, "--address", self.daemon.address, "generate", PIPELINE, "--prompt", "a cat",
                            "--width", str(WIDTH), "--height", str(HEIGHT), "--steps", "2", "--seed", "5",
                            "--out", str(out)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=300, env=daemon_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("denoise", r.stderr)
        self.assertEqual(png_size(out.read_bytes()), (WIDTH, HEIGHT))


def denoise_activation_bytes(client):
    """The bytes generate()'s Denoise holds reserved for its activations
    (GetStats reserved_bytes while it runs), from a Denoise of the same
    prompts and latent shape, made long so the first step's event arrives
    while the loop still holds them, then cancelled."""
    positive, _ = client.encode_prompt(COMPONENTS[0], "a red lighthouse, 灯塔")
    negative, _ = client.encode_prompt(COMPONENTS[0], "blurry")
    call = client.denoise_stream(COMPONENTS[1], positive, negative, shape=(16, HEIGHT // 8, WIDTH // 8), steps=1000,
                                 guidance_scale=3.0)
    reserved = 0
    for _ in call:
        reserved = client.stats().budget("cpu").reserved_bytes
        break
    call.cancel()
    return reserved


class TwoOfThreeBudgetTest(unittest.TestCase):
    """A RAM budget under the three components and the denoise's
    activations: Generate evicts the encoder to make room for the rest, says
    so, never over-commits, and still returns the image."""

    def test_generate_evicts_the_encoder_and_finishes(self):
        models = pipeline_models_dir()
        sizing = Daemon(models, ram_budget="2GiB").start()
        try:
            with sizing.client() as c:
                for component in COMPONENTS:
                    c.load_model(component)
                sizes = {m.model_id: m.ram_bytes for m in c.list_models()}
                activations = denoise_activation_bytes(c)
        finally:
            sizing.assert_stops_cleanly()
        encoder, transformer = sizes[COMPONENTS[0]], sizes[COMPONENTS[1]]
        self.assertGreater(activations, 0)
        # Under all three (the encoder goes when the VAE loads) or under the
        # encoder, the transformer and its activations (it goes when the
        # denoise starts); either way the transformer's activations fit.
        budget = max(sum(sizes[c] for c in COMPONENTS) - 1, transformer + activations + encoder // 2)
        self.assertGreaterEqual(budget, encoder + transformer)
        daemon = Daemon(models, ram_budget=str(budget)).start()
        try:
            with daemon.client() as c:
                events = []
                image = generate(c, events)
                self.assertEqual(png_size(image.png), (WIDTH, HEIGHT))
                evicted = [e.model_id for e in events if e.stage == "evict"]
                self.assertIn(f"{PIPELINE}/text_encoder", evicted, [(e.stage, e.model_id) for e in events])
                ram = [b for b in c.stats().budgets if b.device == "cpu"][0]
                self.assertEqual(ram.capacity_bytes, budget)
                self.assertLessEqual(ram.high_water_bytes, budget, "over-committed")
        finally:
            daemon.assert_stops_cleanly()


if __name__ == "__main__":
    unittest.main()
