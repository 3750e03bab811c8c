"""The PipelineService's requests and its Generate stream, for client.py.

Not here: the Client methods that make the calls (client.py) and the result
types (results.py).
"""

import secrets

import grpc

from . import _stubs
from .errors import DiffusiondError, from_rpc_error
from .results import GenerateProgress, Image
from .tensor import WireTensor, to_wire_proto

_ps = _stubs.pipeline_service_pb2


class GenerateCall:
    """A running Generate stream.

    Iterate it for GenerateProgress events (load, evict, encode, each denoise
    step, decode) followed by the Image, or call result(). cancel() may be
    called from any thread; the iteration then raises CancelledError.
    """

    def __init__(self, call):
        self._call = call

    def __iter__(self):
        try:
            for event in self._call:
                kind = event.WhichOneof("event")
                if kind == "progress":
                    yield GenerateProgress.from_proto(event.progress)
                elif kind == "image":
                    yield Image.from_proto(event.image)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "Generate") from e

    def cancel(self):
        """Cancels the call; returns False if it had already finished."""
        return self._call.cancel()

    def code(self):
        """Returns the call's grpc.StatusCode (blocks until it finishes)."""
        return self._call.code()

    def result(self, on_progress=None):
        """Consumes the stream and returns the Image.

        ``on_progress(GenerateProgress)`` is called per event; if it raises,
        the call is cancelled and the exception propagates. Raises
        DiffusiondError if the stream fails or ends without an image.
        """
        image = None
        for event in self:
            if isinstance(event, Image):
                image = event
            elif on_progress is not None:
                try:
                    on_progress(event)
                except BaseException:
                    self._call.cancel()
                    raise
        if image is None:
            raise DiffusiondError(grpc.StatusCode.INTERNAL, "the stream ended without an image", "Generate")
        return image


def generate_request(pipeline, prompt, negative_prompt, text_encoder, transformer, vae, width, height, steps,
                     guidance_scale, seed, shift):
    """Returns a GenerateRequest; ValueError when neither a pipeline nor all
    three components are named. A ``seed`` of None draws a random one."""
    if not pipeline and not (text_encoder and transformer and vae):
        raise ValueError("give pipeline=, or all of text_encoder=, transformer= and vae=")
    if seed is None:
        seed = secrets.randbits(64)
    return _ps.GenerateRequest(
        pipeline=pipeline or "", text_encoder=text_encoder or "", transformer=transformer or "", vae=vae or "",
        prompt=prompt, negative_prompt=negative_prompt or "", width=width, height=height, steps=steps,
        guidance_scale=guidance_scale, seed=seed, shift=shift)


def decode_request(vae, latents):
    """Returns a DecodeRequest for ``latents`` (any tensor to_wire_proto takes)."""
    return _ps.DecodeRequest(vae=vae, latents=to_wire_proto(latents))


def conditioning_dict(conditioning):
    """Returns a diffusiond.v1.Conditioning as {name: WireTensor or float},
    the form Client.denoise takes."""
    result = {t.name: WireTensor.from_proto(t.tensor) for t in conditioning.tensors}
    result.update((name, value) for name, value in conditioning.scalars.items())
    return result
