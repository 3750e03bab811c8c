"""The PipelineService's requests and answers, for _calls.py.

Not here: the calls themselves (client.py, aio.py) and the result types
(results.py).
"""

import os
import secrets
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _stubs
from .tensor import TensorLike, WireTensor, to_wire_proto

_ps = _stubs.pipeline_service_pb2

ImageInput = Union[bytes, bytearray, memoryview, TensorLike]
"""An init image or mask: PNG bytes, or a tensor (see GenerateRequest's
image_tensor and mask_tensor for the shapes, float32 in [0, 1])."""


def generate_request(pipeline: Optional[str], prompt: str, negative_prompt: Optional[str],
                     components: Optional[Mapping[str, Optional[str]]], width: int, height: int, steps: int,
                     guidance_scale: Optional[float], seed: Optional[int], shift: float, true_cfg_scale: float = 0.0,
                     component_options: Optional[Mapping[str, Any]] = None, image: Optional[ImageInput] = None,
                     mask_image: Optional[ImageInput] = None, strength: float = 0.0, num_images_per_prompt: int = 0,
                     seeds: Optional[Sequence[int]] = None, sigmas: Optional[Sequence[float]] = None,
                     max_sequence_length: int = 0, num_frames: int = 0,
                     guidance_scale_2: Optional[float] = None, video_format: Optional[str] = None,
                     padding_mask_crop: Optional[int] = None) -> Any:
    """Returns a GenerateRequest; ValueError when there is no pipeline and no
    transformer component (the daemon says which others are missing), or
    when ``seeds`` comes with a nonzero ``seed`` or does not count
    ``num_images_per_prompt`` images. A ``seed`` of None draws a random one,
    unless ``seeds`` is given; ``num_images_per_prompt`` 0 with ``seeds`` is
    len(seeds). ``video_format`` ("mp4" or "png_frames"; None: mp4) is how a
    video pipeline's videos come back; ValueError for another.
    ``padding_mask_crop`` None leaves the field unset (0 is a crop with no
    padding, as upstream's)."""
    given = {name: value for name, value in (components or {}).items() if value}
    if not pipeline and "transformer" not in given:
        raise ValueError("give pipeline=, or every component in components= (at least the transformer)")
    seeds = [int(s) for s in seeds or ()]
    if seeds:
        if seed:
            raise ValueError(f"give seed= or seeds=, not both (seed={seed}, seeds={seeds}): "
                             "seeds gives each image its own generator")
        if num_images_per_prompt and num_images_per_prompt != len(seeds):
            raise ValueError(f"seeds has {len(seeds)} entries for num_images_per_prompt={num_images_per_prompt}; "
                             "give one seed per image")
        seed, num_images_per_prompt = 0, len(seeds)
    elif seed is None:
        seed = secrets.randbits(64)
    request = _ps.GenerateRequest(
        pipeline=pipeline or "", components=given, prompt=prompt, negative_prompt=negative_prompt or "",
        width=width, height=height, steps=steps, seed=seed, shift=shift,
        true_cfg_scale=true_cfg_scale, component_options=component_options or {}, strength=strength,
        num_images_per_prompt=num_images_per_prompt, seeds=seeds, sigmas=[float(x) for x in sigmas or ()],
        max_sequence_length=max_sequence_length, num_frames=num_frames,
        video_format=video_format_enum(video_format))
    if guidance_scale_2 is not None:  # unset: guidance_scale
        request.guidance_scale_2 = guidance_scale_2
    if guidance_scale is not None:  # unset: the pipeline's default (0 is a value: Z-Image's CFG off)
        request.guidance_scale = guidance_scale
    if padding_mask_crop is not None:  # unset: no crop (0 crops to the mask's box)
        request.padding_mask_crop = padding_mask_crop
    _set_image(request, "image", image)
    _set_image(request, "mask_image", mask_image)
    return request


_VIDEO_FORMATS = {None: "VIDEO_FORMAT_MP4", "mp4": "VIDEO_FORMAT_MP4", "png_frames": "VIDEO_FORMAT_PNG_FRAMES"}


def video_format_enum(video_format: Optional[str]) -> int:
    """The wire enum of a ``video_format`` argument; ValueError when unknown."""
    if video_format not in _VIDEO_FORMATS:
        raise ValueError(f"video_format {video_format!r} is not \"mp4\" or \"png_frames\"")
    return int(getattr(_ps, _VIDEO_FORMATS[video_format]))


def images_expected(request: Any) -> int:
    """How many images a GenerateRequest asks for (0 on the wire means 1)."""
    return max(int(request.num_images_per_prompt), len(request.seeds), 1)


def _set_image(request: Any, field: str, value: Optional[ImageInput]) -> None:
    """Sets ``field`` (PNG bytes) or its tensor twin (``image_tensor``,
    ``mask_tensor``) of a GenerateRequest; TypeError for a path, which the
    daemon could not read (it is not on the daemon's machine)."""
    if value is None:
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        setattr(request, field, bytes(value))
    elif isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{field}={value!r} is a path: pass the PNG's bytes (open(path, 'rb').read()) or a tensor")
    else:
        tensor_field = "image_tensor" if field == "image" else "mask_tensor"
        getattr(request, tensor_field).CopyFrom(to_wire_proto(value))


def encode_request(text_encoder: str, prompt: str, pipeline: str = "") -> Any:
    """Returns an EncodePromptRequest; ``pipeline`` (a family's name or a
    pipeline folder, empty for none) says whose encoding."""
    return _ps.EncodePromptRequest(text_encoder=text_encoder, prompt=prompt, pipeline=pipeline)


def decode_request(vae: str, latents: TensorLike) -> Any:
    """Returns a DecodeRequest for ``latents`` (any tensor to_wire_proto takes)."""
    return _ps.DecodeRequest(vae=vae, latents=to_wire_proto(latents))


def conditioning_dict(conditioning: Any) -> Dict[str, Union[WireTensor, float]]:
    """Returns a diffusiond.v1.Conditioning as {name: WireTensor or float},
    the form Client.denoise takes."""
    result: Dict[str, Union[WireTensor, float]] = {t.name: WireTensor.from_proto(t.tensor)
                                                    for t in conditioning.tensors}
    result.update((name, float(value)) for name, value in conditioning.scalars.items())
    return result
