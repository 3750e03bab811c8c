"""Generate over gRPC by one real daemon through a Qwen-Image and a Krea 2
pipeline folder (``diffusiond-demo --write_pipeline DIR --pipeline
qwen-image|krea2``: Qwen2.5-VL or Qwen3-VL with its tokenizer, the
transformer, AutoencoderKLQwenImage; random weights, real layouts), under a
RAM budget that holds any two of either pipeline's three components but
never all three, so each Generate must evict. The Python client runs the
Qwen-Image folder and diffusionctl the Krea 2 one. Each stream of events
must show every stage (loads, encode, denoise steps, decode) and at least
one eviction, in an order a cache could have taken (a model is loaded
before it works and evicted only while loaded, and what the events leave
loaded is what the daemon lists), never holding more than the budget; the
budget's high-water mark stays within it, and the RSS within it over the
idle daemon's. A transformer whose weights alone exceed the budget is
refused with RESOURCE_EXHAUSTED naming both before anything loads.

The daemon keeps weights in float32 (FP8 storage and narrow weights off),
so a component holds 4 bytes per parameter, counted from its file's header.
"""

import math
import re
import subprocess
import unittest

import diffusiond_client as dc
import safetensors_io
from daemon_fixture import (SANITIZED, Daemon, binary, daemon_env, demo_pipeline, models_dir, stretched_model,
                            work_dir)
from test_generate import png_size

PIPELINES = {"qwenpipe": "qwen-image", "krea2pipe": "krea2"}
PARTS = ("text_encoder", "transformer", "vae")
WIDTH = HEIGHT = 64
STEPS = 2
HUGE = "qwen-image-huge"
HUGE_LAYERS = 64
# What the RSS may exceed the budget by over the idle daemon's (as
# test_stress.py: freed pages not yet returned, gRPC's buffers).
RSS_OVERHEAD_BYTES = 64 << 20
_LINE = re.compile(r"^(load|evict|encode|denoise|decode)\s+(\S+)(?: step \d+/\d+)? [\d.]+ s(?: \((.*)\))?$")


def weights_file(folder):
    return next(folder.glob("*.safetensors"))


def float32_bytes(folder):
    """What a component loaded as float32 holds: 4 bytes per parameter of its weights file."""
    return 4 * sum(math.prod(t["shape"]) for t in safetensors_io.read_header(weights_file(folder)).values())


def ctl_events(stderr):
    """diffusionctl generate's stage lines as (stage, model_id, detail)."""
    events = []
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if m:
            events.append((m.group(1), m.group(2), m.group(3) or ""))
    return events


class QwenAndKrea2UnderABudgetForTwoComponentsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        for name, kind in PIPELINES.items():
            demo_pipeline(name, kind)
        # A Qwen-Image transformer over the budget (a hole: a refused Generate never reads it).
        stretched_model(models_dir() / "qwenpipe" / "transformer", HUGE, "transformer_blocks", "num_layers",
                        HUGE_LAYERS)
        models = models_dir()
        cls.sizes = {f"{p}/{c}": float32_bytes(models / p / c) for p in PIPELINES for c in PARTS}
        totals = {p: [cls.sizes[f"{p}/{c}"] for c in PARTS] for p in PIPELINES}
        cls.two = max(sum(s) - min(s) for s in totals.values())
        cls.three = min(sum(s) for s in totals.values())
        cls.budget = (cls.two + cls.three) // 2
        cls.daemon = Daemon(models, ram_budget=str(cls.budget),
                            extra_args=("--fp8", "off", "--narrow_weights", "false", "--compute_dtype", "float32")).start()
        cls.addClassCleanup(cls.daemon.kill)
        cls.client = cls.daemon.client()
        cls.addClassCleanup(cls.client.close)
        cls.idle_rss = cls.daemon.rss_bytes()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.assert_stops_cleanly()

    def loaded(self):
        return {m.model_id: m.ram_bytes for m in self.client.list_models()}

    def check_run(self, pipeline, events, resident):
        """Checks one Generate's (stage, model_id, detail) events against a cache that held ``resident`` before."""
        trace = "\n".join(f"{s} {m} {d}" for s, m, d in events)
        resident = set(resident)
        components = [f"{pipeline}/{c}" for c in PARTS]
        for stage, model, detail in events:
            if stage == "load" and detail.startswith("already loaded"):
                self.assertIn(model, resident, trace)
            elif stage == "load":
                self.assertNotIn(model, resident, trace)
                resident.add(model)
            elif stage == "evict":
                self.assertIn(model, resident, trace)
                resident.remove(model)
            else:
                self.assertIn(model, resident, f"{stage} by a model not loaded\n{trace}")
            self.assertLessEqual(sum(self.sizes[m] for m in resident), self.budget, trace)
        print(f"{pipeline} under {self.budget} bytes:\n{trace}")
        stages = [s for s, _, _ in events]
        self.assertEqual([m for s, m, _ in events if s == "load"][:3], components, trace)
        self.assertEqual([m for s, m, _ in events if s == "encode"], [components[0]], trace)
        self.assertEqual([m for s, m, _ in events if s == "denoise"], [components[1]] * STEPS, trace)
        self.assertEqual([m for s, m, _ in events if s == "decode"], [components[2]], trace)
        self.assertLess(stages.index("encode"), stages.index("denoise"), trace)
        self.assertEqual(stages[-1], "decode", trace)
        self.assertIn("evict", stages, trace)
        # What the events leave loaded is what the daemon holds, at 4 bytes a parameter.
        loaded = self.loaded()
        self.assertEqual(set(loaded), resident, trace)
        for model, ram in loaded.items():
            self.assertEqual(ram, self.sizes[model], model)
        ram = self.client.stats().budget("cpu")
        self.assertEqual(ram.capacity_bytes, self.budget)
        self.assertLessEqual(ram.high_water_bytes, self.budget, "over-committed")
        if not SANITIZED:
            peak = self.daemon.rss_bytes("VmHWM")
            self.assertLessEqual(peak, self.idle_rss + self.budget + RSS_OVERHEAD_BYTES,
                                 f"RSS peaked at {peak}; idle {self.idle_rss}, budget {self.budget}")

    def test_both_pipelines_generate_evicting_as_their_events_say(self):
        # The premise: any two of a pipeline's components fit, its three do not.
        self.assertLess(self.two, self.budget)
        self.assertLess(self.budget, self.three)
        events = []
        image = self.client.generate("qwenpipe", "a lighthouse on a cliff", "blurry", width=WIDTH, height=HEIGHT,
                                     steps=STEPS, seed=7, on_progress=events.append)
        self.assertEqual(png_size(image.png), (WIDTH, HEIGHT))
        self.check_run("qwenpipe", [(e.stage, e.model_id, e.detail) for e in events], set())

        before = set(self.loaded())
        out = work_dir() / "krea2-ctl.png"
        r = subprocess.run([binary("DIFFUSIONCTL_BIN", "diffusionctl"), "--address", self.daemon.address, "generate",
                            "krea2pipe", "--prompt", "a lighthouse on a cliff", "--negative", "blurry", "--width",
                            str(WIDTH), "--height", str(HEIGHT), "--steps", str(STEPS), "--seed", "7", "--out",
                            str(out)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                           env=daemon_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(png_size(out.read_bytes()), (WIDTH, HEIGHT))
        self.check_run("krea2pipe", ctl_events(r.stderr), before)

    def test_a_transformer_over_the_budget_is_refused_before_anything_loads(self):
        loaded, misses = set(self.loaded()), self.client.stats().misses
        events = []
        with self.assertRaises(dc.ResourceExhaustedError) as e:
            self.client.generate("qwenpipe", "a lighthouse", components={"transformer": HUGE}, width=WIDTH,
                                 height=HEIGHT, steps=1, seed=1, on_progress=events.append)
        message = e.exception.details
        self.assertIn(f"component transformer (\"{HUGE}\", qwen-image) needs", message)
        self.assertIn("of weights, more than the RAM budget of", message)
        self.assertIn("nothing was loaded", message)
        self.assertEqual(events, [])
        self.assertEqual(set(self.loaded()), loaded)
        self.assertEqual(self.client.stats().misses, misses)


if __name__ == "__main__":
    unittest.main()
