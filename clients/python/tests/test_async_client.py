"""Tests of AsyncClient against the in-process fake daemon of test_client.py:
the same calls as Client, and cancellation from asyncio.

Run: PYTHONPATH=clients/python python3 clients/python/tests/test_async_client.py
"""

import asyncio
import unittest
from concurrent import futures

import grpc

import diffusiond_client as dc
from diffusiond_client import _stubs
from test_client import FakeCache, FakeDenoise, FakeHealth, FakeModels, FakePipeline

_ms = _stubs.model_service_pb2

CAPTION = {"cap_feats": dc.WireTensor.zeros((1, 128))}


def serve(*servicers):
    """Starts a server with every fake service; returns (server, address)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    models, denoiser, pipeline = servicers
    _stubs.model_service_pb2_grpc.add_ModelServiceServicer_to_server(models, server)
    _stubs.denoise_service_pb2_grpc.add_DenoiseServiceServicer_to_server(denoiser, server)
    _stubs.cache_service_pb2_grpc.add_CacheServiceServicer_to_server(FakeCache(), server)
    _stubs.pipeline_service_pb2_grpc.add_PipelineServiceServicer_to_server(pipeline, server)
    _stubs.health_pb2_grpc.add_HealthServicer_to_server(FakeHealth(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.models, cls.denoiser, cls.pipeline = FakeModels(), FakeDenoise(), FakePipeline()
        cls.server, cls.address = serve(cls.models, cls.denoiser, cls.pipeline)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop(None)

    async def asyncSetUp(self):
        # grpc.aio binds a channel to the loop that made it: one client per test.
        self.client = dc.AsyncClient(self.address, timeout=20)

    async def asyncTearDown(self):
        await self.client.close()

    async def test_load_with_progress(self):
        progress = []
        info = await self.client.load_model("demo", model_id="d", fp8="e5m2", on_progress=progress.append)
        self.assertEqual([p.bytes_read for p in progress], [100, 200, 300])
        self.assertEqual((info.model_id, info.fp8_tensors), ("d", 2))
        self.assertEqual(self.models.requests[-1].fp8, _ms.FP8_MODE_E5M2)

    async def test_unary_calls_and_errors(self):
        self.assertEqual([m.model_id for m in await self.client.list_models()], ["m"])
        self.assertEqual((await self.client.stats()).hits, 2)
        self.assertEqual((await self.client.unload_model("m")).ram_bytes_freed, 300)
        out = await self.client.step("m", {"x": dc.WireTensor.from_floats([1, 2], (2,))})
        self.assertEqual(out["out"].to_list(), [2, 4])
        self.assertEqual(await self.client.health("readiness"), "SERVING")
        lease = await self.client.acquire_lease("m", ttl_seconds=60)
        await self.client.renew_lease(lease, ttl_seconds=30)
        await self.client.release_lease(lease)
        with self.assertRaises(dc.PermissionDeniedError) as cm:
            await self.client.load_model("../x")
        self.assertIsInstance(cm.exception.__cause__, grpc.RpcError)
        with self.assertRaisesRegex(dc.ResourceExhaustedError, "needed"):
            await self.client.make_room(2 << 30)

    async def test_list_available_and_watch_events(self):
        listing = await self.client.list_available()
        self.assertEqual([m.path for m in listing.models], ["zimage", "broken.safetensors", "style.safetensors"])
        async with self.client.watch_events() as watch:
            kinds = []
            async for event in watch:
                kinds.append(event.kind)
                if len(kinds) == 4:
                    watch.cancel()  # ends the iteration quietly
        self.assertEqual(kinds, ["snapshot", "load_progress", "evicted", "rejected"])

        # Cancelling the task that iterates cancels the RPC.
        got = asyncio.Queue()

        async def iterate():
            async for event in self.client.watch_events(progress=False):
                await got.put(event)

        task = asyncio.create_task(iterate())
        self.assertEqual((await asyncio.wait_for(got.get(), 20)).kind, "snapshot")
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task

    async def test_pipeline_calls(self):
        conditioning, tokens = await self.client.encode_prompt("flux", "a cat", pipeline="flux")
        self.assertEqual((tokens, conditioning["guidance"]), (2, 3.5))
        self.assertEqual(self.pipeline.requests[-1].pipeline, "flux")
        image = await self.client.decode("vae", dc.WireTensor.zeros((16, 2, 3)))
        self.assertEqual((image.width, image.height), (24, 16))
        seen = []

        async def on_progress(p):  # a coroutine callback is awaited
            seen.append(p.stage)

        image = await self.client.generate("zimage", "a cat", width=64, height=32, steps=2, seed=5,
                                           on_progress=on_progress)
        self.assertEqual((image.width, image.seed), (64, 5))
        self.assertEqual(seen, ["load", "evict", "encode", "denoise", "denoise", "decode"])
        with self.assertRaises(dc.ResourceExhaustedError):
            await self.client.generate("full", "x")

    async def test_generate_images_and_image_inputs(self):
        images = await self.client.generate_images("zimage", "a cat", steps=1, seeds=[4, 9], image=b"\x89PNG init",
                                                   mask_image=dc.WireTensor.zeros((16, 32)), strength=0.5)
        self.assertEqual([(i.index, i.seed) for i in images], [(0, 4), (1, 9)])
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.image, list(sent.mask_tensor.shape), sent.strength), (b"\x89PNG init", [16, 32], 0.5))
        self.assertEqual((sent.seed, list(sent.seeds), sent.num_images_per_prompt), (0, [4, 9], 2))
        with self.assertRaisesRegex(ValueError, "call generate_images"):
            await self.client.generate("zimage", "x", num_images_per_prompt=2)
        with self.assertRaisesRegex(dc.DiffusiondError, "ended after 1 of 3 images"):
            await self.client.generate_images("short", "x", steps=1, num_images_per_prompt=3)

    async def test_denoise_stream_iterates_steps_then_latents(self):
        events = [e async for e in self.client.denoise_stream("m", CAPTION, shape=(16, 2, 2), steps=2)]
        self.assertEqual([e.step for e in events[:2]], [1, 2])
        self.assertEqual(events[-1].shape, (16, 2, 2))
        latents = await self.client.denoise("m", CAPTION, shape=(16, 2, 2), steps=2)
        self.assertIsInstance(latents, dc.WireTensor)

    async def test_cancelling_the_task_cancels_the_rpc(self):
        self.denoiser.cancelled.clear()
        first = asyncio.Event()

        async def run():
            await self.client.denoise("slow", CAPTION, shape=(16, 2, 2), steps=5, on_step=lambda s: first.set())

        task = asyncio.create_task(run())
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertTrue(await asyncio.to_thread(self.denoiser.cancelled.wait, 10),
                        "the server never saw the cancellation")

    async def test_cancel_raises_cancelled_error_in_the_iteration(self):
        self.pipeline.cancelled.clear()
        call = self.client.generate_stream("slow", "x")
        events = call.__aiter__()
        self.assertEqual((await events.__anext__()).stage, "load")
        self.assertTrue(call.cancel())
        with self.assertRaises(dc.CancelledError):
            await events.__anext__()
        self.assertTrue(await asyncio.to_thread(self.pipeline.cancelled.wait, 10))

    async def test_unreachable_daemon_is_unavailable(self):
        async with dc.AsyncClient("127.0.0.1:1", timeout=2, retry=dc.RetryPolicy(attempts=1)) as c:
            with self.assertRaises(dc.UnavailableError):
                await c.list_models()
            with self.assertRaises(dc.UnavailableError):
                await c.wait_for_ready(timeout=0.2)


if __name__ == "__main__":
    unittest.main()
