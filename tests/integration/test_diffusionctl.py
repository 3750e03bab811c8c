"""diffusionctl against a real daemon: every command exits 0 with the text
people read, errors exit 1 naming the gRPC code, usage errors exit 2."""

import json
import math
import re
import subprocess
import unittest

import safetensors_io
from daemon_fixture import (DEMO_MODEL, LATENT_SHAPE, DaemonTestCase, binary, caption, conditioning, daemon_env,
                            fixture_folder, fixture_model, work_dir)

import diffusiond_client as dc


class DiffusionctlTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    @classmethod
    def setUpClass(cls):
        cls.ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl")  # skips the class when not built
        super().setUpClass()

    def run_ctl(self, *args, address=True, env=None):
        argv = [self.ctl, "--timeout", "120s"] + (["--address", self.daemon.address] if address else []) + list(args)
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                             env=env if env is not None else daemon_env())
        out.argv = " ".join(argv)
        return out

    def ok(self, *args, **kwargs):
        out = self.run_ctl(*args, **kwargs)
        self.assertEqual(out.returncode, 0,
                         f"{out.argv} exited {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}")
        return out

    def test_load_ls_stats_unload(self):
        out = self.ok("load", DEMO_MODEL, "--id", "ctl-model")
        self.assertRegex(out.stdout, r"model_id\s+ctl-model")
        self.assertRegex(out.stdout, r"architecture\s+z-image")
        self.assertRegex(out.stdout, r"compute_dtype\s+float32")
        fp8 = int(re.search(r"tensors\s+\d+ \((\d+) fp8\)", out.stdout).group(1))
        self.assertGreater(fp8, 0)

        ls = self.ok("ls").stdout
        self.assertIn("ID", ls.splitlines()[0])
        self.assertRegex(ls, rf"ctl-model\s+z-image\s+float32\s+{fp8}/\d+")

        stats = self.ok("stats").stdout
        self.assertTrue(stats.startswith("budgets:"), stats)
        self.assertRegex(stats, r"\ncpu\s+512\.00 MiB")
        self.assertIn("ctl-model", stats)

        listed = json.loads(self.ok("--json", "ls").stdout)
        info = {m["model_id"]: m for m in listed["models"]}["ctl-model"]
        self.assertEqual(int(info["fp8_tensors"]), fp8)

        out = self.ok("unload", "ctl-model")
        self.assertRegex(out.stdout, r"^unloaded ctl-model: freed \d")
        self.assertNotIn("ctl-model", self.ok("ls").stdout)

    def test_health(self):
        for service in ([], ["liveness"], ["readiness"]):
            with self.subTest(service=service):
                self.assertEqual(self.ok("health", *service).stdout, "SERVING\n")
        env = dict(daemon_env(), DIFFUSIOND_ADDRESS=self.daemon.address)
        self.assertEqual(self.ok("health", address=False, env=env).stdout, "SERVING\n")

    def test_denoise_writes_latents(self):
        self.ok("load", DEMO_MODEL, "--id", "ctl-denoise")
        folder = work_dir()
        caption_path, out_path = folder / "ctl-caption.safetensors", folder / "ctl-latents.safetensors"
        safetensors_io.write(caption_path, {"cap_feats": caption()})
        out = self.ok("denoise", "ctl-denoise", "--conditioning", str(caption_path), "--shape",
                      ",".join(map(str, LATENT_SHAPE)), "--steps", "2", "--seed", "5", "--out", str(out_path))
        self.assertIn(f"wrote {out_path}:", out.stdout)
        self.assertIn("latents float32 [16, 32, 32]", out.stdout)
        self.assertIn("step 1/2 sigma", out.stderr)
        self.assertIn("step 2/2 sigma", out.stderr)
        latents = safetensors_io.read(out_path)["latents"]
        self.assertEqual(latents.shape, LATENT_SHAPE)
        self.assertTrue(all(math.isfinite(v) for v in latents.to_array()))
        # The CLI and the Python client agree on what seed 5 gives.
        with self.daemon.client() as c:
            same = c.denoise("ctl-denoise", conditioning(), shape=LATENT_SHAPE, steps=2, seed=5)
        self.assertEqual(same.data, latents.data)
        self.ok("unload", "ctl-denoise")

    def test_denoise_with_two_experts_names_the_expert_of_each_step(self):
        # Wan 2.2's two experts from the wan22-tiny fixture (transformer for the high-noise steps,
        # transformer_2 below the boundary), on a [16, F, H, W] video latent.
        fixture = fixture_folder("DIFFUSIOND_WAN22_FIXTURE", "wan22-tiny")
        high = fixture_model(fixture, "config.json", "transformer", "wan22-high")
        low = fixture_model(fixture, "config_2.json", "transformer_2", "wan22-low")
        text_dim = json.loads((fixture / "config.json").read_text())["text_dim"]
        folder = work_dir()
        text_path, out_path = folder / "ctl-wan-text.safetensors", folder / "ctl-wan-latents.safetensors"
        negative_path = folder / "ctl-wan-negative.safetensors"
        text, negative = caption(length=6, dim=text_dim, seed=3), caption(length=4, dim=text_dim, seed=4)
        safetensors_io.write(text_path, {"encoder_hidden_states": text})
        safetensors_io.write(negative_path, {"encoder_hidden_states": negative})
        shape = (16, 2, 8, 8)
        request = ["--conditioning", str(text_path), "--negative", str(negative_path), "--shape",
                   ",".join(map(str, shape)), "--steps", "4", "--seed", "9", "--guidance", "4", "--out",
                   str(out_path)]
        self.ok("load", high)
        try:
            out = self.ok("denoise", high, *request, "--expert_2", low, "--boundary_ratio", "0.875",
                          "--guidance_scale_2", "3")
            ran = re.findall(r"^step (\d+)/4 sigma \S+ \S+ s model (\S+)(?: \(.*\))?$", out.stderr, re.MULTILINE)
            self.assertEqual([int(step) for step, _ in ran], [1, 2, 3, 4], out.stderr)
            experts = [model for _, model in ran]
            # The high-noise expert runs the first steps (t >= 875), the second expert the rest (UniPC with
            # flow shift 3 over 4 steps: t = 1000, 900, 750, 501).
            switch = experts.index(low) if low in experts else len(experts)
            self.assertTrue(0 < switch < 4, experts)
            self.assertEqual(experts, [high] * switch + [low] * (4 - switch))
            latents = safetensors_io.read(out_path)["latents"]
            self.assertEqual(latents.shape, shape)
            self.assertTrue(all(math.isfinite(v) for v in latents.to_array()))
            # The CLI and the Python client send the same request.
            with self.daemon.client() as c:
                same = c.denoise(high, {"encoder_hidden_states": text}, negative={"encoder_hidden_states": negative},
                                 shape=shape, steps=4, seed=9, guidance_scale=4.0, expert_2=low, boundary_ratio=0.875,
                                 guidance_scale_2=3.0)
            self.assertEqual(same.data, latents.data)
            # One expert alone gives other latents.
            self.ok("denoise", high, *request)
            self.assertNotEqual(safetensors_io.read(out_path)["latents"].data, latents.data)
        finally:
            for model in (high, low):
                self.run_ctl("unload", model)
        out = self.run_ctl("denoise", high, *request, "--boundary_ratio", "0.875")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("need a second expert (--expert_2 ID)", out.stderr)
        out = self.run_ctl("denoise", high, *request, "--expert_2", low, "--boundary_ratio", "1.5")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--boundary_ratio: '1.5' is not in (0, 1]", out.stderr)

    def test_step_writes_outputs(self):
        self.ok("load", DEMO_MODEL, "--id", "ctl-step")
        folder = work_dir()
        in_path, out_path = folder / "ctl-step-in.safetensors", folder / "ctl-step-out.safetensors"
        safetensors_io.write(in_path, {"x": dc.WireTensor.zeros((1, 16, 1, 8, 8)),
                                       "t": dc.WireTensor.from_floats([0.5], (1,)), "cap_feats_0": caption()})
        out = self.ok("step", "ctl-step", "--in", str(in_path), "--out", str(out_path))
        self.assertIn("out float32 [1, 16, 1, 8, 8]", out.stdout)
        self.assertEqual(safetensors_io.read(out_path)["out"].shape, (1, 16, 1, 8, 8))
        self.ok("unload", "ctl-step")

    def test_errors_name_the_grpc_code(self):
        out = self.run_ctl("load", "../x")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("diffusionctl: PERMISSION_DENIED:", out.stderr)
        out = self.run_ctl("unload", "never-loaded")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("NOT_FOUND", out.stderr)
        out = self.run_ctl("load")
        self.assertEqual(out.returncode, 2, out.stderr)


if __name__ == "__main__":
    unittest.main()
