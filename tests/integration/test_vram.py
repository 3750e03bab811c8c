"""The VRAM tier through a real daemon on the simulated device (``--device sim``):
placement at the first step, eviction to RAM under a budget that holds one
placement of two, re-placement without a reload, a streaming plan, their
/metrics series and log lines; a Generate whose encode, denoise and decode all
run on the device inside the VRAM budget; and ``--device cuda:0`` refused at
start in one line where no GPU is usable."""

import math
import subprocess
import unittest

import diffusiond_client as dc
from daemon_fixture import (COMPONENTS, DEMO_MODEL, PIPELINE, Daemon, DaemonTestCase, binary, caption, daemon_env, metric,
                            models_dir, parse_metrics, pipeline_models_dir)

SIM_MEMORY = "1GiB"


def step(client, model_id):
    """Runs one forward of the demo model and returns its output values."""
    x = dc.WireTensor.from_floats([0.25 * (i % 7) for i in range(16 * 8 * 8)], (1, 16, 1, 8, 8))
    t = dc.WireTensor.from_floats([0.5], (1,))
    return client.step(model_id, {"x": x, "t": t, "cap_feats_0": caption()})["out"].to_array()


def sim_args(vram_budget):
    # No headroom: the simulated device has no CUDA context or workspaces.
    return ("--device", "sim", "--sim_device_memory", SIM_MEMORY, "--vram_headroom", "0", "--vram_budget",
            str(vram_budget))


def sim_daemon(vram_budget):
    return Daemon(models_dir(), extra_args=sim_args(vram_budget))


_full_placement_bytes = None


def full_placement_bytes():
    """Returns the VRAM the demo model's placement holds with every block
    resident, and the VRAM a step's activations take beside it (the rest of
    the budget's high water), measured on a daemon whose budget holds both
    easily."""
    global _full_placement_bytes
    if _full_placement_bytes is None:
        daemon = sim_daemon("512MiB").start()
        try:
            with daemon.client() as client:
                client.load_model(DEMO_MODEL, model_id="probe")
                step(client, "probe")
                info = {m.model_id: m for m in client.list_models()}["probe"]
                if not info.vram_plan.startswith("all ") or info.vram_bytes <= 0:
                    raise AssertionError(f"the probe was not placed whole: {info}\n{daemon.output()}")
                activations = client.stats().budget("cuda").high_water_bytes - info.vram_bytes
                if activations <= 0:
                    raise AssertionError(f"no activations were reserved beside the placement: {info}")
                _full_placement_bytes = (info.vram_bytes, activations)
        finally:
            daemon.assert_stops_cleanly()
    return _full_placement_bytes


class VramEvictionTest(DaemonTestCase):
    """A VRAM budget that holds one of two demo models' placements."""

    @classmethod
    def setUpClass(cls):
        cls.placement, activations = full_placement_bytes()
        # One placement and its step's activations fit; two placements do not.
        cls.budget = cls.placement * 3 // 2 + activations
        cls.daemon_options = {"extra_args": sim_args(cls.budget)}
        super().setUpClass()

    def models(self):
        return {m.model_id: m for m in self.client.list_models()}

    def metrics(self):
        return parse_metrics(self.daemon.scrape())

    def test_Vram_one_placement_evicts_the_other_to_ram_and_comes_back_without_a_reload(self):
        self.assertRegex(self.daemon.output(), rf"msg=ready .*device=sim vram_budget_bytes={self.budget}\b")
        a = self.client.load_model(DEMO_MODEL, model_id="vram-a")
        self.client.load_model(DEMO_MODEL, model_id="vram-b")
        self.assertEqual(a.compute_dtype, "float32", "sim keeps the CPU's default dtype")
        self.assertEqual((a.vram_bytes, a.vram_plan), (0, ""), "placed before its first step")

        step(self.client, "vram-a")
        models = self.models()
        self.assertEqual(models["vram-a"].vram_bytes, self.placement)
        self.assertTrue(models["vram-a"].vram_plan.startswith("all "), models["vram-a"].vram_plan)
        self.assertEqual(models["vram-a"].vram_streamed_bytes_per_step, 0)
        self.assertEqual(models["vram-b"].vram_bytes, 0)
        misses = self.client.stats().misses

        step(self.client, "vram-b")
        models = self.models()
        self.assertEqual(models["vram-b"].vram_bytes, self.placement)
        self.assertIn("vram-a", models, "evicting a placement unloaded its model")
        self.assertEqual(models["vram-a"].vram_bytes, 0)
        self.assertEqual(models["vram-a"].vram_plan, "")
        self.assertEqual(models["vram-a"].ram_bytes, a.ram_bytes)
        self.assertIsNotNone(self.daemon.wait_for_line(r"tier=vram event=evicted_to_ram model=vram-a\b", 10),
                             self.daemon.output())

        step(self.client, "vram-a")
        stats = self.client.stats()
        self.assertEqual(stats.misses, misses, "placing again reloaded from disk")
        self.assertEqual(self.models()["vram-a"].vram_bytes, self.placement)
        self.assertEqual(self.models()["vram-b"].vram_bytes, 0)
        cuda = stats.budget("cuda")
        self.assertIsNotNone(cuda, stats.budgets)
        self.assertEqual((cuda.capacity_bytes, cuda.reserved_bytes, cuda.committed_bytes),
                         (self.budget, 0, self.placement))

        s = self.metrics()
        self.assertEqual(metric(s, "diffusiond_memory_budget_bytes", device="cuda"), self.budget)
        self.assertEqual(metric(s, "diffusiond_memory_reserved_bytes", device="cuda"), 0)
        self.assertEqual(metric(s, "diffusiond_memory_used_bytes", device="cuda"), self.placement)
        self.assertEqual(metric(s, "diffusiond_model_resident_bytes", model="vram-a", device="cuda"), self.placement)
        self.assertIsNone(metric(s, "diffusiond_model_resident_bytes", model="vram-b", device="cuda"))
        self.assertEqual(metric(s, "diffusiond_model_resident_bytes", model="vram-b", device="cpu"), a.ram_bytes)
        self.assertEqual(metric(s, "diffusiond_model_vram_step_streamed_bytes", model="vram-a"), 0)
        self.assertIsNone(metric(s, "diffusiond_model_vram_step_streamed_bytes", model="vram-b"))
        self.assertEqual(metric(s, "diffusiond_vram_placements_total"), 3)
        self.assertEqual(metric(s, "diffusiond_vram_evictions_total"), 2)
        self.assertEqual(metric(s, "diffusiond_model_evictions_total"), 0, "a RAM eviction was counted")

        # a is placed (it took b's room back); b's placement was evicted.
        self.assertEqual(self.client.unload_model("vram-a").vram_bytes_freed, self.placement)
        self.assertEqual(self.client.unload_model("vram-b").vram_bytes_freed, 0)
        s = self.metrics()
        self.assertEqual(metric(s, "diffusiond_memory_used_bytes", device="cuda"), 0)
        self.assertEqual(metric(s, "diffusiond_memory_reserved_bytes", device="cuda"), 0)
        self.assertIsNone(metric(s, "diffusiond_model_resident_bytes", model="vram-a"))
        self.assertIsNone(metric(s, "diffusiond_model_vram_step_streamed_bytes", model="vram-a"))
        self.assertEqual(self.client.stats().budget("cuda").committed_bytes, 0)


class VramStreamingTest(unittest.TestCase):
    """A VRAM budget below one whole placement: some blocks stream."""

    def test_Vram_a_partial_plan_streams_and_computes_what_the_cpu_does(self):
        full, activations = full_placement_bytes()
        budget = full * 3 // 4 + activations
        cpu = Daemon(models_dir()).start()
        try:
            with cpu.client() as client:
                client.load_model(DEMO_MODEL, model_id="cpu")
                expected = step(client, "cpu")
        finally:
            cpu.assert_stops_cleanly()
        daemon = sim_daemon(budget).start()
        try:
            with daemon.client() as client:
                client.load_model(DEMO_MODEL, model_id="streamed")
                got = step(client, "streamed")
                info = {m.model_id: m for m in client.list_models()}["streamed"]
                s = parse_metrics(daemon.scrape())
        finally:
            daemon.assert_stops_cleanly()
        self.assertIn("streamed", info.vram_plan)
        self.assertGreater(info.vram_streamed_bytes_per_step, 0)
        self.assertLessEqual(info.vram_bytes, budget)
        self.assertEqual(metric(s, "diffusiond_model_vram_step_streamed_bytes", model="streamed"),
                         info.vram_streamed_bytes_per_step)
        self.assertTrue(all(math.isfinite(v) for v in got))
        self.assertEqual(got, expected, "streaming on the simulated device changed the output")


class VramGenerateTest(unittest.TestCase):
    """Every stage of a Generate on the simulated device."""

    def test_Vram_generate_runs_encode_denoise_and_decode_on_the_device_inside_the_budget(self):
        budget = 512 * 1024 * 1024
        daemon = Daemon(pipeline_models_dir(), ram_budget="2GiB", extra_args=sim_args(budget)).start()
        try:
            with daemon.client() as client:
                events = []
                image = client.generate(PIPELINE, "a red lighthouse", "blurry", width=64, height=48, steps=2,
                                        guidance_scale=3.0, seed=7, on_progress=events.append)
                models = {m.model_id: m for m in client.list_models()}
                cuda = client.stats().budget("cuda")
                s = parse_metrics(daemon.scrape())
        finally:
            daemon.assert_stops_cleanly()
        self.assertEqual((image.width, image.height), (64, 48))
        ran = [e for e in events if e.stage in ("encode", "denoise", "decode")]
        self.assertEqual([e.stage for e in ran], ["encode", "denoise", "denoise", "decode"])
        for e in ran:
            self.assertEqual(e.device, "sim", e)
        for e in (ran[0], ran[1], ran[3]):  # the encode, the first step, the decode: what was placed
            self.assertIn("on sim: placed, all ", e.detail)
        self.assertEqual([e.device for e in events if e.stage == "load"], ["", "", ""])
        for c in COMPONENTS:
            self.assertGreater(models[c].vram_bytes, 0, models[c])
            self.assertTrue(models[c].vram_plan.startswith("all "), models[c].vram_plan)
        self.assertLessEqual(cuda.high_water_bytes, budget)
        self.assertEqual(cuda.reserved_bytes, 0)
        self.assertEqual(cuda.committed_bytes, sum(models[c].vram_bytes for c in COMPONENTS))
        for stage, count in (("encode", 1), ("denoise", 2), ("decode", 1)):
            self.assertEqual(metric(s, "diffusiond_generate_stage_runs_total", stage=stage, device="sim"), count)
            self.assertIsNone(metric(s, "diffusiond_generate_stage_runs_total", stage=stage, device="cpu"))
        self.assertEqual(metric(s, "diffusiond_vram_placements_total"), 3)


class VramCudaStartTest(unittest.TestCase):
    """--device cuda:0 where the build has no CUDA or no GPU is visible."""

    def test_Vram_cuda_without_a_gpu_fails_at_start_in_one_line(self):
        args = [binary("DIFFUSIOND_BIN", "diffusiond"), "--listen", "127.0.0.1:0", "--metrics_listen", "127.0.0.1:0",
                "--models_dir", str(models_dir()), "--device", "cuda:0"]
        try:
            out = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                                 env=daemon_env())
        except subprocess.TimeoutExpired:
            self.skipTest("diffusiond --device cuda:0 started: a CUDA GPU is usable here")
        lines = out.stderr.splitlines()
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertEqual(len(lines), 1, f"expected one line on stderr, got:\n{out.stderr}")
        self.assertIn('msg="cannot start"', lines[0])
        self.assertIn("code=FAILED_PRECONDITION", lines[0])
        self.assertRegex(lines[0], r'error="--device cuda:0: (this build has no CUDA|no CUDA GPU is visible)')
        self.assertEqual(out.stdout, "")


if __name__ == "__main__":
    unittest.main()
