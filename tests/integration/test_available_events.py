"""ListAvailable and WatchEvents against a real daemon, through the Python
clients (blocking and asyncio) and diffusionctl.

ListAvailable: the demo model folder, a single file, a pipeline folder whose
text encoder and VAE are missing (listed with why; its transformer listed
on its own), a broken file listed with why, a text file not listed, a
symlink out of the models directory neither followed nor listed. WatchEvents: a snapshot first, then load progress, loaded, evicted
(with its reason), unloaded and rejected in the order another client caused
them; cancelling from the client (blocking and asyncio) ends the stream and
the watcher gauge falls back to 0; SIGTERM ends an open watch with
UNAVAILABLE and the daemon still exits 0 (the teardown).
"""

import asyncio
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import unittest

from daemon_fixture import DEMO_MODEL, DaemonTestCase, binary, daemon_env, metric, models_dir, parse_metrics, work_dir

import diffusiond_client as dc

SINGLE = "files/demo.safetensors"
PIPELINE = "pipeline"  # model_index.json and a transformer; no text encoder, no VAE
WAIT_S = 30


def available_models_dir():
    """models_dir() with a single file, a pipeline missing components, a broken file, a text file and a
    symlink that escapes; the files are hard links of the demo model's (no copies)."""
    models = models_dir()
    files = models / "files"
    if not (files / "demo.safetensors").exists():
        files.mkdir(exist_ok=True)
        demo = models / DEMO_MODEL
        transformer = models / PIPELINE / "transformer"
        transformer.mkdir(parents=True)
        for name in ("config.json", "diffusion_pytorch_model.safetensors"):
            os.link(demo / name, transformer / name)
        (models / PIPELINE / "model_index.json").write_text(json.dumps({
            "_class_name": "ZImagePipeline", "transformer": ["diffusers", "ZImageTransformer2DModel"],
            "text_encoder": ["transformers", "Qwen3Model"], "vae": ["diffusers", "AutoencoderKL"]}))
        os.link(demo / "diffusion_pytorch_model.safetensors", files / "partial")
        (files / "broken.safetensors").write_bytes(b"not a safetensors file")
        (files / "README.txt").write_text("not a checkpoint")
        outside = work_dir() / "outside.safetensors"
        shutil.copyfile(models / DEMO_MODEL / "diffusion_pytorch_model.safetensors", outside)
        os.symlink(outside, files / "escape.safetensors")
        os.rename(files / "partial", files / "demo.safetensors")
    return models


def watcher_gauge(daemon):
    return metric(parse_metrics(daemon.scrape()), "diffusiond_event_watchers")


def wait_until(test, condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            test.fail_with_log(f"timed out waiting for {what}")
        time.sleep(0.05)


class AvailableEventsTest(DaemonTestCase):
    """One daemon for both calls (each test leaves nothing loaded)."""

    daemon_options = {"ram_budget": "512MiB"}

    @classmethod
    def setUpClass(cls):
        available_models_dir()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        # The drain (SIGTERM) ends an open watch with UNAVAILABLE after its snapshot, and the daemon
        # still exits 0 (DaemonTestCase's teardown asserts it): checked here to spare a daemon.
        events = iter(cls.client.watch_events())
        if next(events).kind != "snapshot":
            raise AssertionError("a watch did not start with its snapshot")
        cls.daemon.terminate()
        try:
            for event in events:
                raise AssertionError(f"unexpected event during the drain: {event}")
            raise AssertionError("the watch ended without an error at the drain")
        except dc.UnavailableError as e:
            if "shutting down" not in str(e):
                raise
        super().tearDownClass()

    def test_lists_what_could_be_loaded(self):
        listing = self.client.list_available()
        self.assertFalse(listing.truncated, listing.truncated_reason)
        by_path = {m.path: m for m in listing.models}
        demo = by_path[DEMO_MODEL]
        self.assertTrue(demo.loadable, demo.error)
        self.assertEqual((demo.format, demo.architecture, demo.role), ("model-folder", "z-image", "denoiser"))
        self.assertEqual([s.fp8 for s in demo.sizes], ["off", "e4m3fn"])
        self.assertEqual(demo.compute_dtype, "float32")
        self.assertLess(demo.size("e4m3fn").final_bytes, demo.size("off").final_bytes)

        single = by_path[SINGLE]
        self.assertEqual((single.format, single.architecture), ("safetensors", "z-image"), single.error)

        pipeline = by_path[PIPELINE]
        self.assertEqual((pipeline.format, pipeline.role, pipeline.architecture), ("pipeline", "pipeline", "z-image"))
        self.assertEqual(pipeline.description, "ZImagePipeline")
        self.assertEqual(pipeline.components, ("text_encoder", "transformer", "vae"))
        self.assertFalse(pipeline.loadable)
        self.assertIn("component text_encoder is missing", pipeline.error)
        part = by_path[f"{PIPELINE}/transformer"]
        self.assertEqual((part.format, part.role, part.error), ("model-folder", "denoiser", ""))

        broken = by_path["files/broken.safetensors"]
        self.assertFalse(broken.loadable)
        self.assertEqual(broken.sizes, ())
        self.assertNotIn("files/README.txt", by_path)
        self.assertFalse([p for p in by_path if "escape" in p], "a symlink out of the models dir was listed")

        # What it lists loads, at the size it said.
        info = self.client.load_model(SINGLE, model_id="from-listing", fp8="off")
        self.assertEqual(info.architecture, "z-image")
        self.assertLessEqual(info.ram_bytes, single.size("off").reservation_bytes)
        self.client.unload_model("from-listing")

        # The second listing comes from the cache and says the same.
        self.assertEqual(self.client.list_available().models, listing.models)

    def test_diffusionctl_available(self):
        ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl")
        argv = [ctl, "--timeout", "60s", "--address", self.daemon.address, "available"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=daemon_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        header = out.stdout.splitlines()[0]
        self.assertRegex(header, r"PATH\s+FORMAT\s+ARCHITECTURE\s+ROLE\s+FILES\s+RAM FP8 off\s+RAM FP8 e4m3fn")
        self.assertRegex(out.stdout, rf"\n{DEMO_MODEL}\s+model-folder\s+z-image\s+denoiser")
        self.assertNotIn("broken", out.stdout)
        every = subprocess.run(argv + ["--all"], capture_output=True, text=True, timeout=120, env=daemon_env())
        self.assertIn("files/broken.safetensors", every.stdout)
        listed = json.loads(subprocess.run([ctl, "--json", "--address", self.daemon.address, "available"],
                                           capture_output=True, text=True, timeout=120, env=daemon_env()).stdout)
        self.assertIn(DEMO_MODEL, [m["path"] for m in listed["models"]])


    def test_sees_what_another_client_does_in_order(self):
        events = queue.Queue()
        watch = self.client.watch_events()

        def pump():
            try:
                for event in watch:
                    events.put(event)
            except dc.DiffusiondError as e:
                events.put(e)
            events.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        first = events.get(timeout=WAIT_S)
        self.assertEqual(first.kind, "snapshot")
        self.assertEqual(first.events_lost, 0)
        wait_until(self, lambda: watcher_gauge(self.daemon) == 1, "the watcher gauge to count the watch")

        with self.daemon.client() as other:
            other.load_model(DEMO_MODEL, model_id="watched")
            capacity = other.stats().budget("cpu").capacity_bytes
            other.make_room(capacity)  # evicts it
            other.load_model(DEMO_MODEL, model_id="watched")
            other.unload_model("watched")
            with self.assertRaises(dc.ResourceExhaustedError):
                other.make_room(2 * capacity)

        seen = []
        while not seen or seen[-1].kind != "rejected":
            event = events.get(timeout=WAIT_S)
            self.assertIsInstance(event, dc.CacheEvent, f"the watch ended early: {event}")
            seen.append(event)
        kinds = [e.kind for e in seen if e.kind != "load_progress"]
        self.assertEqual(kinds, ["loaded", "evicted", "loaded", "unloaded", "rejected"], seen)
        progress = [e for e in seen[:seen.index(next(e for e in seen if e.kind == "loaded"))]
                    if e.kind == "load_progress"]
        self.assertTrue(progress, "no load progress before the first loaded event")
        self.assertEqual(progress[0].model_id, "watched")
        self.assertEqual(progress[-1].progress.total_tensors, progress[0].progress.total_tensors)
        loaded, evicted, _, unloaded, rejected = [e for e in seen if e.kind != "load_progress"]
        self.assertEqual((loaded.model_id, loaded.tier), ("watched", "ram"))
        self.assertGreater(loaded.ram_bytes, 0)
        self.assertEqual(evicted.model_id, "watched")
        self.assertIn("least recently used", evicted.reason)
        self.assertEqual(evicted.ram_bytes, loaded.ram_bytes)
        self.assertEqual(unloaded.model_id, "watched")
        self.assertEqual(rejected.code, "RESOURCE_EXHAUSTED")
        self.assertIn("cannot make room", rejected.message)

        # A new watch starts from what is resident now.
        with self.daemon.client() as other:
            other.load_model(DEMO_MODEL, model_id="resident")
            with other.watch_events(progress=False) as second:
                snapshot = next(iter(second))
            other.unload_model("resident")
        self.assertEqual(snapshot.kind, "snapshot")
        self.assertEqual([m.model_id for m in snapshot.models], ["resident"])

        # Cancelling from the client ends the iteration quietly.
        watch.cancel()
        reader.join(WAIT_S)
        self.assertFalse(reader.is_alive())
        tail = []
        while not events.empty():
            tail.append(events.get())
        self.assertEqual(tail[-1:], [None], tail)
        self.assertFalse([e for e in tail if isinstance(e, dc.DiffusiondError)], tail)
        wait_until(self, lambda: watcher_gauge(self.daemon) == 0, "the watcher gauge to fall back to 0")

    def test_async_watch_is_cancelled_with_its_task(self):
        async def run():
            async with dc.AsyncClient(self.daemon.address) as client:
                got = asyncio.Queue()

                async def watch():
                    async for event in client.watch_events():
                        await got.put(event)

                task = asyncio.create_task(watch())
                first = await asyncio.wait_for(got.get(), WAIT_S)
                await client.load_model(DEMO_MODEL, model_id="async-watched")
                while True:
                    event = await asyncio.wait_for(got.get(), WAIT_S)
                    if event.kind == "loaded":
                        break
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                await client.unload_model("async-watched")
                return first, event

        first, loaded = asyncio.run(run())
        self.assertEqual(first.kind, "snapshot")
        self.assertEqual(loaded.model_id, "async-watched")
        wait_until(self, lambda: watcher_gauge(self.daemon) == 0, "the watcher gauge to fall back to 0")

    def test_diffusionctl_events_count(self):
        ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl")
        out = subprocess.run([ctl, "--json", "--address", self.daemon.address, "events", "--count", "1"],
                             capture_output=True, text=True, timeout=120, env=daemon_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 1, out.stdout)
        self.assertEqual(json.loads(lines[0])["kind"], "KIND_SNAPSHOT")
        # --timeout is how long to watch: it ends with status 0.
        out = subprocess.run([ctl, "--timeout", "0.5s", "--address", self.daemon.address, "events"],
                             capture_output=True, text=True, timeout=120, env=daemon_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"^snapshot: \d+ models? resident")


if __name__ == "__main__":
    unittest.main()
