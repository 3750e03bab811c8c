"""DenoiseService against a real daemon: Denoise with per-step events,
cancellation, concurrent clients, Step, and malformed tensors."""

import math
import threading
import time
import unittest

import grpc

import diffusiond_client as dc
from daemon_fixture import (DEMO_MODEL, LATENT_SHAPE, DaemonTestCase, assert_finite_latents, caption, conditioning,
                            metric, parse_metrics)
from diffusiond_client import _stubs

MODEL = "denoise-demo"
_pb = _stubs.tensor_pb2




class DenoiseTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.client.load_model(DEMO_MODEL, model_id=MODEL)

    def assert_serving(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("readiness"), "SERVING")

    def test_denoise_streams_each_step_then_the_latents(self):
        steps = []
        latents = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, seed=3, steps=3, on_step=steps.append)
        self.assertEqual([s.step for s in steps], [1, 2, 3])
        self.assertTrue(all(s.steps == 3 for s in steps), steps)
        sigmas = [s.sigma for s in steps]
        self.assertEqual(sigmas, sorted(sigmas, reverse=True), "sigmas must decrease")
        self.assertTrue(all(s.step_seconds > 0 for s in steps), steps)
        assert_finite_latents(self, latents)

    def test_a_second_expert_runs_the_steps_below_the_boundary(self):
        steps = []
        latents = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, seed=3, sigmas=[1.0, 0.75, 0.5, 0.25],
                                      on_step=steps.append, expert_2=DEMO_MODEL, boundary_ratio=0.6)
        try:
            self.assertEqual([s.model_id for s in steps], [MODEL, MODEL, DEMO_MODEL, DEMO_MODEL])
            assert_finite_latents(self, latents)
            with self.assertRaises(dc.InvalidArgumentError):
                self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, steps=2, boundary_ratio=0.5)
        finally:
            self.client.unload_model(DEMO_MODEL)

    def test_same_seed_gives_the_same_latents(self):
        a = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, seed=11, steps=2)
        b = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, seed=11, steps=2)
        c = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, seed=12, steps=2)
        self.assertEqual(a.data, b.data)
        self.assertNotEqual(a.data, c.data)

    def test_initial_latents_guidance_and_sigmas(self):
        start = dc.WireTensor.from_floats([0.1] * math.prod(LATENT_SHAPE), LATENT_SHAPE)
        steps = []
        latents = self.client.denoise(MODEL, conditioning(), negative=conditioning(length=4, seed=2), latents=start,
                                      guidance_scale=3.0, sigmas=[1.0, 0.5], on_step=steps.append)
        self.assertEqual([(s.step, s.steps) for s in steps], [(1, 2), (2, 2)])
        self.assertAlmostEqual(steps[0].sigma, 1.0, places=5)
        assert_finite_latents(self, latents)

    def test_cancel_mid_way_leaves_the_daemon_healthy(self):
        call = self.client.denoise_stream(MODEL, conditioning(), shape=LATENT_SHAPE, steps=1000)
        events = iter(call)
        first = next(events)
        self.assertEqual((first.step, first.steps), (1, 1000))
        self.assertTrue(call.cancel())
        with self.assertRaises(dc.CancelledError):
            for event in events:
                self.assertIsInstance(event, dc.DenoiseStep, "a cancelled denoise returned latents")
        self.assertEqual(call.code(), grpc.StatusCode.CANCELLED)
        self.assert_serving()
        latents = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, steps=2)
        assert_finite_latents(self, latents)
        self.assertEqual([m.pins for m in self.client.list_models() if m.model_id == MODEL], [0])

    def test_two_clients_denoise_at_once(self):
        results, errors = {}, []

        def run(seed):
            try:
                with self.daemon.client() as c:
                    results[seed] = c.denoise(MODEL, conditioning(seed=seed), shape=LATENT_SHAPE, seed=seed, steps=3)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(seed,)) for seed in (21, 22)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(errors, [])
        self.assertEqual(sorted(results), [21, 22])
        for latents in results.values():
            assert_finite_latents(self, latents)
        self.assertNotEqual(results[21].data, results[22].data)

    def test_step_runs_one_forward(self):
        x = dc.WireTensor.from_floats([0.5] * (16 * 8 * 8), (1, 16, 1, 8, 8))
        t = dc.WireTensor.from_floats([0.5], (1,))
        out = self.client.step(MODEL, {"x": x, "t": t, "cap_feats_0": caption()})
        self.assertEqual(list(out), ["out"])
        self.assertEqual(out["out"].shape, (1, 16, 1, 8, 8))
        self.assertTrue(all(math.isfinite(v) for v in out["out"].to_array()))

    def test_unknown_model(self):
        with self.assertRaises(dc.NotFoundError):
            self.client.denoise("never-loaded", conditioning(), shape=LATENT_SHAPE, steps=1)

    def test_malformed_step_tensors_are_invalid_arguments(self):
        good_x = dc.WireTensor.zeros((1, 16, 1, 8, 8)).to_proto()
        t = dc.WireTensor.from_floats([0.5], (1,))
        cases = {
            "unknown dtype enum": _pb.Tensor(dtype=42, shape=good_x.shape, data=good_x.data),
            "unspecified dtype": _pb.Tensor(dtype=_pb.DTYPE_UNSPECIFIED, shape=good_x.shape, data=good_x.data),
            "byte count mismatch": _pb.Tensor(dtype=_pb.DTYPE_FLOAT32, shape=good_x.shape, data=good_x.data[:-4]),
            "negative dimension": _pb.Tensor(dtype=_pb.DTYPE_FLOAT32, shape=[-1, 16], data=b""),
            "wrong rank": dc.WireTensor.zeros((16, 8, 8)).to_proto(),
            "odd height": dc.WireTensor.zeros((1, 16, 1, 7, 8)).to_proto(),
            "wrong channels": dc.WireTensor.zeros((1, 3, 1, 8, 8)).to_proto(),
            "integer x": dc.WireTensor.zeros((1, 16, 1, 8, 8), "int32").to_proto(),
        }
        for name, x in cases.items():
            with self.subTest(name):
                with self.assertRaises(dc.InvalidArgumentError) as cm:
                    self.client.step(MODEL, {"x": x, "t": t, "cap_feats_0": caption()})
                self.assertTrue(cm.exception.details)
        with self.assertRaisesRegex(dc.InvalidArgumentError, "cap_feats_0"):
            self.client.step(MODEL, {"x": good_x, "t": t})
        with self.assertRaises(dc.InvalidArgumentError):
            self.client.step(MODEL, {"x": good_x, "t": t, "cap_feats_0": caption(dim=64)})
        self.assert_serving()

    def test_malformed_denoise_tensors_are_invalid_arguments(self):
        cap = caption().to_proto()
        good = {"cap_feats": cap}
        cases = {
            "caption dtype enum": dict(conditioning={"cap_feats": _pb.Tensor(dtype=42, shape=cap.shape, data=cap.data)},
                                       shape=LATENT_SHAPE),
            "caption byte count": dict(conditioning={"cap_feats": _pb.Tensor(dtype=_pb.DTYPE_FLOAT32, shape=cap.shape,
                                                                             data=cap.data + b"\0\0\0\0")},
                                       shape=LATENT_SHAPE),
            "caption feature dim": dict(conditioning=conditioning(dim=64), shape=LATENT_SHAPE),
            "caption rank": dict(conditioning={"cap_feats": dc.WireTensor.zeros((128,))}, shape=LATENT_SHAPE),
            "caption missing": dict(conditioning={}, shape=LATENT_SHAPE),
            "unknown conditioning": dict(conditioning={**good, "pooled_projections": cap}, shape=LATENT_SHAPE),
            "unknown scalar": dict(conditioning={**good, "guidance": 3.5}, shape=LATENT_SHAPE),
            "negative dtype enum": dict(conditioning=good,
                                        negative={"cap_feats": _pb.Tensor(dtype=99, shape=cap.shape, data=cap.data)},
                                        shape=LATENT_SHAPE),
            "latents byte count": dict(conditioning=good, latents=_pb.Tensor(dtype=_pb.DTYPE_FLOAT32, shape=[16, 8, 8],
                                                                            data=bytes(4 * 16 * 8 * 8 - 1))),
            "latents rank": dict(conditioning=good, latents=dc.WireTensor.zeros((16, 8))),
            "latents channels": dict(conditioning=good, latents=dc.WireTensor.zeros((4, 8, 8))),
            "latent_shape odd": dict(conditioning=good, shape=(16, 31, 32)),
            "latent_shape rank": dict(conditioning=good, shape=(16, 32)),
            "guidance without negative": dict(conditioning=good, shape=LATENT_SHAPE, guidance_scale=4.0),
        }
        for name, kwargs in cases.items():
            with self.subTest(name):
                with self.assertRaises(dc.InvalidArgumentError):
                    self.client.denoise(MODEL, steps=1, **kwargs)
        self.assert_serving()


class FullQueueTest(DaemonTestCase):
    """One denoise slot and no waiting room: a second call is refused at once."""

    daemon_options = {"ram_budget": "512MiB", "extra_args": ("--max_concurrent_denoise", "1",
                                                             "--max_queued_denoise", "0")}

    def test_a_full_queue_answers_resource_exhausted(self):
        self.client.load_model(DEMO_MODEL, model_id=MODEL)
        running = self.client.denoise_stream(MODEL, conditioning(), shape=LATENT_SHAPE, steps=1000)
        self.assertIsInstance(next(iter(running)), dc.DenoiseStep)  # it holds the only slot
        with self.assertRaises(dc.ResourceExhaustedError) as cm:
            self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, steps=1)
        self.assertIn("queue is full", cm.exception.details)
        samples = parse_metrics(self.daemon.scrape())
        self.assertEqual(metric(samples, "diffusiond_queue_rejections_total", queue="compute"), 1.0)
        running.cancel()
        # The slot frees once the loop sees the cancel (within one step).
        for _ in range(100):
            try:
                latents = self.client.denoise(MODEL, conditioning(), shape=LATENT_SHAPE, steps=1)
                break
            except dc.ResourceExhaustedError:
                time.sleep(0.1)
        else:
            self.fail("the slot never freed after the running denoise was cancelled")
        assert_finite_latents(self, latents)


if __name__ == "__main__":
    unittest.main()
