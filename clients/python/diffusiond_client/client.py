"""Client: the diffusiond.v1 services and the gRPC health service as Python calls.

One Client holds one gRPC channel and is safe to share between threads; the
calls block. Every call takes an optional ``timeout`` (seconds) that
overrides the client's default deadline; ``None`` means no deadline. A
failed call raises a DiffusiondError subclass (errors.py) naming the gRPC
code and the daemon's message.

Not here: tensor conversion (tensor.py), the result types (results.py), and
the PipelineService's requests and stream (pipeline.py).
"""

import grpc

from . import _stubs
from . import pipeline as _pipeline
from ._stream_call import StreamCall
from .errors import DiffusiondError, from_rpc_error
from .tensor import WireTensor, to_wire_proto
from .results import (DenoiseStep, Image, LoadProgress, MakeRoomResult, ModelInfo, Stats,
                      UnloadResult)

_ms = _stubs.model_service_pb2
_ds = _stubs.denoise_service_pb2
_cs = _stubs.cache_service_pb2
_ps = _stubs.pipeline_service_pb2
_hs = _stubs.health_pb2

_DEFAULT = object()  # "use the client's timeout"

_FP8_MODES = {
    None: _ms.FP8_MODE_DEFAULT,
    "default": _ms.FP8_MODE_DEFAULT,
    "off": _ms.FP8_MODE_OFF,
    "e4m3fn": _ms.FP8_MODE_E4M3FN,
    "e5m2": _ms.FP8_MODE_E5M2,
}

DEFAULT_MAX_MESSAGE_BYTES = 256 << 20  # the daemon's --max_message_bytes default


def _fp8_mode(fp8):
    if fp8 is True:
        return _ms.FP8_MODE_E4M3FN
    if fp8 is False:
        return _ms.FP8_MODE_OFF
    if fp8 not in _FP8_MODES:
        raise ValueError(f"fp8 '{fp8}' is not one of default, off, e4m3fn, e5m2 (or None/True/False)")
    return _FP8_MODES[fp8]


class DenoiseCall(StreamCall):
    """A running Denoise stream.

    Iterate it for DenoiseStep events followed by the final latents (a
    WireTensor), or call result(). cancel() may be called from any thread;
    the daemon stops within one step and the iteration then raises
    CancelledError.
    """

    def __init__(self, call):
        super().__init__(call, "Denoise", {"step": DenoiseStep.from_proto, "latents": WireTensor.from_proto},
                         "latents")

    def result(self, on_step=None):
        """Consumes the stream and returns the final latents.

        ``on_step(DenoiseStep)`` is called per step; if it raises, the call is
        cancelled and the exception propagates. Raises DiffusiondError if the
        stream fails or ends without latents.
        """
        return self._result(on_step, WireTensor)


class Client:
    """A connection to one diffusiond daemon.

    ``address`` is HOST:PORT. ``timeout`` is the default deadline of every
    call in seconds (None: none). ``credentials`` (grpc.ChannelCredentials)
    selects TLS; plaintext otherwise. ``max_message_bytes`` should match the
    daemon's --max_message_bytes.
    """

    def __init__(self, address, timeout=None, *, credentials=None,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, options=()):
        self.address = address
        self.timeout = timeout
        channel_options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ] + list(options)
        if credentials is not None:
            self._channel = grpc.secure_channel(address, credentials, channel_options)
        else:
            self._channel = grpc.insecure_channel(address, channel_options)
        self._models = _stubs.model_service_pb2_grpc.ModelServiceStub(self._channel)
        self._denoise = _stubs.denoise_service_pb2_grpc.DenoiseServiceStub(self._channel)
        self._cache = _stubs.cache_service_pb2_grpc.CacheServiceStub(self._channel)
        self._pipeline = _stubs.pipeline_service_pb2_grpc.PipelineServiceStub(self._channel)
        self._health = _stubs.health_pb2_grpc.HealthStub(self._channel)

    def close(self):
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _deadline(self, timeout):
        return self.timeout if timeout is _DEFAULT else timeout

    def _unary(self, name, method, request, timeout):
        try:
            return method(request, timeout=self._deadline(timeout))
        except grpc.RpcError as e:
            raise from_rpc_error(e, name) from e

    def wait_for_ready(self, timeout=10.0):
        """Blocks until the channel connects; UnavailableError after ``timeout`` s."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as e:
            raise from_rpc_error(_Timeout(self.address, timeout), "connect") from e

    # --- ModelService -----------------------------------------------------

    def load_model(self, path, model_id=None, fp8=None, compute_dtype=None, on_progress=None,
                   timeout=_DEFAULT, config_path=None):
        """Loads a model (or finds it loaded) and returns its ModelInfo.

        ``path`` is relative to the daemon's models directory. ``fp8``: None
        or "default" (the daemon's), "off", "e4m3fn", "e5m2". ``compute_dtype``:
        None (the daemon's), "float32", "bfloat16", "float16".
        ``on_progress(LoadProgress)`` is called per progress event; if it
        raises, the load is cancelled and the exception propagates.
        ``config_path`` names a config.json in the models directory (a single
        file carries none).
        """
        request = _ms.LoadModelRequest(path=path, model_id=model_id or "", fp8=_fp8_mode(fp8),
                                       compute_dtype=compute_dtype or "", config_path=config_path or "")
        call = self._models.LoadModel(request, timeout=self._deadline(timeout))
        info = None
        try:
            for event in call:
                kind = event.WhichOneof("event")
                if kind == "loaded":
                    info = ModelInfo.from_proto(event.loaded)
                elif kind == "progress" and on_progress is not None:
                    try:
                        on_progress(LoadProgress.from_proto(event.progress))
                    except BaseException:
                        call.cancel()
                        raise
        except grpc.RpcError as e:
            raise from_rpc_error(e, "LoadModel") from e
        if info is None:
            raise DiffusiondError(grpc.StatusCode.INTERNAL, "the stream ended without a ModelInfo", "LoadModel")
        return info

    def unload_model(self, model_id, wait=True, timeout=_DEFAULT):
        """Unloads a model; returns the bytes freed once they are released.

        With ``wait`` the daemon waits for work and leases on the model (up to
        the deadline); without, a model in use fails with FailedPreconditionError.
        """
        r = self._unary("UnloadModel", self._models.UnloadModel,
                        _ms.UnloadModelRequest(model_id=model_id, wait=wait), timeout)
        return UnloadResult.from_proto(r)

    def list_models(self, timeout=_DEFAULT):
        """Returns the loaded models (list of ModelInfo), most recently used first."""
        r = self._unary("ListModels", self._models.ListModels, _ms.ListModelsRequest(), timeout)
        return [ModelInfo.from_proto(m) for m in r.models]

    def acquire_lease(self, model_id, ttl_seconds=60.0, timeout=_DEFAULT):
        """Pins a loaded model for ``ttl_seconds``; returns the lease id."""
        r = self._unary("AcquireLease", self._models.AcquireLease,
                        _ms.AcquireLeaseRequest(model_id=model_id, ttl_seconds=ttl_seconds), timeout)
        return r.lease_id

    def renew_lease(self, lease_id, ttl_seconds=60.0, timeout=_DEFAULT):
        """Extends a lease to end ``ttl_seconds`` from now; NotFoundError if it
        is unknown or already expired."""
        self._unary("RenewLease", self._models.RenewLease,
                    _ms.RenewLeaseRequest(lease_id=lease_id, ttl_seconds=ttl_seconds), timeout)

    def release_lease(self, lease_id, timeout=_DEFAULT):
        """Releases a lease acquired with acquire_lease."""
        self._unary("ReleaseLease", self._models.ReleaseLease, _ms.ReleaseLeaseRequest(lease_id=lease_id),
                    timeout)

    # --- CacheService -----------------------------------------------------

    def stats(self, timeout=_DEFAULT):
        """Returns the budgets, cached models and counters (Stats)."""
        return Stats.from_proto(self._unary("GetStats", self._cache.GetStats, _cs.GetStatsRequest(), timeout))

    def make_room(self, num_bytes, device="cpu", timeout=_DEFAULT):
        """Evicts unpinned models until ``num_bytes`` fit on ``device``.

        Raises ResourceExhaustedError (evicting nothing) if pinned models prevent it.
        """
        r = self._unary("MakeRoom", self._cache.MakeRoom, _cs.MakeRoomRequest(bytes=num_bytes, device=device),
                        timeout)
        return MakeRoomResult(r.available_bytes, tuple(r.evicted_model_ids))

    # --- DenoiseService ---------------------------------------------------

    def step(self, model_id, inputs, timeout=_DEFAULT):
        """Runs one forward; ``inputs`` maps names to tensors, returns names to WireTensors.

        A tensor is a WireTensor, a diffusiond.v1.Tensor, a numpy array or a
        torch tensor (see tensor.to_wire_proto).
        """
        request = _ds.StepRequest(model_id=model_id)
        for name, value in inputs.items():
            request.inputs.add(name=name, tensor=to_wire_proto(value))
        r = self._unary("Step", self._denoise.Step, request, timeout)
        return {o.name: WireTensor.from_proto(o.tensor) for o in r.outputs}

    def denoise_stream(self, model_id, conditioning, negative=None, latents=None, shape=None, seed=0, steps=None,
                       guidance_scale=1.0, shift=0.0, sigmas=None, timeout=_DEFAULT, *, expert_2="",
                       boundary_ratio=0.0, guidance_scale_2=0.0):
        """Starts a Denoise and returns its DenoiseCall (iterable, cancellable).

        ``conditioning`` (and the optional ``negative``, for classifier-free
        guidance) maps the model's conditioning names (ModelInfo.conditioning)
        to tensors or, for scalars, numbers: e.g. {"cap_feats": feats} for
        Z-Image, {"encoder_hidden_states": t5, "pooled_projections": clip,
        "guidance": 3.5} for FLUX.1-dev. Give either initial ``latents``
        [C, H, W] or a ``shape`` of noise drawn from ``seed``. ``steps``
        defaults to len(sigmas) or 8. ``guidance_scale`` <= 1 is off;
        ``shift`` 0 is the model's own schedule. ``expert_2`` (Wan 2.2's
        low-noise expert, a loaded model's id or a path) runs the steps whose
        timestep is below ``boundary_ratio`` x 1000, guided by
        ``guidance_scale_2`` (0: ``guidance_scale``).
        """
        if (latents is None) == (shape is None):
            raise ValueError("give exactly one of latents= and shape=")
        if steps is None:
            steps = len(sigmas) if sigmas else 8
        request = _ds.DenoiseRequest(model_id=model_id, seed=seed, steps=steps, guidance_scale=guidance_scale,
                                     shift=shift, expert_2=expert_2, boundary_ratio=boundary_ratio,
                                     guidance_scale_2=guidance_scale_2)
        _fill_conditioning(request.conditioning, conditioning)
        if negative is not None:
            _fill_conditioning(request.negative, negative)
        if latents is not None:
            request.initial_latents.CopyFrom(to_wire_proto(latents))
        else:
            request.latent_shape.extend(int(s) for s in shape)
        if sigmas:
            request.sigmas.extend(sigmas)
        return DenoiseCall(self._denoise.Denoise(request, timeout=self._deadline(timeout)))

    def denoise(self, model_id, conditioning, negative=None, latents=None, shape=None, seed=0, steps=None,
                guidance_scale=1.0, shift=0.0, sigmas=None, on_step=None, timeout=_DEFAULT, **experts):
        """Runs the denoise loop and returns the final latents (a float32 WireTensor).

        Arguments as denoise_stream (``expert_2``, ``boundary_ratio`` and
        ``guidance_scale_2`` by keyword); ``on_step(DenoiseStep)`` is called per
        step, and if it raises the call is cancelled and the exception propagates.
        """
        return self.denoise_stream(model_id, conditioning, negative, latents, shape, seed, steps, guidance_scale,
                                   shift, sigmas, timeout, **experts).result(on_step)

    # --- PipelineService --------------------------------------------------

    def encode_prompt(self, text_encoder, prompt, timeout=_DEFAULT):
        """Encodes ``prompt`` with a text encoder (a loaded model's id or a path to load).

        Returns ``(conditioning, tokens)``: conditioning maps names to
        WireTensors (scalars, if any, to floats), as denoise() takes it, e.g.
        {"cap_feats": [L, 2560]} for Z-Image; tokens counts the prompt's tokens
        after the chat template and truncation.
        """
        r = self._unary("EncodePrompt", self._pipeline.EncodePrompt,
                        _ps.EncodePromptRequest(text_encoder=text_encoder, prompt=prompt), timeout)
        return _pipeline.conditioning_dict(r.conditioning), r.tokens

    def decode(self, vae, latents, timeout=_DEFAULT):
        """Decodes final latents [C, H, W] (or [1, C, H, W]) with a VAE; returns an Image."""
        r = self._unary("Decode", self._pipeline.Decode, _pipeline.decode_request(vae, latents), timeout)
        return Image.from_proto(r)

    def generate_stream(self, pipeline=None, prompt="", negative_prompt=None, *, components=None,
                        text_encoder=None, transformer=None, vae=None, width=0, height=0, steps=0,
                        guidance_scale=0.0, seed=None, shift=0.0, timeout=_DEFAULT):
        """Starts a Generate and returns its GenerateCall (iterable, cancellable).

        ``pipeline`` is a pipeline folder in the models directory.
        ``components`` maps component names ("text_encoder", "text_encoder_2",
        "transformer", "vae", ...) to a loaded model's id or a path, each
        replacing the pipeline's; ``text_encoder``/``transformer``/``vae`` are
        shorthands for those three. Without a pipeline every component is
        given (ValueError without a transformer). 0 for ``width``/``height``,
        ``steps`` and ``guidance_scale`` takes the pipeline's defaults;
        ``shift`` 0 is the transformer's schedule; ``seed`` None draws a
        random one (the Image reports it).
        """
        merged = {"text_encoder": text_encoder, "transformer": transformer, "vae": vae}
        merged.update(components or {})
        request = _pipeline.generate_request(pipeline, prompt, negative_prompt, merged, width, height, steps,
                                             guidance_scale, seed, shift)
        return _pipeline.GenerateCall(self._pipeline.Generate(request, timeout=self._deadline(timeout)))

    def generate(self, pipeline=None, prompt="", negative_prompt=None, *, on_progress=None, **kwargs):
        """Runs a Generate and returns the Image.

        Arguments as generate_stream; ``on_progress(GenerateProgress)`` is
        called per event, and if it raises the call is cancelled and the
        exception propagates.
        """
        return self.generate_stream(pipeline, prompt, negative_prompt, **kwargs).result(on_progress)

    # --- grpc.health.v1 ---------------------------------------------------

    def health(self, service="", timeout=_DEFAULT):
        """Returns the status name ("SERVING", "NOT_SERVING", ...) of ``service``.

        The daemon answers for "" (the whole server), "liveness" and
        "readiness"; an unknown service raises NotFoundError.
        """
        r = self._unary("Health.Check", self._health.Check, _hs.HealthCheckRequest(service=service), timeout)
        return _hs.HealthCheckResponse.ServingStatus.Name(r.status)


def _fill_conditioning(message, conditioning):
    """Copies a {name: tensor or number} mapping into a diffusiond.v1.Conditioning."""
    if not isinstance(conditioning, dict):
        raise TypeError("conditioning must map names to tensors or numbers, e.g. {\"cap_feats\": features}")
    for name, value in conditioning.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            message.scalars[name] = float(value)
        else:
            message.tensors.add(name=name, tensor=to_wire_proto(value))


class _Timeout:
    """An RpcError look-alike for a channel that did not connect in time."""

    def __init__(self, address, seconds):
        self._details = f"could not connect to {address} within {seconds} s"

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return self._details
