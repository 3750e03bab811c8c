"""ModelService and CacheService against a real daemon: loads with progress,
cache hits, unload, leases, confinement to the models directory, and a load
that does not fit the RAM budget, and a request above --max_message_bytes."""

import os
import shutil
import unittest

import grpc

import diffusiond_client as dc
from daemon_fixture import DEMO_MODEL, Daemon, DaemonTestCase, models_dir, work_dir


class ModelServiceTest(DaemonTestCase):
    daemon_options = {"ram_budget": "512MiB"}

    def test_load_streams_progress_then_fp8_model_info(self):
        progress = []
        info = self.client.load_model(DEMO_MODEL, model_id="progress", on_progress=progress.append)
        self.assertTrue(progress, "no progress event before the ModelInfo")
        read = [p.bytes_read for p in progress]
        self.assertEqual(read, sorted(read), f"bytes_read went backwards: {read}")
        total = progress[-1].total_bytes
        self.assertGreater(total, 0)
        self.assertTrue(all(p.total_bytes == total for p in progress))
        self.assertEqual(read[-1], total, f"the last event read {read[-1]} of {total} bytes")
        self.assertEqual(progress[-1].tensors_done, progress[-1].total_tensors)
        self.assertEqual(info.model_id, "progress")
        self.assertEqual(info.architecture, "z-image")
        self.assertEqual(info.compute_dtype, "float32")
        # The fixture pins it, and the ready line says so.
        self.assertIn("compute_dtype=float32 compute_dtype_chosen_by=--compute_dtype", self.daemon.output())
        self.assertGreater(info.fp8_tensors, 0)
        self.assertGreater(info.tensors, info.fp8_tensors, "biases and norms stay unconverted")
        self.assertEqual(info.tensors, progress[-1].total_tensors)
        self.assertGreater(info.ram_bytes, 0)
        self.assertIn("progress", [m.model_id for m in self.client.list_models()])

    def test_second_load_answers_from_the_cache(self):
        first = self.client.load_model(DEMO_MODEL, model_id="twice")
        before = self.client.stats()
        progress = []
        second = self.client.load_model(DEMO_MODEL, model_id="twice", on_progress=progress.append)
        after = self.client.stats()
        self.assertEqual(progress, [], "a cached model answered with progress events")
        self.assertEqual((second.model_id, second.tensors, second.ram_bytes),
                         (first.model_id, first.tensors, first.ram_bytes))
        self.assertEqual(after.misses, before.misses, "the second load ran a loader")
        self.assertEqual(after.budget("cpu").committed_bytes, before.budget("cpu").committed_bytes)

    def test_same_id_with_other_options_is_refused(self):
        self.client.load_model(DEMO_MODEL, model_id="options")
        with self.assertRaises(dc.FailedPreconditionError) as cm:
            self.client.load_model(DEMO_MODEL, model_id="options", fp8="off")
        self.assertIn("options", cm.exception.details)

    def test_fp8_off_keeps_every_tensor(self):
        info = self.client.load_model(DEMO_MODEL, model_id="no-fp8", fp8="off")
        fp8 = self.client.load_model(DEMO_MODEL, model_id="e4m3fn", fp8="e4m3fn")
        self.assertEqual(info.fp8_tensors, 0)
        self.assertGreater(info.ram_bytes, fp8.ram_bytes, "FP8 storage did not save memory")
        self.client.unload_model("no-fp8")
        self.client.unload_model("e4m3fn")

    def test_unload_frees_bytes_and_forgets_the_model(self):
        info = self.client.load_model(DEMO_MODEL, model_id="to-unload")
        committed = self.client.stats().budget("cpu").committed_bytes
        freed = self.client.unload_model("to-unload")
        self.assertGreater(freed.ram_bytes_freed, 0)
        self.assertEqual(freed.ram_bytes_freed, info.ram_bytes)
        self.assertNotIn("to-unload", [m.model_id for m in self.client.list_models()])
        self.assertEqual(self.client.stats().budget("cpu").committed_bytes, committed - info.ram_bytes)
        with self.assertRaises(dc.NotFoundError):
            self.client.unload_model("to-unload")

    def test_lease_pins_a_model_until_released(self):
        self.client.load_model(DEMO_MODEL, model_id="leased")
        lease = self.client.acquire_lease("leased", ttl_seconds=60)
        pinned = {m.model_id: m for m in self.client.list_models()}["leased"]
        self.assertGreaterEqual(pinned.pins, 1)
        with self.assertRaises(dc.FailedPreconditionError):
            self.client.unload_model("leased", wait=False)
        self.client.renew_lease(lease, ttl_seconds=60)
        with self.assertRaises(dc.NotFoundError):
            self.client.renew_lease(lease + 1000, ttl_seconds=60)
        self.client.release_lease(lease)
        self.assertGreater(self.client.unload_model("leased", wait=False).ram_bytes_freed, 0)

    def test_unknown_model(self):
        with self.assertRaises(dc.NotFoundError):
            self.client.acquire_lease("never-loaded")
        with self.assertRaises(dc.NotFoundError):
            self.client.load_model("no-such-model")

    def test_paths_outside_the_models_dir_are_denied(self):
        # Real models lie behind each escape, so only confinement refuses them.
        root = work_dir()
        outside = root / "x"
        if not outside.exists():
            shutil.copytree(self.models_dir / DEMO_MODEL, outside)
        link = self.models_dir / "escape"
        if not link.is_symlink():
            os.symlink(outside, link)
        for path in ("../x", str(outside), "/etc", "/etc/passwd", "escape", "demo/../../x"):
            with self.subTest(path=path):
                with self.assertRaises(dc.PermissionDeniedError) as cm:
                    self.client.load_model(path, model_id=f"denied-{path}")
                self.assertEqual(cm.exception.code, grpc.StatusCode.PERMISSION_DENIED)
        self.assertFalse([m for m in self.client.list_models() if m.model_id.startswith("denied-")])

    def test_absolute_path_inside_the_models_dir_loads(self):
        info = self.client.load_model(str(self.models_dir / DEMO_MODEL), model_id="absolute")
        self.assertGreater(info.fp8_tensors, 0)
        self.client.unload_model("absolute")


class BudgetTest(unittest.TestCase):
    """A daemon whose 1 MiB RAM budget is far below the demo model's size."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(models_dir(), ram_budget="1MiB").start()
        cls.addClassCleanup(cls.daemon.kill)
        cls.client = cls.daemon.client()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.assert_stops_cleanly()

    def test_load_that_cannot_fit_is_refused_and_changes_nothing(self):
        before = self.client.stats()
        with self.assertRaises(dc.ResourceExhaustedError) as cm:
            self.client.load_model(DEMO_MODEL)
        self.assertEqual(cm.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("needed", cm.exception.details)
        after = self.client.stats()
        self.assertEqual(self.client.list_models(), [])
        self.assertEqual(after.models, before.models)
        self.assertEqual(after.budget("cpu").capacity_bytes, 1 << 20)
        for field in ("reserved_bytes", "committed_bytes"):
            self.assertEqual(getattr(after.budget("cpu"), field), 0, field)
        self.assertEqual(after.rejections, before.rejections + 1)

    def test_make_room_beyond_the_budget_is_refused(self):
        with self.assertRaisesRegex(dc.ResourceExhaustedError, "needed"):
            self.client.make_room(2 << 20)
        self.assertEqual(self.client.make_room(1024).evicted_model_ids, ())


class MessageLimitTest(DaemonTestCase):
    """A daemon with --max_message_bytes 64KiB: a larger request is refused by
    gRPC before any of it is decoded, and the daemon serves on."""

    daemon_options = {"extra_args": ("--max_message_bytes", "64KiB")}

    def test_a_request_above_the_limit_is_refused_and_the_daemon_serves_on(self):
        big = dc.WireTensor.zeros((32 * 1024,))  # 128 KiB of float32
        with self.assertRaises(dc.ResourceExhaustedError) as cm:
            self.client.step("never-loaded", {"x": big})
        self.assertEqual(cm.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("larger than max", cm.exception.details)
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("readiness"), "SERVING")
        # Under the limit, the same call reaches the engine.
        with self.assertRaises(dc.NotFoundError):
            self.client.step("never-loaded", {"x": dc.WireTensor.zeros((16,))})


if __name__ == "__main__":
    unittest.main()
