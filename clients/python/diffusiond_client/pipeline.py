"""The PipelineService's requests and its Generate stream, for client.py.

Not here: the Client methods that make the calls (client.py) and the result
types (results.py).
"""

import secrets

from . import _stubs
from ._stream_call import StreamCall
from .results import GenerateProgress, Image
from .tensor import WireTensor, to_wire_proto

_ps = _stubs.pipeline_service_pb2


class GenerateCall(StreamCall):
    """A running Generate stream.

    Iterate it for GenerateProgress events (load, evict, encode, each denoise
    step, decode) followed by the Image, or call result(). cancel() may be
    called from any thread; the iteration then raises CancelledError.
    """

    def __init__(self, call):
        super().__init__(call, "Generate", {"progress": GenerateProgress.from_proto, "image": Image.from_proto},
                         "an image")

    def result(self, on_progress=None):
        """Consumes the stream and returns the Image.

        ``on_progress(GenerateProgress)`` is called per event; if it raises,
        the call is cancelled and the exception propagates. Raises
        DiffusiondError if the stream fails or ends without an image.
        """
        return self._result(on_progress, Image)


def generate_request(pipeline, prompt, negative_prompt, components, width, height, steps, guidance_scale, seed,
                     shift):
    """Returns a GenerateRequest; ValueError when there is no pipeline and no
    transformer component (the daemon says which others are missing). A
    ``seed`` of None draws a random one."""
    components = {name: value for name, value in (components or {}).items() if value}
    if not pipeline and "transformer" not in components:
        raise ValueError("give pipeline=, or every component in components= (at least the transformer)")
    if seed is None:
        seed = secrets.randbits(64)
    return _ps.GenerateRequest(
        pipeline=pipeline or "", components=components, prompt=prompt, negative_prompt=negative_prompt or "",
        width=width, height=height, steps=steps, guidance_scale=guidance_scale, seed=seed, shift=shift)


def decode_request(vae, latents):
    """Returns a DecodeRequest for ``latents`` (any tensor to_wire_proto takes)."""
    return _ps.DecodeRequest(vae=vae, latents=to_wire_proto(latents))


def conditioning_dict(conditioning):
    """Returns a diffusiond.v1.Conditioning as {name: WireTensor or float},
    the form Client.denoise takes."""
    result = {t.name: WireTensor.from_proto(t.tensor) for t in conditioning.tensors}
    result.update((name, value) for name, value in conditioning.scalars.items())
    return result
