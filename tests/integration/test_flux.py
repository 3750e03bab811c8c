"""FLUX.1 served over gRPC by a real daemon: ModelInfo names its conditioning,
Step takes upstream's inputs, Denoise takes generic conditioning with and
without the distilled-guidance scalar (and refuses bad names), diffusionctl
and the Python client drive it, and it is served beside a Z-Image model.

The FLUX model is the FLUX demo model (``diffusiond-demo --arch flux
--generate_only``), generated once per process next to the Z-Image demo
model. Every size is read from ModelInfo.conditioning, none is assumed.
"""

import math
import random
import subprocess
import threading
import unittest

import safetensors_io
from daemon_fixture import (DEMO_MODEL, DaemonTestCase, binary, conditioning, daemon_env, models_dir,
                            work_dir)

import diffusiond_client as dc

FLUX_MODEL = "flux-demo"  # the FLUX model's folder inside the models directory
MODEL = "flux"
LATENT_SHAPE = (16, 16, 16)  # unpacked; 64 packed tokens, so a step takes milliseconds
_flux_lock = threading.Lock()


def flux_models_dir():
    """Returns the models directory, with the FLUX demo model generated on first use."""
    models = models_dir()
    folder = models / FLUX_MODEL
    with _flux_lock:
        if not (folder / "config.json").exists():
            demo_bin = binary("DIFFUSIOND_DEMO_BIN", "diffusiond-demo")
            out = subprocess.run([demo_bin, "--arch", "flux", "--model_dir", str(folder), "--generate_only"],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
            if out.returncode != 0 or not (folder / "config.json").exists():
                raise AssertionError(f"{demo_bin} --arch flux --model_dir {folder} --generate_only exited "
                                     f"{out.returncode} without a model:\n{out.stdout}\n{out.stderr}")
    return models


def gauss(shape, seed):
    rng = random.Random(seed)
    return dc.WireTensor.from_floats([rng.gauss(0, 1) for _ in range(math.prod(shape))], shape)


def assert_finite(test, tensor, shape):
    test.assertEqual(tensor.dtype, "float32")
    test.assertEqual(tensor.shape, tuple(shape))
    values = tensor.to_array()
    test.assertTrue(all(math.isfinite(v) for v in values), "non-finite values")
    test.assertGreater(max(abs(v) for v in values), 0.0, "all zero")


class FluxTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    @classmethod
    def setUpClass(cls):
        flux_models_dir()  # before the daemon starts, which needs only the folder to exist at load
        super().setUpClass()
        cls.info = cls.client.load_model(FLUX_MODEL, model_id=MODEL)
        inputs = {c.name: c for c in cls.info.conditioning}
        cls.text_dim = inputs["encoder_hidden_states"].shape[-1]
        cls.pooled_dim = inputs["pooled_projections"].shape[-1]

    def cond(self, tokens=7, seed=1, **scalars):
        return {"encoder_hidden_states": gauss((tokens, self.text_dim), seed),
                "pooled_projections": gauss((self.pooled_dim,), seed + 100), **scalars}

    def test_model_info_lists_the_conditioning_and_role(self):
        info = self.info
        self.assertEqual(info.architecture, "flux")
        self.assertEqual(info.role, "denoiser")
        self.assertTrue(info.supports_negative)
        self.assertGreater(info.fp8_tensors, 0)
        by_name = {c.name: c for c in info.conditioning}
        self.assertEqual(sorted(by_name), ["encoder_hidden_states", "guidance", "pooled_projections"])
        text, pooled, guidance = by_name["encoder_hidden_states"], by_name["pooled_projections"], by_name["guidance"]
        self.assertEqual((text.scalar, text.required, len(text.shape), text.shape[0]), (False, True, 2, -1))
        self.assertGreater(text.shape[1], 0)
        self.assertEqual((pooled.scalar, pooled.required, len(pooled.shape)), (False, True, 1))
        self.assertEqual((guidance.scalar, guidance.required, guidance.default_value), (True, False, 3.5))
        self.assertIn("T5", text.meaning)
        listed = {m.model_id: m for m in self.client.list_models()}
        self.assertEqual(listed[MODEL].conditioning, info.conditioning)

    def step_inputs(self, h=4, w=4, tokens=5, **drop_or_add):
        """Upstream's call for a packed h x w grid: ids as FluxPipeline builds them."""
        s = h * w
        img_ids = [v for i in range(h) for j in range(w) for v in (0.0, float(i), float(j))]
        inputs = {
            "hidden_states": gauss((1, s, 64), 3),
            "encoder_hidden_states": gauss((1, tokens, self.text_dim), 4),
            "pooled_projections": gauss((1, self.pooled_dim), 5),
            "timestep": dc.WireTensor.from_floats([0.75], (1,)),
            "img_ids": dc.WireTensor.from_floats(img_ids, (s, 3)),
            "txt_ids": dc.WireTensor.zeros((tokens, 3)),
            "guidance": dc.WireTensor.from_floats([3.5], (1,)),
        }
        for name, value in drop_or_add.items():
            if value is None:
                del inputs[name]
            else:
                inputs[name] = value
        return inputs

    def test_step_takes_upstreams_input_names(self):
        out = self.client.step(MODEL, self.step_inputs())
        self.assertEqual(list(out), ["out"])
        assert_finite(self, out["out"], (1, 16, 64))

    def test_step_names_a_missing_or_unknown_input(self):
        with self.assertRaises(dc.InvalidArgumentError) as cm:
            self.client.step(MODEL, self.step_inputs(guidance=None))
        self.assertIn('missing input "guidance"', cm.exception.details)
        with self.assertRaises(dc.InvalidArgumentError) as cm:
            self.client.step(MODEL, self.step_inputs(x=dc.WireTensor.zeros((1,))))
        self.assertIn('unexpected input "x"', cm.exception.details)
        with self.assertRaises(dc.InvalidArgumentError) as cm:
            self.client.step(MODEL, self.step_inputs(img_ids=dc.WireTensor.zeros((15, 3))))
        self.assertIn('"img_ids"', cm.exception.details)

    def test_denoise_with_and_without_the_guidance_scalar(self):
        steps = []
        default = self.client.denoise(MODEL, self.cond(), shape=LATENT_SHAPE, seed=3, steps=3, on_step=steps.append)
        self.assertEqual([s.step for s in steps], [1, 2, 3])
        sigmas = [s.sigma for s in steps]
        self.assertEqual(sigmas, sorted(sigmas, reverse=True))
        assert_finite(self, default, LATENT_SHAPE)
        # Absent, the scalar takes its default (3.5): the same latents.
        explicit = self.client.denoise(MODEL, self.cond(guidance=3.5), shape=LATENT_SHAPE, seed=3, steps=3)
        self.assertEqual(default.data, explicit.data)
        stronger = self.client.denoise(MODEL, self.cond(guidance=5.0), shape=LATENT_SHAPE, seed=3, steps=3)
        assert_finite(self, stronger, LATENT_SHAPE)
        self.assertNotEqual(default.data, stronger.data)

    def test_true_cfg_with_a_negative(self):
        latents = self.client.denoise(MODEL, self.cond(), negative=self.cond(tokens=3, seed=9), guidance_scale=2.0,
                                      shape=LATENT_SHAPE, seed=4, steps=2)
        assert_finite(self, latents, LATENT_SHAPE)

    def test_bad_conditioning_is_an_invalid_argument_naming_it(self):
        good = self.cond()
        cases = {
            "missing tensor": ({k: v for k, v in good.items() if k != "pooled_projections"},
                               'missing tensor "pooled_projections"'),
            "unknown tensor": ({**good, "cap_feats": gauss((4, 8), 2)}, 'unexpected tensor "cap_feats"'),
            "unknown scalar": ({**good, "cfg": 2.0}, 'unexpected scalar "cfg"'),
            "wrong width": ({**good, "encoder_hidden_states": gauss((4, self.text_dim + 1), 2)},
                            '"encoder_hidden_states" is a float [4, '),
            "guidance as a tensor": ({**good, "guidance": gauss((1,), 2)}, 'unexpected tensor "guidance"'),
        }
        for name, (cond, expected) in cases.items():
            with self.subTest(name):
                with self.assertRaises(dc.InvalidArgumentError) as cm:
                    self.client.denoise(MODEL, cond, shape=LATENT_SHAPE, steps=1)
                self.assertIn(expected, cm.exception.details)
        with self.assertRaises(dc.InvalidArgumentError):
            self.client.denoise(MODEL, good, shape=(16, 15, 16), steps=1)  # odd side: no 2x2 packing
        self.assertEqual(self.client.health("readiness"), "SERVING")

    def test_served_beside_a_z_image_model(self):
        self.client.load_model(DEMO_MODEL, model_id="z-image-beside")
        listed = {m.model_id: m for m in self.client.list_models()}
        self.assertEqual(listed[MODEL].architecture, "flux")
        self.assertEqual(listed["z-image-beside"].architecture, "z-image")
        results, errors = {}, []

        def run(model_id, cond):
            try:
                with self.daemon.client() as c:
                    results[model_id] = c.denoise(model_id, cond, shape=LATENT_SHAPE, seed=8, steps=2)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(MODEL, self.cond())),
                   threading.Thread(target=run, args=("z-image-beside", conditioning()))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(errors, [])
        for latents in results.values():
            assert_finite(self, latents, LATENT_SHAPE)
        # Each refuses the other's conditioning.
        with self.assertRaises(dc.InvalidArgumentError):
            self.client.denoise("z-image-beside", self.cond(), shape=LATENT_SHAPE, steps=1)
        with self.assertRaises(dc.InvalidArgumentError):
            self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, steps=1)
        self.client.unload_model("z-image-beside")


class FluxDiffusionctlTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    @classmethod
    def setUpClass(cls):
        cls.ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl")  # skips the class when not built
        flux_models_dir()
        super().setUpClass()

    def ok(self, *args):
        argv = [self.ctl, "--timeout", "120s", "--address", self.daemon.address, *args]
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                             env=daemon_env())
        self.assertEqual(out.returncode, 0, f"{' '.join(argv)} exited {out.returncode}\n{out.stdout}\n{out.stderr}")
        return out

    def test_load_and_denoise_with_the_guidance_scalar(self):
        out = self.ok("load", FLUX_MODEL, "--id", "ctl-flux")
        self.assertRegex(out.stdout, r"architecture\s+flux \(denoiser\)")
        self.assertIn("encoder_hidden_states", out.stdout)
        self.assertIn("guidance", out.stdout)
        info = {m.model_id: m for m in self.client.list_models()}["ctl-flux"]
        dims = {c.name: c.shape[-1] for c in info.conditioning if not c.scalar}
        cond = {"encoder_hidden_states": gauss((6, dims["encoder_hidden_states"]), 1),
                "pooled_projections": gauss((dims["pooled_projections"],), 2)}
        folder = work_dir()
        cond_path, out_path = folder / "ctl-flux-cond.safetensors", folder / "ctl-flux-latents.safetensors"
        safetensors_io.write(cond_path, cond)
        out = self.ok("denoise", "ctl-flux", "--conditioning", str(cond_path), "--scalars", "guidance=4.5",
                      "--shape", ",".join(map(str, LATENT_SHAPE)), "--steps", "2", "--seed", "5", "--out",
                      str(out_path))
        self.assertIn(f"wrote {out_path}:", out.stdout)
        self.assertIn("step 2/2 sigma", out.stderr)
        latents = safetensors_io.read(out_path)["latents"]
        assert_finite(self, latents, LATENT_SHAPE)
        # The CLI and the Python client send the same request.
        same = self.client.denoise("ctl-flux", {**cond, "guidance": 4.5}, shape=LATENT_SHAPE, steps=2, seed=5)
        self.assertEqual(same.data, latents.data)
        self.assertRegex(self.ok("ls").stdout, r"ctl-flux\s+flux\s")
        self.ok("unload", "ctl-flux")


if __name__ == "__main__":
    unittest.main()
