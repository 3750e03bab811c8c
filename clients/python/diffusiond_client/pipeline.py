"""The PipelineService's requests and answers, for _calls.py.

Not here: the calls themselves (client.py, aio.py) and the result types
(results.py).
"""

import secrets
from typing import Any, Dict, Mapping, Optional, Union

from . import _stubs
from .tensor import TensorLike, WireTensor, to_wire_proto

_ps = _stubs.pipeline_service_pb2


def generate_request(pipeline: Optional[str], prompt: str, negative_prompt: Optional[str],
                     components: Optional[Mapping[str, Optional[str]]], width: int, height: int, steps: int,
                     guidance_scale: float, seed: Optional[int], shift: float, true_cfg_scale: float = 0.0,
                     component_options: Optional[Mapping[str, Any]] = None) -> Any:
    """Returns a GenerateRequest; ValueError when there is no pipeline and no
    transformer component (the daemon says which others are missing). A
    ``seed`` of None draws a random one."""
    given = {name: value for name, value in (components or {}).items() if value}
    if not pipeline and "transformer" not in given:
        raise ValueError("give pipeline=, or every component in components= (at least the transformer)")
    if seed is None:
        seed = secrets.randbits(64)
    return _ps.GenerateRequest(
        pipeline=pipeline or "", components=given, prompt=prompt, negative_prompt=negative_prompt or "",
        width=width, height=height, steps=steps, guidance_scale=guidance_scale, seed=seed, shift=shift,
        true_cfg_scale=true_cfg_scale, component_options=component_options or {})


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
