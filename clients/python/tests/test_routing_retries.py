"""Tests of what both clients add on the wire: the diffusiond-model header on
model-scoped calls, keepalive options, and retries on UNAVAILABLE for
idempotent calls only.

Run: PYTHONPATH=clients/python python3 clients/python/tests/test_routing_retries.py
"""

import asyncio
import threading
import time
import unittest
from concurrent import futures

import grpc

import diffusiond_client as dc
from diffusiond_client import _stubs, _transport
from test_client import FakeCache, FakeDenoise, FakeHealth, FakeModels, FakePipeline

_ms, _cs = _stubs.model_service_pb2, _stubs.cache_service_pb2
CAPTION = {"cap_feats": dc.WireTensor.zeros((1, 128))}
FAST = dc.RetryPolicy(attempts=3, initial_backoff=0.01, max_backoff=0.02)


class Recorder(grpc.ServerInterceptor):
    """Records each call's method and diffusiond-model header."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def intercept_service(self, continuation, details):
        header = dict(details.invocation_metadata).get(dc.MODEL_HEADER)
        with self.lock:
            self.calls.append((details.method.rsplit("/", 1)[1], header))
        return continuation(details)


class Flaky:
    """Answers UNAVAILABLE to the first ``failures`` calls of each method."""

    def __init__(self, failures):
        self.failures = failures
        self.calls = {}

    def fail(self, method, context):
        self.calls[method] = self.calls.get(method, 0) + 1
        if self.calls[method] <= self.failures:
            context.abort(grpc.StatusCode.UNAVAILABLE, "draining")


class FlakyModels(FakeModels):
    def __init__(self, flaky):
        super().__init__()
        self.flaky = flaky

    def ListModels(self, request, context):
        self.flaky.fail("ListModels", context)
        return super().ListModels(request, context)

    def UnloadModel(self, request, context):
        self.flaky.fail("UnloadModel", context)
        return super().UnloadModel(request, context)


class FlakyCache(FakeCache):
    def __init__(self, flaky):
        self.flaky = flaky

    def GetStats(self, request, context):
        self.flaky.fail("GetStats", context)
        return super().GetStats(request, context)

    def MakeRoom(self, request, context):
        self.flaky.fail("MakeRoom", context)
        return super().MakeRoom(request, context)


def serve(models, cache, interceptors=()):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=interceptors)
    _stubs.model_service_pb2_grpc.add_ModelServiceServicer_to_server(models, server)
    _stubs.denoise_service_pb2_grpc.add_DenoiseServiceServicer_to_server(FakeDenoise(), server)
    _stubs.cache_service_pb2_grpc.add_CacheServiceServicer_to_server(cache, server)
    _stubs.pipeline_service_pb2_grpc.add_PipelineServiceServicer_to_server(FakePipeline(), server)
    _stubs.health_pb2_grpc.add_HealthServicer_to_server(FakeHealth(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def every_call(c):
    """Makes every call once with a blocking Client."""
    c.load_model("pipes/dit", model_id="dit")
    c.load_model("pipes/vae")
    c.unload_model("m")
    lease = c.acquire_lease("m")
    c.renew_lease(lease, ttl_seconds=60)
    c.release_lease(lease)
    c.step("m", {"x": dc.WireTensor.from_floats([1], (1,))})
    c.denoise("m", CAPTION, shape=(16, 1, 1), steps=1)
    c.encode_prompt("te", "a cat")
    c.decode("vae", dc.WireTensor.zeros((16, 1, 1)))
    c.generate("zimage", "a cat", steps=1)
    c.generate(prompt="a cat", transformer="dit", text_encoder="te", vae="vae", steps=1)
    c.list_models()
    c.stats()
    c.make_room(1)
    c.health()


async def every_call_async(c):
    """The same calls with an AsyncClient."""
    await c.load_model("pipes/dit", model_id="dit")
    await c.load_model("pipes/vae")
    await c.unload_model("m")
    lease = await c.acquire_lease("m")
    await c.renew_lease(lease, ttl_seconds=60)
    await c.release_lease(lease)
    await c.step("m", {"x": dc.WireTensor.from_floats([1], (1,))})
    await c.denoise("m", CAPTION, shape=(16, 1, 1), steps=1)
    await c.encode_prompt("te", "a cat")
    await c.decode("vae", dc.WireTensor.zeros((16, 1, 1)))
    await c.generate("zimage", "a cat", steps=1)
    await c.generate(prompt="a cat", transformer="dit", text_encoder="te", vae="vae", steps=1)
    await c.list_models()
    await c.stats()
    await c.make_room(1)
    await c.health()


EXPECTED_HEADERS = [
    ("LoadModel", "dit"), ("LoadModel", "pipes/vae"), ("UnloadModel", "m"), ("AcquireLease", "m"),
    ("RenewLease", "m"), ("ReleaseLease", "m"), ("Step", "m"), ("Denoise", "m"), ("EncodePrompt", "te"),
    ("Decode", "vae"), ("Generate", "zimage"), ("Generate", "dit"),
    ("ListModels", None), ("GetStats", None), ("MakeRoom", None), ("Check", None),
]


class ModelHeaderTest(unittest.TestCase):
    def setUp(self):
        self.recorder = Recorder()
        self.server, self.address = serve(FakeModels(), FakeCache(), [self.recorder])

    def tearDown(self):
        self.server.stop(None)

    def test_blocking_client_names_the_model_of_each_call(self):
        with dc.Client(self.address, timeout=20) as c:
            every_call(c)
        self.assertEqual(self.recorder.calls, EXPECTED_HEADERS)

    def test_async_client_names_the_model_of_each_call(self):
        async def run():
            async with dc.AsyncClient(self.address, timeout=20) as c:
                await every_call_async(c)

        asyncio.run(run())
        self.assertEqual(self.recorder.calls, EXPECTED_HEADERS)

    def test_header_values_are_printable_ascii(self):
        self.assertEqual(_transport.metadata("models/z-image turbo/é"),
                         ((dc.MODEL_HEADER, "models/z-image%20turbo/%C3%A9"),))
        self.assertIsNone(_transport.metadata(None))


class ChannelOptionsTest(unittest.TestCase):
    def test_keepalive_defaults_and_overrides(self):
        options = dict(_transport.channel_options(1 << 20, [("grpc.keepalive_time_ms", 60_000)]))
        self.assertEqual(options["grpc.keepalive_time_ms"], 60_000)
        self.assertEqual(options["grpc.keepalive_timeout_ms"], 20_000)
        self.assertEqual(options["grpc.max_send_message_length"], 1 << 20)


class RetryTest(unittest.TestCase):
    def start(self, failures):
        self.flaky = Flaky(failures)
        self.server, self.address = serve(FlakyModels(self.flaky), FlakyCache(self.flaky))
        self.addCleanup(self.server.stop, None)

    def test_idempotent_calls_are_retried_on_unavailable(self):
        self.start(failures=2)
        with dc.Client(self.address, timeout=20, retry=FAST) as c:
            self.assertEqual([m.model_id for m in c.list_models()], ["m"])
            self.assertEqual(c.stats().hits, 2)
        self.assertEqual(self.flaky.calls, {"ListModels": 3, "GetStats": 3})

    def test_calls_that_change_state_are_not_retried(self):
        self.start(failures=1)
        with dc.Client(self.address, timeout=20, retry=FAST) as c:
            with self.assertRaises(dc.UnavailableError):
                c.unload_model("m")
            with self.assertRaises(dc.UnavailableError):
                c.make_room(1)
        self.assertEqual(self.flaky.calls, {"UnloadModel": 1, "MakeRoom": 1})

    def test_attempts_are_bounded(self):
        self.start(failures=10)
        with dc.Client(self.address, timeout=20, retry=FAST) as c:
            with self.assertRaisesRegex(dc.UnavailableError, "draining"):
                c.list_models()
        self.assertEqual(self.flaky.calls, {"ListModels": 3})

    def test_the_deadline_spans_the_retries(self):
        self.start(failures=10)
        slow = dc.RetryPolicy(attempts=10, initial_backoff=1.0, max_backoff=1.0)
        began = time.monotonic()
        with dc.Client(self.address, retry=slow) as c:
            with self.assertRaises(dc.UnavailableError):
                c.list_models(timeout=0.3)  # no room for a 0.5-1 s wait
        self.assertLess(time.monotonic() - began, 0.9)
        self.assertEqual(self.flaky.calls, {"ListModels": 1})

    def test_async_client_retries_the_same_way(self):
        self.start(failures=1)

        async def run():
            async with dc.AsyncClient(self.address, timeout=20, retry=FAST) as c:
                self.assertEqual((await c.stats()).hits, 2)
                with self.assertRaises(dc.UnavailableError):
                    await c.make_room(1)

        asyncio.run(run())
        self.assertEqual(self.flaky.calls, {"GetStats": 2, "MakeRoom": 1})


if __name__ == "__main__":
    unittest.main()
