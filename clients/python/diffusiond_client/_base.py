"""What Client and AsyncClient hold in common besides the wire: the address,
default deadline and retry policy, the stubs on their channel, and which
model each lease pins (so renew and release carry the diffusiond-model
header too)."""

import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import grpc

from . import _calls, _stubs
from ._transport import RetryPolicy, metadata
from .auth import TokenSource
from .errors import DiffusiondError, from_rpc_error


class _Default:
    """The type of DEFAULT: "use the client's timeout"."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()
_MAX_REMEMBERED_LEASES = 4096
Timeout = Union[float, None, _Default]


class ClientBase:
    """State and helpers shared by Client and AsyncClient; no I/O."""

    def __init__(self, address: str, timeout: Optional[float], retry: RetryPolicy, channel: Any,
                 token: Optional[TokenSource] = None) -> None:
        self.address = address
        self._token = token
        self.timeout = timeout
        self.retry = retry
        self._channel = channel
        self._stubs: Dict[str, Any] = {
            "models": _stubs.model_service_pb2_grpc.ModelServiceStub(channel),
            "denoise": _stubs.denoise_service_pb2_grpc.DenoiseServiceStub(channel),
            "cache": _stubs.cache_service_pb2_grpc.CacheServiceStub(channel),
            "pipeline": _stubs.pipeline_service_pb2_grpc.PipelineServiceStub(channel),
            "health": _stubs.health_pb2_grpc.HealthStub(channel),
        }
        self._leases: Dict[int, str] = {}
        self._leases_mu = threading.Lock()

    def _deadline(self, timeout: Timeout) -> Optional[float]:
        return self.timeout if isinstance(timeout, _Default) else timeout

    def _metadata(self, model_id: Optional[str]) -> Optional[Tuple[Tuple[str, str], ...]]:
        return metadata(model_id, None if self._token is None else self._token.header())

    def _method(self, spec: "Union[_calls.Unary[Any], _calls.Stream[Any], _calls.Watch]") -> Any:
        return getattr(self._stubs[spec.service], spec.rpc)

    def _leased(self, model_id: str, lease_id: int) -> int:
        with self._leases_mu:
            self._leases[lease_id] = model_id
            while len(self._leases) > _MAX_REMEMBERED_LEASES:  # leases left to expire: forget the oldest
                del self._leases[next(iter(self._leases))]
        return lease_id

    def _lease_model(self, lease_id: int) -> Optional[str]:
        with self._leases_mu:
            return self._leases.get(lease_id)

    def _released(self, lease_id: int) -> None:
        with self._leases_mu:
            self._leases.pop(lease_id, None)

    @staticmethod
    def _components(components: Optional[Mapping[str, Optional[str]]], text_encoder: Optional[str],
                    transformer: Optional[str], vae: Optional[str]) -> Dict[str, Optional[str]]:
        merged: Dict[str, Optional[str]] = {"text_encoder": text_encoder, "transformer": transformer, "vae": vae}
        merged.update(components or {})
        return merged

    def _generate_spec(self, pipeline: Optional[str], prompt: str, negative_prompt: Optional[str], *,
                       components: Optional[Mapping[str, Optional[str]]] = None,
                       text_encoder: Optional[str] = None, transformer: Optional[str] = None,
                       vae: Optional[str] = None, width: int = 0, height: int = 0, steps: int = 0,
                       guidance_scale: Optional[float] = None, seed: Optional[int] = None, shift: float = 0.0,
                       true_cfg_scale: float = 0.0, component_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
                       image: Any = None, mask_image: Any = None, strength: float = 0.0,
                       num_images_per_prompt: int = 0, seeds: Optional[Sequence[int]] = None,
                       sigmas: Optional[Sequence[float]] = None, max_sequence_length: int = 0, num_frames: int = 0,
                       guidance_scale_2: Optional[float] = None, video_format: Optional[str] = None,
                       video: bool = False, padding_mask_crop: Optional[int] = None,
                       adapters: "_calls.Adapters" = ()) -> "_calls.Stream[Any]":
        """The Generate stream both clients' generate_stream and
        generate_video_stream start (arguments as documented there)."""
        return _calls.generate(pipeline, prompt, negative_prompt,
                               self._components(components, text_encoder, transformer, vae),
                               width, height, steps, guidance_scale, seed, shift, true_cfg_scale,
                               component_options, image=image, mask_image=mask_image, strength=strength,
                               num_images_per_prompt=num_images_per_prompt, seeds=seeds, sigmas=sigmas,
                               max_sequence_length=max_sequence_length, num_frames=num_frames,
                               guidance_scale_2=guidance_scale_2, video_format=video_format, video=video,
                               padding_mask_crop=padding_mask_crop, adapters=adapters)

    def _not_connected(self, timeout: float) -> DiffusiondError:
        return from_rpc_error(_NotConnected(self.address, timeout), "connect")


class _NotConnected:
    """An RpcError look-alike for a channel that did not connect in time."""

    def __init__(self, address: str, seconds: float) -> None:
        self._details = f"could not connect to {address} within {seconds} s"

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return self._details
