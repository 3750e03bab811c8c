"""Every RPC as a plain description: which stub method, the request, how to
convert the answer, the model it concerns and whether it may be retried.

Client (blocking) and AsyncClient (asyncio) both execute these; keeping the
request building and result conversion here gives them one home, so the two
clients cannot drift apart.

Idempotent calls, the only ones retried on UNAVAILABLE: Health.Check,
ListModels, ListAvailable and GetStats read state; Step is one forward on the tensors it
carries and changes nothing in the daemon. Loads, unloads, leases, MakeRoom,
Denoise, EncodePrompt, Decode and Generate may load or evict models or hold
resources, so a retry after a lost answer could repeat that; they are not
retried.
"""

import dataclasses
from typing import Any, Callable, Dict, Generic, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from . import _stubs
from . import pipeline as _pipeline
from .results import (Available, CacheEvent, DenoiseStep, GenerateProgress, Image, LoadProgress, MakeRoomResult,
                      ModelInfo, Stats, UnloadResult, Video, VideoFrame)
from .tensor import TensorLike, WireTensor, to_wire_proto

_ms = _stubs.model_service_pb2
_ds = _stubs.denoise_service_pb2
_cs = _stubs.cache_service_pb2
_hs = _stubs.health_pb2
_ps = _stubs.pipeline_service_pb2

R = TypeVar("R")

Conditioning = Mapping[str, Union[TensorLike, float]]


@dataclasses.dataclass(frozen=True)
class DenoiseSegment:
    """A stretch of a Denoise run by another model (diffusiond.v1.DenoiseSegment).

    ``model_id`` (a loaded model's id or a path) takes over at the first step
    whose scheduler timestep is below ``boundary_ratio`` x 1000, guided by
    ``guidance_scale`` (0: the request's).
    """

    model_id: str
    boundary_ratio: float
    guidance_scale: float = 0.0

_FP8_MODES: Dict[Optional[str], int] = {
    None: _ms.FP8_MODE_DEFAULT,
    "default": _ms.FP8_MODE_DEFAULT,
    "off": _ms.FP8_MODE_OFF,
    "e4m3fn": _ms.FP8_MODE_E4M3FN,
    "e5m2": _ms.FP8_MODE_E5M2,
}


@dataclasses.dataclass(frozen=True)
class Unary(Generic[R]):
    """A unary RPC: ``service`` names the stub ("models", "denoise", "cache",
    "pipeline", "health"), ``rpc`` its method; ``model_id`` goes into the
    diffusiond-model header."""

    service: str
    rpc: str
    request: Any
    convert: Callable[[Any], R]
    model_id: Optional[str] = None
    idempotent: bool = False
    name: str = ""  # for errors; rpc when empty

    @property
    def label(self) -> str:
        return self.name or self.rpc


@dataclasses.dataclass(frozen=True)
class Stream(Generic[R]):
    """A server-streaming RPC whose events are progress (converted with
    ``converters`` by oneof kind) followed by its results of type ``final``:
    one, except for a Generate of several images (each may come between
    progress events)."""

    service: str
    rpc: str
    request: Any
    converters: Mapping[str, Callable[[Any], Any]]
    final: type
    final_kind: str  # what the stream ends with, for the error when it does not
    model_id: Optional[str] = None

    @property
    def label(self) -> str:
        return self.rpc


@dataclasses.dataclass(frozen=True)
class Watch:
    """A server-streaming RPC of events without a final result (WatchEvents):
    each is converted with ``convert``. Never model-scoped."""

    service: str
    rpc: str
    request: Any
    convert: Callable[[Any], Any]

    @property
    def label(self) -> str:
        return self.rpc


def fp8_mode(fp8: Union[None, bool, str]) -> int:
    """The wire enum of an ``fp8`` argument; ValueError when unknown."""
    if fp8 is True:
        return int(_ms.FP8_MODE_E4M3FN)
    if fp8 is False:
        return int(_ms.FP8_MODE_OFF)
    if fp8 not in _FP8_MODES:
        raise ValueError(f"fp8 '{fp8}' is not one of default, off, e4m3fn, e5m2 (or None/True/False)")
    return _FP8_MODES[fp8]


def fill_conditioning(message: Any, conditioning: Conditioning) -> None:
    """Copies a {name: tensor or number} mapping into a diffusiond.v1.Conditioning."""
    if not isinstance(conditioning, Mapping):
        raise TypeError("conditioning must map names to tensors or numbers, e.g. {\"cap_feats\": features}")
    for name, value in conditioning.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            message.scalars[name] = float(value)
        else:
            message.tensors.add(name=name, tensor=to_wire_proto(value))


# --- ModelService -------------------------------------------------------------


def load_model(path: str, model_id: Optional[str], fp8: Union[None, bool, str], compute_dtype: Optional[str],
               config_path: Optional[str]) -> "Stream[ModelInfo]":
    request = _ms.LoadModelRequest(path=path, model_id=model_id or "", fp8=fp8_mode(fp8),
                                   compute_dtype=compute_dtype or "", config_path=config_path or "")
    return Stream("models", "LoadModel", request,
                  {"progress": LoadProgress.from_proto, "loaded": ModelInfo.from_proto}, ModelInfo, "a ModelInfo",
                  model_id or path)


def unload_model(model_id: str, wait: bool) -> "Unary[UnloadResult]":
    return Unary("models", "UnloadModel", _ms.UnloadModelRequest(model_id=model_id, wait=wait),
                 UnloadResult.from_proto, model_id)


def _models(r: Any) -> "list[ModelInfo]":
    return [ModelInfo.from_proto(m) for m in r.models]


def list_models() -> "Unary[list[ModelInfo]]":
    return Unary("models", "ListModels", _ms.ListModelsRequest(), _models, idempotent=True)


def list_available() -> "Unary[Available]":
    # Not model-scoped: no diffusiond-model header.
    return Unary("models", "ListAvailable", _ms.ListAvailableRequest(), Available.from_proto, idempotent=True)


def _lease_id(r: Any) -> int:
    return int(r.lease_id)


def _none(r: Any) -> None:
    return None


def acquire_lease(model_id: str, ttl_seconds: float) -> "Unary[int]":
    return Unary("models", "AcquireLease", _ms.AcquireLeaseRequest(model_id=model_id, ttl_seconds=ttl_seconds),
                 _lease_id, model_id)


def renew_lease(lease_id: int, ttl_seconds: float, model_id: Optional[str]) -> "Unary[None]":
    return Unary("models", "RenewLease", _ms.RenewLeaseRequest(lease_id=lease_id, ttl_seconds=ttl_seconds),
                 _none, model_id)


def release_lease(lease_id: int, model_id: Optional[str]) -> "Unary[None]":
    return Unary("models", "ReleaseLease", _ms.ReleaseLeaseRequest(lease_id=lease_id), _none, model_id)


# --- CacheService -------------------------------------------------------------


def stats() -> "Unary[Stats]":
    return Unary("cache", "GetStats", _cs.GetStatsRequest(), Stats.from_proto, idempotent=True)


def _make_room_result(r: Any) -> MakeRoomResult:
    return MakeRoomResult(int(r.available_bytes), tuple(r.evicted_model_ids))


def make_room(num_bytes: int, device: str) -> "Unary[MakeRoomResult]":
    return Unary("cache", "MakeRoom", _cs.MakeRoomRequest(bytes=num_bytes, device=device), _make_room_result)


def watch_events(progress: bool) -> Watch:
    # Not model-scoped: no diffusiond-model header.
    return Watch("cache", "WatchEvents", _cs.WatchEventsRequest(no_progress=not progress), CacheEvent.from_proto)


# --- DenoiseService -----------------------------------------------------------


def _outputs(r: Any) -> Dict[str, WireTensor]:
    return {o.name: WireTensor.from_proto(o.tensor) for o in r.outputs}


# LoRA adapters as the calls take them: (path, weight) pairs, or paths (weight 1).
Adapters = Sequence[Union[str, Tuple[str, float]]]


def add_adapters(field: Any, adapters: Adapters) -> None:
    """Fills a request's repeated Adapter ``field``; ValueError naming a bad entry."""
    for entry in adapters:
        path, weight = (entry, 1.0) if isinstance(entry, str) else entry
        if not isinstance(path, str) or not path:
            raise ValueError(f"adapter {entry!r}: give a path in the models directory, or (path, weight)")
        field.add(path=path, weight=float(weight))


def step(model_id: str, inputs: Mapping[str, TensorLike], adapters: Adapters = ()) -> "Unary[Dict[str, WireTensor]]":
    request = _ds.StepRequest(model_id=model_id)
    for name, value in inputs.items():
        request.inputs.add(name=name, tensor=to_wire_proto(value))
    add_adapters(request.adapters, adapters)
    return Unary("denoise", "Step", request, _outputs, model_id, idempotent=True)


def denoise(model_id: str, conditioning: Conditioning, negative: Optional[Conditioning],
            latents: Optional[TensorLike], shape: Optional[Sequence[int]], seed: int, steps: Optional[int],
            guidance_scale: float, shift: float, sigmas: Optional[Sequence[float]], expert_2: str,
            boundary_ratio: float, guidance_scale_2: float,
            later_segments: Sequence[DenoiseSegment] = (), adapters: Adapters = ()) -> "Stream[WireTensor]":
    if (latents is None) == (shape is None):
        raise ValueError("give exactly one of latents= and shape=")
    if steps is None:
        steps = len(sigmas) if sigmas else 8
    request = _ds.DenoiseRequest(model_id=model_id, seed=seed, steps=steps, guidance_scale=guidance_scale,
                                 shift=shift, expert_2=expert_2, boundary_ratio=boundary_ratio,
                                 guidance_scale_2=guidance_scale_2)
    for segment in later_segments:
        request.later_segments.add(model_id=segment.model_id, boundary_ratio=segment.boundary_ratio,
                                   guidance_scale=segment.guidance_scale)
    add_adapters(request.adapters, adapters)
    fill_conditioning(request.conditioning, conditioning)
    if negative is not None:
        fill_conditioning(request.negative, negative)
    if latents is not None:
        request.initial_latents.CopyFrom(to_wire_proto(latents))
    else:
        assert shape is not None
        request.latent_shape.extend(int(s) for s in shape)
    if sigmas:
        request.sigmas.extend(sigmas)
    return Stream("denoise", "Denoise", request, {"step": DenoiseStep.from_proto, "latents": WireTensor.from_proto},
                  WireTensor, "latents", model_id)


# --- PipelineService ----------------------------------------------------------


def _encoded(r: Any) -> Tuple[Dict[str, Union[WireTensor, float]], int]:
    return _pipeline.conditioning_dict(r.conditioning), int(r.tokens)


def encode_prompt(text_encoder: str, prompt: str,
                  pipeline: str = "") -> "Unary[Tuple[Dict[str, Union[WireTensor, float]], int]]":
    request = _pipeline.encode_request(text_encoder, prompt, pipeline)
    return Unary("pipeline", "EncodePrompt", request, _encoded, text_encoder)


def decode(vae: str, latents: TensorLike) -> "Unary[Image]":
    return Unary("pipeline", "Decode", _pipeline.decode_request(vae, latents), Image.from_proto, vae)


def generate(pipeline: Optional[str], prompt: str, negative_prompt: Optional[str],
             components: Mapping[str, Optional[str]], width: int, height: int, steps: int,
             guidance_scale: Optional[float],
             seed: Optional[int], shift: float, true_cfg_scale: float = 0.0,
             component_options: Optional[Mapping[str, Mapping[str, Any]]] = None, *,
             image: Optional[_pipeline.ImageInput] = None, mask_image: Optional[_pipeline.ImageInput] = None,
             strength: float = 0.0, num_images_per_prompt: int = 0,
             seeds: Optional[Sequence[int]] = None, sigmas: Optional[Sequence[float]] = None,
             max_sequence_length: int = 0, num_frames: int = 0, guidance_scale_2: Optional[float] = None,
             video_format: Optional[str] = None, video: bool = False,
             padding_mask_crop: Optional[int] = None, adapters: Adapters = ()) -> "Stream[Any]":
    """A Generate's stream: of Images, or with ``video`` (a video pipeline's
    call) of VideoFrames and Videos."""
    options = {}
    for name, given in (component_options or {}).items():
        unknown = set(given) - {"fp8", "compute_dtype"}
        if unknown:
            raise ValueError(f"component_options[{name!r}]: unknown option(s) {sorted(unknown)}; "
                             "each takes fp8 and compute_dtype")
        options[name] = _ps.ComponentOptions(fp8=fp8_mode(given.get("fp8")),
                                             compute_dtype=given.get("compute_dtype") or "")
    request = _pipeline.generate_request(pipeline, prompt, negative_prompt, components, width, height, steps,
                                         guidance_scale, seed, shift, true_cfg_scale, options, image, mask_image,
                                         strength, num_images_per_prompt, seeds, sigmas, max_sequence_length,
                                         num_frames, guidance_scale_2, video_format, padding_mask_crop)
    add_adapters(request.adapters, adapters)
    model = pipeline or request.components.get("transformer")
    if video:
        return Stream("pipeline", "Generate", request,
                      {"progress": GenerateProgress.from_proto, "frame": VideoFrame.from_proto,
                       "video": Video.from_proto}, Video, "a video", model)
    return Stream("pipeline", "Generate", request, {"progress": GenerateProgress.from_proto, "image": Image.from_proto},
                  Image, "an image", model)


def check_one_image(num_images_per_prompt: int, seeds: Optional[Sequence[int]]) -> None:
    """ValueError when a Generate asks for more than the one image
    ``generate()`` returns."""
    count = max(num_images_per_prompt, len(seeds or ()))
    if count > 1:
        raise ValueError(f"generate() returns one image, this asks for {count} "
                         "(num_images_per_prompt or seeds): call generate_images()")


# --- grpc.health.v1 -----------------------------------------------------------


def _status_name(r: Any) -> str:
    return str(_hs.HealthCheckResponse.ServingStatus.Name(r.status))


def health(service: str) -> "Unary[str]":
    return Unary("health", "Check", _hs.HealthCheckRequest(service=service), _status_name, idempotent=True,
                 name="Health.Check")
