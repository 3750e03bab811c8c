"""AsyncClient: the same calls as Client, as asyncio coroutines over grpc.aio.

Every method of Client exists here with the same arguments and results;
``denoise_stream`` and ``generate_stream`` return async-iterable calls. The
requests and conversions come from _calls.py, shared with Client. Cancelling
a task that awaits a call cancels the RPC on the daemon. Create the client
inside the event loop that uses it (grpc.aio binds a channel to its loop).
"""

import asyncio
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import grpc

from . import _calls
from ._aio_stream_call import (AsyncDenoiseCall, AsyncEventWatch, AsyncGenerateCall, AsyncStreamCall,
                               AsyncVideoGenerateCall)
from ._base import DEFAULT, ClientBase, Timeout
from ._calls import Conditioning, DenoiseSegment
from ._transport import DEFAULT_MAX_MESSAGE_BYTES, Attempts, RetryPolicy, channel_options
from .auth import TokenSource
from .errors import NotFoundError, from_rpc_error
from .pipeline import ImageInput
from .results import (Available, DenoiseStep, GenerateProgress, Image, LoadProgress, MakeRoomResult, ModelInfo, Stats,
                      UnloadResult, Video)
from .tensor import TensorLike, WireTensor

R = TypeVar("R")
S = TypeVar("S", bound=AsyncStreamCall[Any])

__all__ = ["AsyncClient", "AsyncDenoiseCall", "AsyncEventWatch", "AsyncGenerateCall"]


class AsyncClient(ClientBase):
    """An asyncio connection to one daemon; arguments as Client's.

        async with AsyncClient("localhost:50051", timeout=600) as c:
            image = await c.generate("z-image-turbo", "a cat", on_progress=print)
    """

    def __init__(self, address: str, timeout: Optional[float] = None, *,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, options: Sequence[Tuple[str, Any]] = (),
                 retry: RetryPolicy = RetryPolicy(), token: Optional[str] = None,
                 token_file: Optional[str] = None) -> None:
        source = TokenSource.resolve(token, token_file)
        opts = channel_options(max_message_bytes, options)
        if credentials is not None:
            channel = grpc.aio.secure_channel(address, credentials, opts)
        else:
            channel = grpc.aio.insecure_channel(address, opts)
        super().__init__(address, timeout, retry, channel, source)

    async def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _unary(self, spec: "_calls.Unary[R]", timeout: Timeout) -> R:
        attempts = Attempts(self.retry, self._deadline(timeout), spec.idempotent)
        while True:
            try:
                response = await self._method(spec)(spec.request, timeout=attempts.timeout(),
                                                    metadata=self._metadata(spec.model_id))
            except grpc.RpcError as e:
                delay = attempts.backoff(e)
                if delay is None:
                    raise from_rpc_error(e, spec.label) from e
                await asyncio.sleep(delay)
                continue
            return spec.convert(response)

    def _stream(self, spec: "_calls.Stream[Any]", timeout: Timeout, wrapper: "type[S]") -> S:
        return wrapper(self._method(spec)(spec.request, timeout=self._deadline(timeout),
                                          metadata=self._metadata(spec.model_id)), spec)

    async def wait_for_ready(self, timeout: float = 10.0) -> None:
        """Returns once the channel connects; UnavailableError after ``timeout`` s."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout)
        except asyncio.TimeoutError as e:
            raise self._not_connected(timeout) from e

    # --- ModelService -----------------------------------------------------

    async def load_model(self, path: str, model_id: Optional[str] = None, fp8: Union[None, bool, str] = None,
                   compute_dtype: Optional[str] = None, on_progress: Optional[Callable[[LoadProgress], object]] = None,
                   timeout: Timeout = DEFAULT, config_path: Optional[str] = None) -> ModelInfo:
        """Loads a model (or finds it loaded) and returns its ModelInfo.

        ``path`` is relative to the daemon's models directory. ``fp8``: None
        or "default" (the daemon's), "off", "e4m3fn", "e5m2". ``compute_dtype``:
        None (the daemon's), "float32", "bfloat16", "float16".
        ``on_progress(LoadProgress)`` is called per progress event; if it
        raises, the load is cancelled and the exception propagates.
        ``config_path`` names a config.json in the models directory (a single
        file carries none).
        """
        spec = _calls.load_model(path, model_id, fp8, compute_dtype, config_path)
        info: ModelInfo = await self._stream(spec, timeout, AsyncStreamCall).result(on_progress)
        return info

    async def unload_model(self, model_id: str, wait: bool = True, timeout: Timeout = DEFAULT) -> UnloadResult:
        """Unloads a model; returns the bytes freed once they are released.

        With ``wait`` the daemon waits for work and leases on the model (up to
        the deadline); without, a model in use fails with FailedPreconditionError.
        """
        return await self._unary(_calls.unload_model(model_id, wait), timeout)

    async def list_models(self, timeout: Timeout = DEFAULT) -> List[ModelInfo]:
        """Returns the loaded models (list of ModelInfo), most recently used first."""
        return await self._unary(_calls.list_models(), timeout)

    async def list_available(self, timeout: Timeout = DEFAULT) -> Available:
        """Returns what the daemon's models directory holds that could be loaded
        (Available: AvailableModels with architecture, format and the RAM a load
        reserves with FP8 off and on), read from headers only and cached by the
        daemon. Candidates that cannot be loaded are listed with ``error``. Not
        model-scoped."""
        return await self._unary(_calls.list_available(), timeout)

    async def acquire_lease(self, model_id: str, ttl_seconds: float = 60.0, timeout: Timeout = DEFAULT) -> int:
        """Pins a loaded model for ``ttl_seconds``; returns the lease id."""
        return self._leased(model_id, await self._unary(_calls.acquire_lease(model_id, ttl_seconds), timeout))

    async def renew_lease(self, lease_id: int, ttl_seconds: float = 60.0, timeout: Timeout = DEFAULT) -> None:
        """Extends a lease to end ``ttl_seconds`` from now; NotFoundError if it
        is unknown or already expired."""
        try:
            await self._unary(_calls.renew_lease(lease_id, ttl_seconds, self._lease_model(lease_id)), timeout)
        except NotFoundError:
            self._released(lease_id)  # expired: the daemon has forgotten it too
            raise

    async def release_lease(self, lease_id: int, timeout: Timeout = DEFAULT) -> None:
        """Releases a lease acquired with acquire_lease."""
        await self._unary(_calls.release_lease(lease_id, self._lease_model(lease_id)), timeout)
        self._released(lease_id)

    # --- CacheService -----------------------------------------------------

    async def stats(self, timeout: Timeout = DEFAULT) -> Stats:
        """Returns the budgets, cached models and counters (Stats)."""
        return await self._unary(_calls.stats(), timeout)

    async def make_room(self, num_bytes: int, device: str = "cpu", timeout: Timeout = DEFAULT) -> MakeRoomResult:
        """Evicts unpinned models until ``num_bytes`` fit on ``device``.

        Raises ResourceExhaustedError (evicting nothing) if pinned models prevent it.
        """
        return await self._unary(_calls.make_room(num_bytes, device), timeout)

    def watch_events(self, progress: bool = True, timeout: Optional[float] = None) -> AsyncEventWatch:
        """Starts WatchEvents and returns its AsyncEventWatch: a snapshot of the
        resident models first, then every cache event (CacheEvent) as it
        happens, with load progress unless ``progress`` is False, until the
        daemon drains (UnavailableError).
        Iterate it (``async for``); ``cancel()`` or leaving ``async with``
        ends it quietly, and cancelling the iterating task cancels the RPC. ``timeout`` is a deadline for
        the whole watch (default: none, whatever the client's default). Events
        may repeat what the snapshot shows: apply "loaded" as an upsert and
        "evicted"/"unloaded" as removals by model_id. Not model-scoped.
        """
        spec = _calls.watch_events(progress)
        return AsyncEventWatch(self._method(spec)(spec.request, timeout=timeout), spec)

    # --- DenoiseService ---------------------------------------------------

    async def step(self, model_id: str, inputs: Mapping[str, TensorLike], timeout: Timeout = DEFAULT, *,
             adapters: _calls.Adapters = ()) -> Dict[str, WireTensor]:
        """Runs one forward; ``inputs`` maps names to tensors, returns names to WireTensors.

        A tensor is a WireTensor, a diffusiond.v1.Tensor, a numpy array or a
        torch tensor (see tensor.to_wire_proto). ``adapters`` are LoRA
        files in the models directory applied for this forward only:
        ``[(path, weight), ...]`` (a bare path: weight 1); their terms add.
        """
        return await self._unary(_calls.step(model_id, inputs, adapters), timeout)

    def denoise_stream(self, model_id: str, conditioning: Conditioning, negative: Optional[Conditioning] = None,
                       latents: Optional[TensorLike] = None, shape: Optional[Sequence[int]] = None, seed: int = 0,
                       steps: Optional[int] = None, guidance_scale: float = 1.0, shift: float = 0.0,
                       sigmas: Optional[Sequence[float]] = None, timeout: Timeout = DEFAULT, *, expert_2: str = "",
                       boundary_ratio: float = 0.0, guidance_scale_2: float = 0.0,
                       later_segments: Sequence[DenoiseSegment] = (),
                       adapters: _calls.Adapters = ()) -> AsyncDenoiseCall:
        """Starts a Denoise and returns its DenoiseCall (async-iterable, cancellable).

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
        ``guidance_scale_2`` (0: ``guidance_scale``): an alias of one of
        ``later_segments``, the models that take over in order, each at its
        boundary, with one scheduler state across them. ``adapters``
        (LoRA files, ``[(path, weight), ...]``, as step's) apply to every
        segment's model for this call only.
        """
        spec = _calls.denoise(model_id, conditioning, negative, latents, shape, seed, steps, guidance_scale, shift,
                              sigmas, expert_2, boundary_ratio, guidance_scale_2, later_segments, adapters)
        return self._stream(spec, timeout, AsyncDenoiseCall)

    async def denoise(self, model_id: str, conditioning: Conditioning, negative: Optional[Conditioning] = None,
                latents: Optional[TensorLike] = None, shape: Optional[Sequence[int]] = None, seed: int = 0,
                steps: Optional[int] = None, guidance_scale: float = 1.0, shift: float = 0.0,
                sigmas: Optional[Sequence[float]] = None, on_step: Optional[Callable[[DenoiseStep], object]] = None,
                timeout: Timeout = DEFAULT, **experts: Any) -> WireTensor:
        """Runs the denoise loop and returns the final latents (a float32 WireTensor).

        Arguments as denoise_stream (``expert_2``, ``boundary_ratio``,
        ``guidance_scale_2`` and ``later_segments`` by keyword); ``on_step(DenoiseStep)`` is called per
        step, and if it raises the call is cancelled and the exception propagates.
        """
        return await self.denoise_stream(model_id, conditioning, negative, latents, shape, seed, steps, guidance_scale,
                                   shift, sigmas, timeout, **experts).result(on_step)

    # --- PipelineService --------------------------------------------------

    async def encode_prompt(self, text_encoder: str, prompt: str, timeout: Timeout = DEFAULT, *, pipeline: str = ""
                      ) -> Tuple[Dict[str, Union[WireTensor, float]], int]:
        """Encodes ``prompt`` with a text encoder (a loaded model's id or a path to load).

        ``pipeline`` says whose encoding: a pipeline family's name ("z-image",
        "flux", "qwen-image", "wan", "krea2") or a pipeline folder; empty, the
        one family with a text encoder of this architecture (the daemon
        refuses, naming them, when several have one).

        Returns ``(conditioning, tokens)``: conditioning maps names to
        WireTensors (scalars, if any, to floats), as denoise() takes it, e.g.
        {"cap_feats": [L, 2560]} for Z-Image; tokens counts the prompt's tokens
        after the chat template and truncation.
        """
        return await self._unary(_calls.encode_prompt(text_encoder, prompt, pipeline), timeout)

    async def decode(self, vae: str, latents: TensorLike, timeout: Timeout = DEFAULT) -> Image:
        """Decodes final latents [C, H, W] (or [1, C, H, W]) with a VAE; returns an Image."""
        return await self._unary(_calls.decode(vae, latents), timeout)

    def generate_stream(self, pipeline: Optional[str] = None, prompt: str = "",
                        negative_prompt: Optional[str] = None, *,
                        components: Optional[Mapping[str, Optional[str]]] = None,
                        text_encoder: Optional[str] = None, transformer: Optional[str] = None,
                        vae: Optional[str] = None, width: int = 0, height: int = 0, steps: int = 0,
                        guidance_scale: Optional[float] = None, seed: Optional[int] = None, shift: float = 0.0,
                        true_cfg_scale: float = 0.0,
                        component_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
                        image: Optional[ImageInput] = None, mask_image: Optional[ImageInput] = None,
                        strength: float = 0.0, num_images_per_prompt: int = 0,
                        seeds: Optional[Sequence[int]] = None, sigmas: Optional[Sequence[float]] = None,
                        max_sequence_length: int = 0, num_frames: int = 0,
                        guidance_scale_2: Optional[float] = None,
                        padding_mask_crop: Optional[int] = None,
                        adapters: _calls.Adapters = (),
                        timeout: Timeout = DEFAULT) -> AsyncGenerateCall:
        """Starts a Generate and returns its GenerateCall (async-iterable, cancellable).

        ``pipeline`` is a pipeline folder in the models directory.
        ``components`` maps component names ("text_encoder", "text_encoder_2",
        "transformer", "vae", ...) to a loaded model's id or a path, each
        replacing the pipeline's; ``text_encoder``/``transformer``/``vae`` are
        shorthands for those three. Without a pipeline every component is
        given (ValueError without a transformer). 0 for ``width``/``height``
        and ``steps``, and None for ``guidance_scale``, take the pipeline's
        defaults; ``guidance_scale`` means what the family's upstream
        pipeline means by it (Z-Image: CFG at > 0, 0 off; FLUX.1-dev: the
        distilled guidance);
        ``shift`` 0 is the transformer's schedule; ``seed`` None draws a
        random one (the Image reports it). ``true_cfg_scale`` (> 1, with a
        ``negative_prompt``) is FLUX's true classifier-free guidance, as
        FluxPipeline's; a pipeline whose guidance is ``guidance_scale``
        refuses it (InvalidArgumentError). ``component_options`` maps a
        component's name to how this Generate loads it, e.g.
        ``{"text_encoder": {"fp8": "off"}}`` (``fp8`` as ``load``'s,
        ``compute_dtype`` "float32", "bfloat16" or "float16"); a cached
        model loaded otherwise is refused (FailedPreconditionError).

        ``image`` makes it img2img (ZImageImg2ImgPipeline,
        FluxImg2ImgPipeline): PNG bytes, or a float32 tensor [3, H, W] (or
        [1, 3, H, W]) in [0, 1] (numpy, torch, WireTensor) of the output's
        size. ``mask_image`` with it makes it inpainting: PNG bytes or a
        float32 tensor [H, W] (or [1, H, W], [1, 1, H, W]) in [0, 1], white
        repainted, black kept. ``strength`` in (0, 1] is how much of the
        schedule runs from the image (0: the family's default, upstream's).
        ``num_images_per_prompt`` images (0: 1) share one generator seeded by
        ``seed``; ``seeds`` instead gives each its own (one per image, with
        ``seed`` unset; ValueError otherwise), as upstream's list of
        generators. ``sigmas`` are upstream's (the schedule's before its
        shift; their count is the steps), ``max_sequence_length`` the text
        encoder's tokens (0: the family's 512). ``num_frames`` (a video
        pipeline's) and ``guidance_scale_2`` (Wan 2.2's second expert's) are
        for generate_video_stream; an image pipeline refuses them.
        ``padding_mask_crop`` N (FLUX and Qwen-Image inpainting, as
        upstream's; ``image`` and ``mask_image`` as PNG bytes of one size, any
        size) inpaints the mask's box padded by N pixels and grown to
        ``width``:``height``, at that size (0: 1024x1024), and pastes it back:
        the Image has the init image's size. ``adapters`` (LoRA files,
        ``[(path, weight), ...]``, as step's) apply to the denoiser for this
        request only; the Image's parameters record them. The daemon refuses
        the rest (InvalidArgumentError).
        """
        spec = self._generate_spec(pipeline, prompt, negative_prompt, components=components,
                                   text_encoder=text_encoder, transformer=transformer, vae=vae, width=width,
                                   height=height, steps=steps, guidance_scale=guidance_scale, seed=seed, shift=shift,
                                   true_cfg_scale=true_cfg_scale, component_options=component_options, image=image,
                                   mask_image=mask_image, strength=strength,
                                   num_images_per_prompt=num_images_per_prompt, seeds=seeds, sigmas=sigmas,
                                   max_sequence_length=max_sequence_length, num_frames=num_frames,
                                   guidance_scale_2=guidance_scale_2,
                                   padding_mask_crop=padding_mask_crop, adapters=adapters)
        return self._stream(spec, timeout, AsyncGenerateCall)

    async def generate(self, pipeline: Optional[str] = None, prompt: str = "", negative_prompt: Optional[str] = None,
                 *, on_progress: Optional[Callable[[GenerateProgress], object]] = None, **kwargs: Any) -> Image:
        """Runs a Generate of one image and returns the Image.

        Arguments as generate_stream; ``on_progress(GenerateProgress)`` is
        called per event, and if it raises the call is cancelled and the
        exception propagates. More than one image (``num_images_per_prompt``
        or ``seeds``) raises ValueError: call generate_images.
        """
        _calls.check_one_image(kwargs.get("num_images_per_prompt", 0), kwargs.get("seeds"))
        return await self.generate_stream(pipeline, prompt, negative_prompt, **kwargs).result(on_progress)

    async def generate_images(self, pipeline: Optional[str] = None, prompt: str = "",
                              negative_prompt: Optional[str] = None, *,
                              on_progress: Optional[Callable[[GenerateProgress], object]] = None,
                              **kwargs: Any) -> List[Image]:
        """Runs a Generate and returns all its Images, in batch order (index
        0 first): ``num_images_per_prompt`` of them, or one per entry of
        ``seeds``. Arguments as generate's."""
        return await self.generate_stream(pipeline, prompt, negative_prompt, **kwargs).images(on_progress)

    def generate_video_stream(self, pipeline: Optional[str] = None, prompt: str = "",
                              negative_prompt: Optional[str] = None, *, video_format: Optional[str] = None,
                              timeout: Timeout = DEFAULT, **kwargs: Any) -> AsyncVideoGenerateCall:
        """Starts a Generate of a video pipeline (Wan) and returns its call.

        Arguments as generate_stream's (``num_images_per_prompt`` is
        upstream's num_videos_per_prompt; ``num_frames`` 1 + 4k, 0: 81;
        ``guidance_scale_2`` Wan 2.2's low-noise expert's guidance, where the
        pipeline folder has a transformer_2). ``video_format`` "mp4" (None,
        the default: each video's H.264 file) or "png_frames" (each frame as
        a PNG, streamed as it decodes). An MP4 the daemon cannot encode is
        FailedPreconditionError before anything loads.
        """
        spec = self._generate_spec(pipeline, prompt, negative_prompt, video=True, video_format=video_format, **kwargs)
        return self._stream(spec, timeout, AsyncVideoGenerateCall)

    async def generate_video(self, pipeline: Optional[str] = None, prompt: str = "",
                       negative_prompt: Optional[str] = None, *,
                       on_event: Optional[Callable[[Any], object]] = None, **kwargs: Any) -> Video:
        """Runs a Generate of one video and returns the Video (its ``mp4``
        bytes, or its ``frame_pngs``). Arguments as generate_video_stream;
        ``on_event`` gets each GenerateProgress (and VideoFrame); if it raises
        the call is cancelled and the exception propagates. More than one
        video raises ValueError: call generate_videos."""
        _calls.check_one_image(kwargs.get("num_images_per_prompt", 0), kwargs.get("seeds"))
        return await self.generate_video_stream(pipeline, prompt, negative_prompt, **kwargs).video(on_event)

    async def generate_videos(self, pipeline: Optional[str] = None, prompt: str = "",
                        negative_prompt: Optional[str] = None, *,
                        on_event: Optional[Callable[[Any], object]] = None, **kwargs: Any) -> List[Video]:
        """Runs a Generate and returns all its Videos in batch order.
        Arguments as generate_video's."""
        return await self.generate_video_stream(pipeline, prompt, negative_prompt, **kwargs).videos(on_event)

    # --- grpc.health.v1 ---------------------------------------------------

    async def health(self, service: str = "", timeout: Timeout = DEFAULT) -> str:
        """Returns the status name ("SERVING", "NOT_SERVING", ...) of ``service``.

        The daemon answers for "" (the whole server), "liveness" and
        "readiness"; an unknown service raises NotFoundError.
        """
        return await self._unary(_calls.health(service), timeout)

