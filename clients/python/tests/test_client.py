"""Tests of diffusiond_client against an in-process fake daemon (no binary needed).

Run: PYTHONPATH=clients/python python3 clients/python/tests/test_client.py
"""

import array
import dataclasses
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from concurrent import futures

import grpc

import diffusiond_client as dc
from diffusiond_client import _stubs

_ms, _ds, _cs, _ts = (_stubs.model_service_pb2, _stubs.denoise_service_pb2, _stubs.cache_service_pb2,
                      _stubs.tensor_pb2)
_hs = _stubs.health_pb2
_ps = _stubs.pipeline_service_pb2


class FakeModels(_stubs.model_service_pb2_grpc.ModelServiceServicer):
    def __init__(self):
        self.requests = []

    def LoadModel(self, request, context):
        self.requests.append(request)
        if request.path.startswith(".."):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"path '{request.path}' is outside the models dir")
        for done in (1, 2, 3):
            yield _ms.LoadModelEvent(progress=_ms.LoadProgress(bytes_read=done * 100, total_bytes=300,
                                                               tensors_done=done, total_tensors=3))
        yield _ms.LoadModelEvent(loaded=_ms.ModelInfo(model_id=request.model_id or request.path,
                                                      architecture="z-image", compute_dtype="float32",
                                                      tensors=3, fp8_tensors=2, ram_bytes=300))

    def UnloadModel(self, request, context):
        if request.model_id != "m":
            context.abort(grpc.StatusCode.NOT_FOUND, f"model \"{request.model_id}\" is not loaded")
        return _ms.UnloadModelResponse(ram_bytes_freed=300 if request.wait else 1)

    def ListModels(self, request, context):
        return _ms.ListModelsResponse(models=[_ms.ModelInfo(model_id="m", tensors=3)])

    def ListAvailable(self, request, context):
        self.available_metadata = dict(context.invocation_metadata())
        return _ms.ListAvailableResponse(models=[
            _ms.AvailableModel(path="zimage", format="model-folder", architecture="z-image", role="denoiser",
                               compute_dtype="float32",
                               sizes=[_ms.AvailableSize(fp8=_ms.FP8_MODE_OFF, reservation_bytes=600),
                                      _ms.AvailableSize(fp8=_ms.FP8_MODE_E4M3FN, reservation_bytes=400)]),
            _ms.AvailableModel(path="broken.safetensors", format="safetensors", error="bad header"),
            _ms.AvailableModel(path="style.safetensors", format="lora", architecture="flux", role="adapter",
                               adapter=_ms.AvailableAdapter(layout="kohya", architectures=["flux"], modules=2,
                                                            min_rank=4, max_rank=16, targets=["proj_out"]))],
            truncated=True, truncated_reason="the entry limit (2) was reached", entries_scanned=3)

    def AcquireLease(self, request, context):
        return _ms.AcquireLeaseResponse(lease_id=int(request.ttl_seconds) + 1000)

    def RenewLease(self, request, context):
        if request.lease_id != 1060 or request.ttl_seconds <= 0:
            context.abort(grpc.StatusCode.NOT_FOUND, "lease expired")
        return _ms.RenewLeaseResponse()

    def ReleaseLease(self, request, context):
        if request.lease_id != 1060:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such lease")
        return _ms.ReleaseLeaseResponse()


class FakeDenoise(_stubs.denoise_service_pb2_grpc.DenoiseServiceServicer):
    def __init__(self):
        self.requests = []
        self.cancelled = threading.Event()

    def Step(self, request, context):
        x = {i.name: i.tensor for i in request.inputs}["x"]
        if x.dtype != _ts.DTYPE_FLOAT32 or not x.shape or len(x.data) != 4 * math.prod(x.shape):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad x")
        doubled = array.array("f", (2 * v for v in array.array("f", x.data)))
        return _ds.StepResponse(outputs=[_ts.NamedTensor(
            name="out", tensor=_ts.Tensor(dtype=x.dtype, shape=x.shape, data=doubled.tobytes()))])

    def Denoise(self, request, context):
        self.requests.append(request)
        if request.model_id == "slow":
            # Runs when the call ends, which for "slow" only a cancellation
            # does; add_callback refuses once the call has already ended.
            if not context.add_callback(self.cancelled.set):
                self.cancelled.set()
        for i in range(request.steps):
            if request.model_id == "slow" and i == 1:
                deadline = time.monotonic() + 10
                while context.is_active() and time.monotonic() < deadline:
                    time.sleep(0.01)
                if not context.is_active():
                    return
            yield _ds.DenoiseEvent(step=_ds.DenoiseStep(step=i + 1, steps=request.steps, sigma=1.0 - i / 10))
        shape = list(request.latent_shape) or list(request.initial_latents.shape)
        n = 1
        for s in shape:
            n *= s
        yield _ds.DenoiseEvent(latents=_ts.Tensor(dtype=_ts.DTYPE_FLOAT32, shape=shape, data=bytes(4 * n)))


class FakeCache(_stubs.cache_service_pb2_grpc.CacheServiceServicer):
    def GetStats(self, request, context):
        return _cs.GetStatsResponse(budgets=[_cs.DeviceBudget(device="cpu", capacity_bytes=1 << 30)], hits=2)

    def MakeRoom(self, request, context):
        if request.bytes > 1 << 30:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"needed {request.bytes} bytes")
        return _cs.MakeRoomResponse(available_bytes=1 << 30, evicted_model_ids=["old"])


    def WatchEvents(self, request, context):
        yield _cs.WatchEvent(kind=_cs.WatchEvent.KIND_SNAPSHOT, models=[_ms.ModelInfo(model_id="m")])
        if not request.no_progress:
            yield _cs.WatchEvent(kind=_cs.WatchEvent.KIND_LOAD_PROGRESS, tier="ram", model_id="n",
                                 progress=_ms.LoadProgress(tensors_done=1, total_tensors=2))
        yield _cs.WatchEvent(kind=_cs.WatchEvent.KIND_EVICTED, tier="ram", model_id="m", ram_bytes=300,
                             reason="least recently used")
        yield _cs.WatchEvent(kind=_cs.WatchEvent.KIND_REJECTED, tier="ram", ram_bytes=1 << 40,
                             code=grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], message="cannot make room")
        while context.is_active():  # until the client cancels
            time.sleep(0.01)


class FakeHealth(_stubs.health_pb2_grpc.HealthServicer):
    def Check(self, request, context):
        if request.service not in ("", "liveness", "readiness"):
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return _hs.HealthCheckResponse(status=_hs.HealthCheckResponse.SERVING)


class FakePipeline(_stubs.pipeline_service_pb2_grpc.PipelineServiceServicer):
    """One token per word; a PNG-looking image 8x the latents; Generate
    decodes and sends each image of its batch in turn. Pipeline "slow" waits
    after its first event until cancelled, "full" fails, "no-image" ends
    without an image, "short" sends one image whatever the batch."""

    def __init__(self):
        self.requests = []
        self.cancelled = threading.Event()

    def EncodePrompt(self, request, context):
        self.requests.append(request)
        if request.text_encoder == "missing":
            context.abort(grpc.StatusCode.NOT_FOUND, "models/missing: no such file or folder")
        n = len(request.prompt.split())
        conditioning = _ts.Conditioning(tensors=[_ts.NamedTensor(
            name="cap_feats", tensor=_ts.Tensor(dtype=_ts.DTYPE_FLOAT32, shape=[n, 4], data=bytes(16 * n)))])
        if request.text_encoder == "flux":
            conditioning.scalars["guidance"] = 3.5
        return _ps.EncodePromptResponse(conditioning=conditioning, tokens=n)

    def Decode(self, request, context):
        self.requests.append(request)
        shape = request.latents.shape
        return _ps.Image(png=b"\x89PNG decoded", width=shape[-1] * 8, height=shape[-2] * 8)

    def Generate(self, request, context):
        self.requests.append(request)
        if request.pipeline == "full":
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "needed 12 GiB, available 3 GiB")
        stage = _ps.GenerateProgress
        # Registered before the first event: a client that cancels on it must
        # not race the registration (add_callback refuses an ended call).
        if request.pipeline == "slow" and not context.add_callback(self.cancelled.set):
            self.cancelled.set()
        yield _ps.GenerateEvent(progress=stage(stage=stage.STAGE_LOAD, model_id="te", seconds=1.5, detail="loaded"))
        if request.pipeline == "slow":
            deadline = time.monotonic() + 10
            while context.is_active() and time.monotonic() < deadline:
                time.sleep(0.01)
            return
        yield _ps.GenerateEvent(progress=stage(stage=stage.STAGE_EVICT, model_id="old"))
        yield _ps.GenerateEvent(progress=stage(stage=stage.STAGE_ENCODE, model_id="te"))
        for i in range(request.steps):
            yield _ps.GenerateEvent(progress=stage(stage=stage.STAGE_DENOISE, model_id="dit", step=i + 1,
                                                   steps=request.steps, seconds=0.25))
        count = max(request.num_images_per_prompt, len(request.seeds), 1)
        if request.pipeline == "short":
            count = 1
        for index in range(count):
            yield _ps.GenerateEvent(progress=stage(stage=stage.STAGE_DECODE, model_id="vae"))
            if request.pipeline == "wan":  # a video: PNG frames as asked, then the Video
                frames = request.num_frames or 81
                png_frames = request.video_format == _ps.VIDEO_FORMAT_PNG_FRAMES
                for k in range(frames if png_frames else 0):
                    yield _ps.GenerateEvent(frame=_ps.VideoFrame(png=b"\x89PNG %d" % k, index=index, frame=k))
                yield _ps.GenerateEvent(video=_ps.Video(mp4=b"" if png_frames else b"....ftypisom", width=request.width,
                                                        height=request.height, frames=frames, fps=16,
                                                        seed=request.seed, index=index, parameters="{}"))
            elif request.pipeline != "no-image":
                seed = request.seeds[index] if request.seeds else request.seed
                yield _ps.GenerateEvent(image=_ps.Image(png=b"\x89PNG generated", width=request.width,
                                                        height=request.height, seed=seed, index=index))


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        cls.models, cls.denoiser = FakeModels(), FakeDenoise()
        _stubs.model_service_pb2_grpc.add_ModelServiceServicer_to_server(cls.models, cls.server)
        _stubs.denoise_service_pb2_grpc.add_DenoiseServiceServicer_to_server(cls.denoiser, cls.server)
        _stubs.cache_service_pb2_grpc.add_CacheServiceServicer_to_server(FakeCache(), cls.server)
        _stubs.health_pb2_grpc.add_HealthServicer_to_server(FakeHealth(), cls.server)
        port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.client = dc.Client(f"127.0.0.1:{port}", timeout=20)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop(None)

    def test_load_reports_progress_then_model_info(self):
        progress = []
        info = self.client.load_model("demo", model_id="d", fp8="e5m2", compute_dtype="bfloat16",
                                      on_progress=progress.append)
        self.assertEqual([p.bytes_read for p in progress], [100, 200, 300])
        self.assertEqual((info.model_id, info.fp8_tensors, info.compute_dtype), ("d", 2, "float32"))
        sent = self.models.requests[-1]
        self.assertEqual((sent.fp8, sent.compute_dtype), (_ms.FP8_MODE_E5M2, "bfloat16"))

    def test_load_error_carries_code_and_details(self):
        with self.assertRaises(dc.PermissionDeniedError) as cm:
            self.client.load_model("../x")
        self.assertEqual(cm.exception.code, grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn("outside the models dir", cm.exception.details)
        self.assertIn("LoadModel: PERMISSION_DENIED", str(cm.exception))
        self.assertIsInstance(cm.exception.__cause__, grpc.RpcError)

    def test_bad_fp8_is_refused_before_the_call(self):
        with self.assertRaisesRegex(ValueError, "fp8 'fp4'"):
            self.client.load_model("demo", fp8="fp4")

    def test_unload_list_leases(self):
        self.assertEqual(self.client.unload_model("m").ram_bytes_freed, 300)
        self.assertEqual(self.client.unload_model("m", wait=False).ram_bytes_freed, 1)
        with self.assertRaises(dc.NotFoundError):
            self.client.unload_model("nope")
        self.assertEqual([m.model_id for m in self.client.list_models()], ["m"])
        lease = self.client.acquire_lease("m", ttl_seconds=60)
        self.assertEqual(lease, 1060)
        self.client.renew_lease(lease, ttl_seconds=30)
        with self.assertRaises(dc.NotFoundError):
            self.client.renew_lease(lease, ttl_seconds=0)
        self.client.release_lease(lease)
        with self.assertRaises(dc.NotFoundError):
            self.client.release_lease(7)

    def test_list_available(self):
        listing = self.client.list_available()
        self.assertTrue(listing.truncated)
        self.assertIn("entry limit", listing.truncated_reason)
        zimage, broken, lora = listing.models
        self.assertIsNone(zimage.adapter)
        self.assertEqual((lora.format, lora.adapter.layout, lora.adapter.architectures, lora.adapter.max_rank,
                          lora.adapter.targets), ("lora", "kohya", ("flux",), 16, ("proj_out",)))
        self.assertTrue(zimage.loadable)
        self.assertEqual([s.fp8 for s in zimage.sizes], ["off", "e4m3fn"])
        self.assertEqual(zimage.size("e4m3fn").reservation_bytes, 400)
        self.assertIsNone(zimage.size("e5m2"))
        self.assertFalse(broken.loadable)
        self.assertNotIn(dc.MODEL_HEADER, self.models.available_metadata)  # not model-scoped

    def test_watch_events_until_cancelled(self):
        with self.client.watch_events() as watch:
            events = iter(watch)
            kinds = [next(events) for _ in range(4)]
            self.assertEqual([e.kind for e in kinds], ["snapshot", "load_progress", "evicted", "rejected"])
            snapshot, progress, evicted, rejected = kinds
            self.assertEqual([m.model_id for m in snapshot.models], ["m"])
            self.assertEqual(progress.progress.total_tensors, 2)
            self.assertIsNone(evicted.progress)
            self.assertEqual((evicted.reason, evicted.ram_bytes, evicted.code), ("least recently used", 300, ""))
            self.assertEqual(rejected.code, "RESOURCE_EXHAUSTED")
            watch.cancel()
            self.assertEqual(list(events), [])  # cancelled: the iteration ends quietly
        quiet = self.client.watch_events(progress=False)
        self.assertEqual([next(iter(quiet)).kind for _ in range(1)], ["snapshot"])
        quiet.cancel()

    def test_stats_and_make_room(self):
        stats = self.client.stats()
        self.assertEqual(stats.budget("cpu").capacity_bytes, 1 << 30)
        self.assertIsNone(stats.budget("cuda"))
        self.assertEqual(stats.hits, 2)
        self.assertEqual(self.client.make_room(10).evicted_model_ids, ("old",))
        with self.assertRaisesRegex(dc.ResourceExhaustedError, "needed"):
            self.client.make_room(2 << 30)

    def test_step_round_trips_tensors(self):
        out = self.client.step("m", {"x": dc.WireTensor.from_floats([1, 2, 3], (3,))})
        self.assertEqual(out["out"].to_list(), [2, 4, 6])
        self.assertEqual(out["out"].shape, (3,))

    def test_denoise_reports_steps_and_returns_latents(self):
        steps = []
        latents = self.client.denoise("m", {"cap_feats": dc.WireTensor.zeros((4, 128)), "guidance": 3.5},
                                      shape=(16, 8, 8), steps=3, seed=7, on_step=steps.append)
        self.assertEqual([s.step for s in steps], [1, 2, 3])
        self.assertEqual(latents.shape, (16, 8, 8))
        sent = self.denoiser.requests[-1]
        self.assertEqual((list(sent.latent_shape), sent.seed), ([16, 8, 8], 7))
        self.assertEqual([(t.name, list(t.tensor.shape)) for t in sent.conditioning.tensors], [("cap_feats", [4, 128])])
        self.assertEqual(dict(sent.conditioning.scalars), {"guidance": 3.5})
        self.assertFalse(sent.HasField("negative"))

    def test_denoise_steps_default_to_the_sigmas(self):
        self.client.denoise("m", {"cap_feats": dc.WireTensor.zeros((1, 128))}, latents=dc.WireTensor.zeros((16, 2, 2)),
                            sigmas=[1.0, 0.5])
        sent = self.denoiser.requests[-1]
        self.assertEqual((sent.steps, list(sent.sigmas), list(sent.initial_latents.shape)), (2, [1.0, 0.5], [16, 2, 2]))

    def test_denoise_sends_later_segments_and_the_expert_2_alias(self):
        cond = {"cap_feats": dc.WireTensor.zeros((1, 128))}
        self.client.denoise("high", cond, shape=(16, 2, 2), steps=2,
                            later_segments=[dc.DenoiseSegment("low", 0.875, 3.0), dc.DenoiseSegment("refiner", 0.2)])
        sent = self.denoiser.requests[-1]
        self.assertEqual([(s.model_id, s.boundary_ratio, s.guidance_scale) for s in sent.later_segments],
                         [("low", 0.875, 3.0), ("refiner", 0.2, 0.0)])
        self.assertEqual(sent.expert_2, "")
        self.client.denoise("high", cond, shape=(16, 2, 2), steps=2, expert_2="low", boundary_ratio=0.9)
        sent = self.denoiser.requests[-1]
        self.assertEqual((sent.expert_2, sent.boundary_ratio, len(sent.later_segments)), ("low", 0.9, 0))

    def test_denoise_sends_adapters_with_their_weights(self):
        cond = {"cap_feats": dc.WireTensor.zeros((1, 128))}
        self.client.denoise("m", cond, shape=(16, 2, 2), steps=1,
                            adapters=[("loras/a.safetensors", 0.7), "loras/b.safetensors"])
        sent = self.denoiser.requests[-1]
        self.assertEqual([(a.path, a.weight) for a in sent.adapters],
                         [("loras/a.safetensors", 0.7), ("loras/b.safetensors", 1.0)])
        with self.assertRaisesRegex(ValueError, "adapter"):
            self.client.denoise("m", cond, shape=(16, 2, 2), steps=1, adapters=[("", 1.0)])

    def test_denoise_needs_latents_or_shape(self):
        with self.assertRaisesRegex(ValueError, "exactly one"):
            self.client.denoise("m", dc.WireTensor.zeros((1, 128)))

    def test_conditioning_must_be_a_mapping(self):
        with self.assertRaisesRegex(TypeError, "map names"):
            self.client.denoise("m", dc.WireTensor.zeros((1, 128)), shape=(16, 2, 2))

    def test_denoise_stream_cancels(self):
        self.denoiser.cancelled.clear()
        call = self.client.denoise_stream("slow", {"cap_feats": dc.WireTensor.zeros((1, 128))}, shape=(16, 2, 2), steps=5)
        events = iter(call)
        self.assertEqual(next(events).step, 1)
        self.assertTrue(call.cancel())
        with self.assertRaises(dc.CancelledError):
            next(events)
        self.assertTrue(self.denoiser.cancelled.wait(10), "the server never saw the cancellation")
        self.assertEqual(call.code(), grpc.StatusCode.CANCELLED)

    def test_on_step_exception_cancels_the_call(self):
        self.denoiser.cancelled.clear()

        def stop(step):
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.client.denoise("slow", {"cap_feats": dc.WireTensor.zeros((1, 128))}, shape=(16, 2, 2), steps=5, on_step=stop)
        self.assertTrue(self.denoiser.cancelled.wait(10))

    def test_malformed_proto_tensor_is_forwarded_unchanged(self):
        bad = _ts.Tensor(dtype=_ts.DTYPE_FLOAT32, shape=[], data=b"")
        with self.assertRaises(dc.InvalidArgumentError):
            self.client.step("m", {"x": bad})

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("readiness"), "SERVING")
        with self.assertRaises(dc.NotFoundError):
            self.client.health("nope")

    def test_unreachable_daemon_is_unavailable(self):
        with dc.Client("127.0.0.1:1", timeout=5) as c:
            with self.assertRaises(dc.UnavailableError):
                c.list_models()
            with self.assertRaises(dc.UnavailableError):
                c.wait_for_ready(timeout=0.2)


class PipelineClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        cls.pipeline = FakePipeline()
        _stubs.pipeline_service_pb2_grpc.add_PipelineServiceServicer_to_server(cls.pipeline, cls.server)
        port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.client = dc.Client(f"127.0.0.1:{port}", timeout=20)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop(None)

    def test_encode_prompt_returns_conditioning_and_tokens(self):
        conditioning, tokens = self.client.encode_prompt("qwen", "a cat on a mat")
        self.assertEqual(tokens, 5)
        self.assertEqual(list(conditioning), ["cap_feats"])
        self.assertEqual((conditioning["cap_feats"].dtype, conditioning["cap_feats"].shape), ("float32", (5, 4)))
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.text_encoder, sent.prompt, sent.pipeline), ("qwen", "a cat on a mat", ""))

    def test_encode_prompt_sends_the_pipeline_that_chooses_the_encoding(self):
        self.client.encode_prompt("umt5", "a cat", pipeline="wan")
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.text_encoder, sent.pipeline), ("umt5", "wan"))

    def test_encode_prompt_scalars_are_floats_and_errors_raise(self):
        conditioning, tokens = self.client.encode_prompt("flux", "two words")
        self.assertEqual((tokens, conditioning["guidance"]), (2, 3.5))
        with self.assertRaises(dc.NotFoundError) as e:
            self.client.encode_prompt("missing", "x")
        self.assertEqual(e.exception.details, "models/missing: no such file or folder")

    def test_decode_sends_the_latents_and_returns_an_image(self):
        image = self.client.decode("vae", dc.WireTensor.zeros((16, 3, 5)))
        self.assertIsInstance(image, dc.Image)
        self.assertEqual((image.width, image.height, image.seed, image.png), (40, 24, 0, b"\x89PNG decoded"))
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.vae, list(sent.latents.shape)), ("vae", [16, 3, 5]))
        with tempfile.TemporaryDirectory() as d:
            path = image.save(os.path.join(d, "out.png"))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), image.png)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            image.width = 1

    def test_generate_reports_progress_then_the_image(self):
        progress = []
        image = self.client.generate("z-image", "a cat", "blurry", width=32, height=16, steps=2, guidance_scale=4.0,
                                     seed=7, shift=3.0, true_cfg_scale=2.5, vae="my-vae",
                                     component_options={"text_encoder": {"fp8": "off", "compute_dtype": "float32"}},
                                     on_progress=progress.append)
        self.assertEqual([p.stage for p in progress], ["load", "evict", "encode", "denoise", "denoise", "decode"])
        self.assertEqual(progress[0], dc.GenerateProgress("load", "te", 0, 0, 1.5, "loaded"))
        self.assertEqual([(p.step, p.steps) for p in progress if p.stage == "denoise"], [(1, 2), (2, 2)])
        self.assertEqual(image, dc.Image(b"\x89PNG generated", 32, 16, 7))
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.pipeline, sent.prompt, sent.negative_prompt, dict(sent.components)),
                         ("z-image", "a cat", "blurry", {"vae": "my-vae"}))
        self.assertEqual((sent.width, sent.height, sent.steps, sent.guidance_scale, sent.seed, sent.shift,
                          sent.true_cfg_scale), (32, 16, 2, 4.0, 7, 3.0, 2.5))
        options = sent.component_options["text_encoder"]
        self.assertEqual((list(sent.component_options), options.fp8, options.compute_dtype),
                         (["text_encoder"], _ms.FP8_MODE_OFF, "float32"))
        with self.assertRaisesRegex(ValueError, r"component_options\['vae'\]: unknown option\(s\) \['fp16'\]"):
            self.client.generate("z-image", "a cat", component_options={"vae": {"fp16": True}})

    def test_generate_without_a_pipeline_needs_every_component_and_draws_a_seed(self):
        with self.assertRaisesRegex(ValueError, "give pipeline="):
            self.client.generate(prompt="x", text_encoder="te", vae="vae")
        image = self.client.generate(prompt="x", text_encoder="te", transformer="dit", vae="vae", steps=1)
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.pipeline, dict(sent.components)),
                         ("", {"text_encoder": "te", "transformer": "dit", "vae": "vae"}))
        self.client.generate("flux", "x", components={"text_encoder_2": "t5", "vae": "ae"}, vae="ignored")
        self.assertEqual(dict(self.pipeline.requests[-1].components), {"text_encoder_2": "t5", "vae": "ae"})
        self.assertEqual(image.seed, sent.seed)

    def test_generate_errors(self):
        with self.assertRaises(dc.ResourceExhaustedError):
            self.client.generate("full", "x")
        with self.assertRaisesRegex(dc.DiffusiondError, "without an image") as e:
            self.client.generate("no-image", "x", steps=1)
        self.assertEqual(e.exception.code, grpc.StatusCode.INTERNAL)

    def test_generate_stream_yields_events_and_cancels(self):
        self.pipeline.cancelled.clear()
        call = self.client.generate_stream("slow", "x")
        self.assertIsInstance(call, dc.GenerateCall)
        events = iter(call)
        self.assertEqual(next(events).stage, "load")
        self.assertTrue(call.cancel())
        with self.assertRaises(dc.CancelledError):
            next(events)
        self.assertTrue(self.pipeline.cancelled.wait(10), "the server never saw the cancellation")
        self.assertEqual(call.code(), grpc.StatusCode.CANCELLED)

    def test_on_progress_exception_cancels_the_call(self):
        self.pipeline.cancelled.clear()

        def stop(progress):
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.client.generate("slow", "x", on_progress=stop)
        self.assertTrue(self.pipeline.cancelled.wait(10))

    def test_generate_sends_png_image_mask_and_strength(self):
        self.client.generate("z-image", "a red door", width=32, height=16, image=b"\x89PNG init",
                             mask_image=bytearray(b"\x89PNG mask"), strength=0.8, seed=3)
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.image, sent.mask_image, sent.strength), (b"\x89PNG init", b"\x89PNG mask", 0.8))
        self.assertFalse(sent.HasField("image_tensor") or sent.HasField("mask_tensor"))
        self.assertEqual((sent.num_images_per_prompt, list(sent.seeds), sent.seed), (0, [], 3))

    def test_generate_sends_padding_mask_crop_only_when_given(self):
        self.client.generate("flux", "a red door", width=32, height=16, image=b"\x89PNG init",
                             mask_image=b"\x89PNG mask", padding_mask_crop=0, seed=3)
        sent = self.pipeline.requests[-1]
        self.assertTrue(sent.HasField("padding_mask_crop"))  # 0 is a crop to the mask's box, as upstream's
        self.assertEqual(sent.padding_mask_crop, 0)
        self.client.generate("flux", "a red door", image=b"\x89PNG init", mask_image=b"\x89PNG mask", seed=3)
        self.assertFalse(self.pipeline.requests[-1].HasField("padding_mask_crop"))
        self.client.generate_images("flux", "a red door", image=b"\x89PNG init", mask_image=b"\x89PNG mask",
                                    padding_mask_crop=16, seed=3)
        self.assertEqual(self.pipeline.requests[-1].padding_mask_crop, 16)

    def test_generate_sends_adapters(self):
        self.client.generate("flux", "a red door", seed=3, adapters=[("style.safetensors", -0.3)])
        sent = self.pipeline.requests[-1]
        self.assertEqual([(a.path, a.weight) for a in sent.adapters], [("style.safetensors", -0.3)])

    def test_generate_sends_tensor_image_and_mask(self):
        image = dc.WireTensor.zeros((3, 16, 32))
        mask = dc.WireTensor.from_floats([0.0, 1.0] * 256, (16, 32))
        self.client.generate("z-image", "a red door", image=image, mask_image=mask)
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.image, sent.mask_image), (b"", b""))
        self.assertEqual((sent.image_tensor.dtype, list(sent.image_tensor.shape)), (_ts.DTYPE_FLOAT32, [3, 16, 32]))
        self.assertEqual(dc.WireTensor.from_proto(sent.mask_tensor), mask)
        self.assertEqual(sent.strength, 0.0)  # the family's default

    @unittest.skipUnless(__import__("importlib").util.find_spec("numpy"), "numpy is not installed")
    def test_generate_sends_numpy_image_as_a_tensor(self):
        import numpy as np

        self.client.generate("z-image", "x", image=np.full((1, 3, 16, 32), 0.5, dtype=np.float32))
        sent = self.pipeline.requests[-1]
        self.assertEqual(list(sent.image_tensor.shape), [1, 3, 16, 32])
        self.assertEqual(dc.WireTensor.from_proto(sent.image_tensor).to_list()[:2], [0.5, 0.5])

    def test_generate_refuses_a_path_for_an_image(self):
        with self.assertRaisesRegex(TypeError, r"image='photo.png' is a path: pass the PNG's bytes"):
            self.client.generate("z-image", "x", image="photo.png")

    def test_generate_images_returns_each_image_of_one_generator_in_order(self):
        progress = []
        images = self.client.generate_images("z-image", "a cat", width=32, height=16, steps=1, seed=5,
                                             num_images_per_prompt=3, on_progress=progress.append)
        self.assertEqual([(i.index, i.seed) for i in images], [(0, 5), (1, 5), (2, 5)])
        self.assertEqual([p.stage for p in progress].count("decode"), 3)
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.num_images_per_prompt, sent.seed, list(sent.seeds)), (3, 5, []))

    def test_generate_video_gathers_png_frames_or_returns_the_mp4(self):
        progress = []
        video = self.client.generate_video("wan", "a cat", width=32, height=16, steps=1, seed=5, num_frames=5,
                                           guidance_scale_2=2.5, video_format="png_frames", on_event=progress.append)
        self.assertEqual((video.width, video.height, video.frames, video.fps, video.seed), (32, 16, 5, 16, 5))
        self.assertEqual(video.frame_pngs, tuple(b"\x89PNG %d" % k for k in range(5)))
        self.assertEqual(video.mp4, b"")
        self.assertEqual([type(e).__name__ for e in progress].count("VideoFrame"), 5)
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.num_frames, sent.guidance_scale_2, sent.video_format),
                         (5, 2.5, _ps.VIDEO_FORMAT_PNG_FRAMES))
        videos = self.client.generate_videos("wan", "a cat", steps=1, seed=5, num_frames=9, num_images_per_prompt=2)
        self.assertEqual([(v.index, v.frames, v.mp4, v.frame_pngs) for v in videos],
                         [(0, 9, b"....ftypisom", ()), (1, 9, b"....ftypisom", ())])
        self.assertEqual(self.pipeline.requests[-1].video_format, _ps.VIDEO_FORMAT_MP4)
        self.assertFalse(self.pipeline.requests[-1].HasField("guidance_scale_2"))
        with self.assertRaisesRegex(ValueError, "video_format 'gif' is not"):
            self.client.generate_video("wan", "a cat", video_format="gif")

    def test_generate_images_with_one_seed_per_image(self):
        images = self.client.generate_images("z-image", "a cat", steps=1, seeds=[4, 9])
        self.assertEqual([(i.index, i.seed) for i in images], [(0, 4), (1, 9)])
        sent = self.pipeline.requests[-1]
        self.assertEqual((sent.seed, list(sent.seeds), sent.num_images_per_prompt), (0, [4, 9], 2))
        self.client.generate_images("z-image", "a cat", steps=1, seeds=[4, 9], num_images_per_prompt=2, seed=0)
        self.assertEqual(list(self.pipeline.requests[-1].seeds), [4, 9])

    def test_seeds_misuse_is_refused_before_the_call(self):
        sent = len(self.pipeline.requests)
        with self.assertRaisesRegex(ValueError, r"give seed= or seeds=, not both \(seed=3, seeds=\[4, 9\]\)"):
            self.client.generate_images("z-image", "x", seed=3, seeds=[4, 9])
        with self.assertRaisesRegex(ValueError, "seeds has 2 entries for num_images_per_prompt=3"):
            self.client.generate_images("z-image", "x", seeds=[4, 9], num_images_per_prompt=3)
        self.assertEqual(len(self.pipeline.requests), sent)

    def test_generate_of_a_batch_points_to_generate_images(self):
        sent = len(self.pipeline.requests)
        for batch in ({"num_images_per_prompt": 2}, {"seeds": [1, 2]}):
            with self.assertRaisesRegex(ValueError, "returns one image, this asks for 2.*call generate_images"):
                self.client.generate("z-image", "x", **batch)
        self.assertEqual(len(self.pipeline.requests), sent)
        self.assertEqual(self.client.generate("z-image", "x", steps=1, seeds=[8]).seed, 8)

    def test_generate_images_checks_the_count(self):
        with self.assertRaisesRegex(dc.DiffusiondError, "ended after 1 of 2 images") as e:
            self.client.generate_images("short", "x", steps=1, num_images_per_prompt=2)
        self.assertEqual(e.exception.code, grpc.StatusCode.INTERNAL)
        with self.assertRaisesRegex(dc.DiffusiondError, "without an image"):
            self.client.generate_images("no-image", "x", steps=1)

    def test_generate_stream_yields_each_image_after_its_decode(self):
        events = list(self.client.generate_stream("z-image", "x", steps=1, num_images_per_prompt=2, seed=1))
        kinds = [e.stage if isinstance(e, dc.GenerateProgress) else f"image {e.index}" for e in events]
        self.assertEqual(kinds, ["load", "evict", "encode", "denoise", "decode", "image 0", "decode", "image 1"])

    def test_image_index_from_the_wire(self):
        image = dc.Image.from_proto(_ps.Image(png=b"p", width=2, height=1, seed=3, index=1))
        self.assertEqual(image, dc.Image(b"p", 2, 1, 3, 1))
        self.assertIn("index=1", repr(image))

    def test_progress_of_an_unknown_stage(self):
        p = dc.GenerateProgress.from_proto(_ps.GenerateProgress(stage=42, model_id="m"))
        self.assertEqual((p.stage, p.model_id), ("stage_42", "m"))


class WireTensorTest(unittest.TestCase):
    def test_checks_byte_count(self):
        with self.assertRaisesRegex(ValueError, "needs 24 bytes, got 20"):
            dc.WireTensor("float32", (2, 3), bytes(20))
        with self.assertRaisesRegex(ValueError, "dtype 'float8'"):
            dc.WireTensor("float8", (1,), bytes(1))
        with self.assertRaisesRegex(ValueError, "negative"):
            dc.WireTensor("uint8", (-1,), b"")

    def test_array_round_trip_per_dtype(self):
        for typecode, dtype in (("f", "float32"), ("d", "float64"), ("q", "int64"), ("i", "int32"), ("B", "uint8")):
            values = array.array(typecode, [1, 2, 3, 4])
            t = dc.WireTensor.from_array(values, (2, 2))
            self.assertEqual(t.dtype, dtype)
            self.assertEqual(t.to_array(), values)
            self.assertEqual(dc.WireTensor.from_proto(t.to_proto()), t)

    def test_little_endian_bytes(self):
        self.assertEqual(dc.WireTensor.from_floats([1.0]).data, b"\x00\x00\x80\x3f")

    def test_half_precision_to_list(self):
        self.assertEqual(dc.WireTensor("bfloat16", (2,), b"\x80\x3f\x00\xc0").to_list(), [1.0, -2.0])
        self.assertEqual(dc.WireTensor("float16", (1,), b"\x00\x3c").to_list(), [1.0])
        with self.assertRaisesRegex(ValueError, "to_list"):
            dc.WireTensor("float16", (1,), b"\x00\x3c").to_array()

    def test_unknown_proto_dtype(self):
        with self.assertRaisesRegex(ValueError, "enum 42"):
            dc.WireTensor.from_proto(_ts.Tensor(dtype=42, shape=[1], data=b"\0"))

    def test_to_wire_proto_rejects_non_tensors(self):
        with self.assertRaisesRegex(TypeError, "list is not a tensor"):
            dc.to_wire_proto([1, 2])

    @unittest.skipUnless(__import__("importlib").util.find_spec("numpy"), "numpy is not installed")
    def test_numpy_round_trip(self):
        import numpy as np

        a = np.arange(6, dtype=np.float32).reshape(2, 3).T  # not contiguous
        t = dc.WireTensor.from_numpy(a)
        self.assertEqual(t.shape, (3, 2))
        np.testing.assert_array_equal(t.to_numpy(), a)
        self.assertEqual(dc.to_wire_proto(a).shape, [3, 2])
        b = dc.WireTensor.from_numpy(np.array([1, 2], dtype=">i8"))  # big-endian input
        self.assertEqual(b.to_list(), [1, 2])
        np.testing.assert_array_equal(dc.WireTensor("bfloat16", (1,), b"\x80\x3f").to_numpy(), [1.0])

    def test_core_works_without_numpy(self):
        code = ("import sys; sys.modules['numpy'] = None\n"
                "import diffusiond_client as dc\n"
                "t = dc.WireTensor.from_floats([1, 2], (2,))\n"
                "assert t.to_list() == [1.0, 2.0]\n"
                "try:\n    t.to_numpy()\nexcept ImportError:\n    print('no numpy ok')\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("no numpy ok", out.stdout)

    def test_optional_packages_fail_only_when_asked_for(self):
        code = ("import sys; sys.modules['numpy'] = sys.modules['torch'] = sys.modules['PIL'] = None\n"
                "import diffusiond_client as dc\n"
                "image = dc.Image(b'png', 1, 1, 0)\n"
                "for convert in (image.to_pil, dc.WireTensor.zeros((1,)).to_torch):\n"
                "    try:\n        convert()\n    except ImportError:\n        print('fallback ok')\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["fallback", "ok", "fallback", "ok"])


if __name__ == "__main__":
    unittest.main()
