"""Plain results of the client's calls, decoupled from the protobuf classes.

Each type is a frozen dataclass built from its diffusiond.v1 message by
``from_proto``; field names and meanings follow the .proto files.
"""

import dataclasses
import io
import os
from typing import Any, Optional, Tuple, Type, TypeVar, Union

import grpc

T = TypeVar("T", bound="_FromProto")


class _FromProto:
    """Gives a dataclass whose fields are scalars named as in its message a
    ``from_proto`` that copies them."""

    @classmethod
    def from_proto(cls: Type[T], m: Any) -> T:
        return cls(*(getattr(m, f.name) for f in dataclasses.fields(cls)))


@dataclasses.dataclass(frozen=True)
class ConditioningInput(_FromProto):
    """One conditioning input a denoiser reads (diffusiond.v1.ConditioningInput);
    ``shape`` uses -1 for a free length."""

    name: str
    scalar: bool
    shape: Tuple[int, ...]
    required: bool
    default_value: float
    meaning: str

    @classmethod
    def from_proto(cls, m: Any) -> "ConditioningInput":
        return cls(m.name, m.scalar, tuple(m.shape), m.required, m.default_value, m.meaning)


@dataclasses.dataclass(frozen=True)
class ModelInfo(_FromProto):
    """What a loaded model holds (diffusiond.v1.ModelInfo). ``vram_bytes``,
    ``vram_plan`` and ``vram_streamed_bytes_per_step`` describe its placement
    on the daemon's device (0 and empty when it has none)."""

    model_id: str
    architecture: str
    description: str
    compute_dtype: str
    tensors: int
    fp8_tensors: int
    ram_bytes: int
    vram_bytes: int
    pins: int
    idle_seconds: float
    role: str
    conditioning: Tuple[ConditioningInput, ...]
    supports_negative: bool
    vram_plan: str
    vram_streamed_bytes_per_step: int

    @classmethod
    def from_proto(cls, m: Any) -> "ModelInfo":
        values = {f.name: getattr(m, f.name) for f in dataclasses.fields(cls)}
        values["conditioning"] = tuple(ConditioningInput.from_proto(c) for c in m.conditioning)
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class LoadProgress(_FromProto):
    """One progress event of a load (diffusiond.v1.LoadProgress)."""

    bytes_read: int
    total_bytes: int
    tensors_done: int
    total_tensors: int
    reused_bytes: int = 0  # a switch: memory of the models it evicted that it wrote over


@dataclasses.dataclass(frozen=True)
class DenoiseStep(_FromProto):
    """One finished denoise step (diffusiond.v1.DenoiseStep); ``step`` is 1-based."""

    step: int
    steps: int
    sigma: float
    step_seconds: float
    model_id: str  # the model that ran it: model_id, or a later segment's past its boundary
    evicted_model_ids: Tuple[str, ...] = ()  # on a model's first step: what was evicted to make room for it
    model_loaded: bool = False  # on a model's first step: it was loaded for this call
    load_seconds: float = 0.0  # with model_loaded: what readying it took (the load, waits for room)

    @classmethod
    def from_proto(cls, m: Any) -> "DenoiseStep":
        return cls(
            m.step, m.steps, m.sigma, m.step_seconds, m.model_id, tuple(m.evicted_model_ids), m.model_loaded,
            m.load_seconds,
        )


@dataclasses.dataclass(frozen=True)
class UnloadResult(_FromProto):
    """Bytes an unload released (diffusiond.v1.UnloadModelResponse)."""

    ram_bytes_freed: int
    vram_bytes_freed: int


@dataclasses.dataclass(frozen=True)
class DeviceBudget(_FromProto):
    """One device's budget (diffusiond.v1.DeviceBudget)."""

    device: str
    capacity_bytes: int
    reserved_bytes: int
    committed_bytes: int
    high_water_bytes: int


@dataclasses.dataclass(frozen=True)
class Stats:
    """Budgets, cached models and cache counters (diffusiond.v1.GetStatsResponse)."""

    budgets: Tuple[DeviceBudget, ...]
    models: Tuple[ModelInfo, ...]
    hits: int
    misses: int
    evictions: int
    rejections: int
    process_resident_bytes: int

    @classmethod
    def from_proto(cls, m: Any) -> "Stats":
        return cls(tuple(DeviceBudget.from_proto(b) for b in m.budgets),
                   tuple(ModelInfo.from_proto(x) for x in m.models), m.hits, m.misses, m.evictions,
                   m.rejections, m.process_resident_bytes)

    def budget(self, device: str = "cpu") -> Optional[DeviceBudget]:
        """Returns the DeviceBudget of ``device``, or None."""
        return next((b for b in self.budgets if b.device == device), None)


@dataclasses.dataclass(frozen=True)
class MakeRoomResult:
    """What MakeRoom did (diffusiond.v1.MakeRoomResponse)."""

    available_bytes: int
    evicted_model_ids: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class GenerateProgress:
    """One finished stage of a Generate (diffusiond.v1.GenerateProgress).

    ``stage`` is "load", "evict", "encode", "denoise" or "decode" (or
    "stage_<n>" for a stage newer than this client); ``step`` and ``steps``
    count denoise steps, 1-based; ``seconds`` is the stage's wall time and
    ``detail`` one line such as "loaded 1.2 GiB". ``device`` is where an
    encode, denoise step or decode ran ("cpu", "sim", "cuda:0"), or the device
    a placement evicted to RAM left; empty for loads and evictions from RAM
    (and from daemons older than the field).
    """

    stage: str
    model_id: str
    step: int
    steps: int
    seconds: float
    detail: str
    device: str = ""

    @classmethod
    def from_proto(cls, m: Any) -> "GenerateProgress":
        value = m.DESCRIPTOR.fields_by_name["stage"].enum_type.values_by_number.get(m.stage)
        stage = value.name[len("STAGE_"):].lower() if value is not None else f"stage_{m.stage}"
        return cls(stage, m.model_id, m.step, m.steps, m.seconds, m.detail, m.device)


@dataclasses.dataclass(frozen=True)
class Image(_FromProto):
    """A generated or decoded image (diffusiond.v1.Image): ``png`` holds an
    8-bit RGB PNG whose text chunks carry its parameters; ``seed`` is the
    noise seed of a Generate (0 for a Decode): the request's, shared by its
    batch, or this image's entry of ``seeds``. ``index`` is its place among
    the Generate's num_images_per_prompt images (0-based)."""

    png: bytes
    width: int
    height: int
    seed: int
    index: int = 0

    def __repr__(self) -> str:
        return (f"Image(width={self.width}, height={self.height}, seed={self.seed}, index={self.index}, "
                f"png=<{len(self.png)} bytes>)")

    def save(self, path: Union[str, "os.PathLike[str]"]) -> Union[str, "os.PathLike[str]"]:
        """Writes the PNG bytes to ``path``; returns ``path``."""
        with open(path, "wb") as f:
            f.write(self.png)
        return path

    def to_pil(self) -> Any:
        """Returns the image as a PIL.Image.Image (loaded, so the bytes may go).

        PIL is optional: raises ImportError without it; ``png`` always works."""
        from PIL import Image as PILImage

        picture = PILImage.open(io.BytesIO(self.png))
        picture.load()
        return picture


@dataclasses.dataclass(frozen=True)
class VideoFrame(_FromProto):
    """One frame of a Generate's video as it decodes
    (diffusiond.v1.VideoFrame, video_format "png_frames"): ``png`` an 8-bit
    RGB PNG, ``index`` the video's place among num_images_per_prompt,
    ``frame`` its place in the video (0-based)."""

    png: bytes
    index: int
    frame: int

    def __repr__(self) -> str:
        return f"VideoFrame(index={self.index}, frame={self.frame}, png=<{len(self.png)} bytes>)"


@dataclasses.dataclass(frozen=True)
class Video:
    """A generated video (diffusiond.v1.Video): ``mp4`` the H.264 file
    (video_format "mp4"; its metadata's "comment" is ``parameters``), or,
    with video_format "png_frames", ``frame_pngs`` the frames in order as
    PNGs (the client gathers the VideoFrame events; ``mp4`` is empty).
    ``parameters`` is the JSON of what made it, as an image's PNG carries;
    ``seed`` and ``index`` as an Image's."""

    mp4: bytes
    width: int
    height: int
    frames: int
    fps: int
    seed: int
    index: int
    parameters: str
    frame_pngs: Tuple[bytes, ...] = ()

    @classmethod
    def from_proto(cls, m: Any) -> "Video":
        return cls(m.mp4, m.width, m.height, m.frames, m.fps, m.seed, m.index, m.parameters)

    def __repr__(self) -> str:
        return (f"Video(width={self.width}, height={self.height}, frames={self.frames}, fps={self.fps}, "
                f"seed={self.seed}, index={self.index}, mp4=<{len(self.mp4)} bytes>, "
                f"frame_pngs=<{len(self.frame_pngs)} PNGs>)")

    def save(self, path: Union[str, "os.PathLike[str]"]) -> Union[str, "os.PathLike[str]"]:
        """Writes the MP4 bytes to ``path``; returns ``path``. ValueError for
        a video received as PNG frames (write ``frame_pngs`` instead)."""
        if not self.mp4:
            raise ValueError("this video came as PNG frames (video_format=\"png_frames\"): write frame_pngs")
        with open(path, "wb") as f:
            f.write(self.mp4)
        return path


def _enum_name(m: Any, field: str, prefix: str) -> str:
    """The lower-case name of enum field ``field`` without ``prefix``, or
    "<field>_<n>" for a value newer than this client."""
    value = m.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number.get(getattr(m, field))
    return str(value.name[len(prefix):].lower()) if value is not None else f"{field}_{getattr(m, field)}"


@dataclasses.dataclass(frozen=True)
class AvailableSize:
    """One FP8 setting's plan of an available model (diffusiond.v1.AvailableSize):
    ``fp8`` is "off", "e4m3fn" or "e5m2"; ``reservation_bytes`` is the RAM a
    load reserves, ``final_bytes`` what the loaded model holds."""

    fp8: str
    reservation_bytes: int
    final_bytes: int
    fp8_tensors: int

    @classmethod
    def from_proto(cls, m: Any) -> "AvailableSize":
        return cls(_enum_name(m, "fp8", "FP8_MODE_"), m.reservation_bytes, m.final_bytes, m.fp8_tensors)


@dataclasses.dataclass(frozen=True)
class AvailableAdapter:
    """A LoRA adapter file as planned from its header
    (diffusiond.v1.AvailableAdapter): ``layout`` "diffusers", "kohya" or
    "comfyui"; the ``architectures`` its keys map onto; the denoiser's
    ``modules`` it updates and their ranks; ``targets`` the first
    architecture's linears (at most 64 listed)."""

    layout: str
    architectures: Tuple[str, ...]
    modules: int
    text_encoder_modules: int
    min_rank: int
    max_rank: int
    targets: Tuple[str, ...]

    @classmethod
    def from_proto(cls, m: Any) -> "AvailableAdapter":
        return cls(m.layout, tuple(m.architectures), m.modules, m.text_encoder_modules, m.min_rank, m.max_rank,
                   tuple(m.targets))


@dataclasses.dataclass(frozen=True)
class AvailableModel:
    """Something under the daemon's models directory that could be loaded
    (diffusiond.v1.AvailableModel). ``path`` is what load_model (or
    generate's ``pipeline``) takes; ``format`` is "safetensors",
    "scaled-fp8", "model-folder", "sharded-folder", "pipeline" or "lora"
    (an adapter for ``adapters=``, described by ``adapter``); ``sizes``
    has FP8 off first, at ``compute_dtype``. ``error`` says why it cannot be
    loaded (empty when it can)."""

    path: str
    format: str
    architecture: str
    role: str
    description: str
    file_bytes: int
    tensors: int
    compute_dtype: str
    sizes: Tuple[AvailableSize, ...]
    components: Tuple[str, ...]
    error: str
    # Pipelines: (name, default, meaning) of each Generate argument its
    # family takes, named as upstream's __call__ arguments.
    arguments: Tuple[Tuple[str, str, str], ...] = ()
    adapter: Optional[AvailableAdapter] = None

    @property
    def loadable(self) -> bool:
        return not self.error

    def size(self, fp8: str = "off") -> Optional[AvailableSize]:
        """The plan at ``fp8`` ("off", "e4m3fn", ...), or None."""
        return next((s for s in self.sizes if s.fp8 == fp8), None)

    @classmethod
    def from_proto(cls, m: Any) -> "AvailableModel":
        return cls(m.path, m.format, m.architecture, m.role, m.description, m.file_bytes, m.tensors, m.compute_dtype,
                   tuple(AvailableSize.from_proto(s) for s in m.sizes), tuple(m.components), m.error,
                   tuple((a.name, a.default_value, a.meaning) for a in m.arguments),
                   AvailableAdapter.from_proto(m.adapter) if m.HasField("adapter") else None)


@dataclasses.dataclass(frozen=True)
class Available:
    """What ListAvailable found (diffusiond.v1.ListAvailableResponse).
    ``truncated`` says the walk stopped at its depth or entry limit
    (``truncated_reason`` says where), so ``models`` is incomplete."""

    models: Tuple[AvailableModel, ...]
    truncated: bool
    truncated_reason: str
    entries_scanned: int

    @classmethod
    def from_proto(cls, m: Any) -> "Available":
        return cls(tuple(AvailableModel.from_proto(x) for x in m.models), m.truncated, m.truncated_reason,
                   m.entries_scanned)


@dataclasses.dataclass(frozen=True)
class CacheEvent:
    """One event of WatchEvents (diffusiond.v1.WatchEvent).

    ``kind`` is "snapshot" (``models`` are the resident ones: replace what
    you hold; ``events_lost`` > 0 when it follows an overflow), "loaded",
    "load_failed", "evicted" (``reason`` says why), "unloaded", "rejected",
    "waited_for_room" or "load_progress" (``progress``); or "kind_<n>" for
    one newer than this client. ``tier`` is "ram" or "vram" (where
    "evicted" means evicted to RAM). ``code`` is the grpc.StatusCode name of
    a failure, rejection or wait ("" otherwise) and ``message`` its text.
    """

    kind: str
    tier: str
    model_id: str
    ram_bytes: int
    vram_bytes: int
    seconds: float
    reason: str
    code: str
    message: str
    progress: Optional[LoadProgress]
    models: Tuple[ModelInfo, ...]
    events_lost: int

    @classmethod
    def from_proto(cls, m: Any) -> "CacheEvent":
        kind = _enum_name(m, "kind", "KIND_")
        code = ""
        if kind in ("load_failed", "rejected", "waited_for_room"):
            code = next((c.name for c in grpc.StatusCode if c.value[0] == m.code), str(m.code))
        progress = LoadProgress.from_proto(m.progress) if m.HasField("progress") else None
        return cls(kind, m.tier, m.model_id, m.ram_bytes, m.vram_bytes, m.seconds, m.reason, code, m.message,
                   progress, tuple(ModelInfo.from_proto(x) for x in m.models), m.events_lost)
