"""diffusiond_client: a Python client of the diffusiond daemon, blocking and asyncio.

    from diffusiond_client import Client, AsyncClient, WireTensor

    with Client("localhost:50051", timeout=600) as c:
        info = c.load_model("z-image-turbo", on_progress=print)
        image = c.generate("z-image-turbo", "a cat", width=1024, height=1024, on_progress=print)
        image.save("cat.png")

    async with AsyncClient("localhost:50051", timeout=600) as c:
        image = await c.generate("z-image-turbo", "a cat", on_progress=print)

Needs grpcio and protobuf; the generated stubs ship inside (``_pb``). numpy,
torch and PIL are used only when asked to convert.
"""

from ._base import DEFAULT
from ._stream_call import DenoiseCall, EventWatch, GenerateCall, StreamCall, VideoGenerateCall
from ._transport import DEFAULT_MAX_MESSAGE_BYTES, KEEPALIVE_OPTIONS, MODEL_HEADER, RetryPolicy
from ._calls import DenoiseSegment
from ._aio_stream_call import AsyncVideoGenerateCall
from .aio import AsyncClient, AsyncDenoiseCall, AsyncEventWatch, AsyncGenerateCall
from .auth import TOKEN_ENV, TOKEN_FILE_ENV, TokenSource, tls_credentials
from .client import Client
from .errors import (CancelledError, DeadlineExceededError, DiffusiondError, FailedPreconditionError,
                     InvalidArgumentError, NotFoundError, PermissionDeniedError, ResourceExhaustedError,
                     UnauthenticatedError, UnavailableError, from_rpc_error)
from .results import (Available, AvailableAdapter, AvailableModel, AvailableSize, CacheEvent, ConditioningInput, DenoiseStep, DeviceBudget, GenerateProgress, Image, LoadProgress,
                      MakeRoomResult, ModelInfo, Stats, UnloadResult, Video, VideoFrame)
from .tensor import DTYPE_NAMES, TensorLike, WireTensor, to_wire_proto

__all__ = [
    "Client", "AsyncClient", "DenoiseCall", "GenerateCall", "StreamCall", "AsyncDenoiseCall", "AsyncGenerateCall",
    "EventWatch", "AsyncEventWatch", "Available", "AvailableAdapter", "AvailableModel", "AvailableSize", "CacheEvent",
    "RetryPolicy", "TokenSource", "tls_credentials", "TOKEN_ENV", "TOKEN_FILE_ENV", "MODEL_HEADER", "KEEPALIVE_OPTIONS", "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT",
    "WireTensor", "TensorLike", "to_wire_proto", "DTYPE_NAMES",
    "ModelInfo", "ConditioningInput", "LoadProgress", "DenoiseSegment", "DenoiseStep", "UnloadResult", "DeviceBudget", "Stats",
    "MakeRoomResult", "GenerateProgress", "Image", "Video", "VideoFrame", "VideoGenerateCall", "AsyncVideoGenerateCall",
    "DiffusiondError", "InvalidArgumentError", "NotFoundError", "PermissionDeniedError", "UnauthenticatedError",
    "ResourceExhaustedError", "FailedPreconditionError", "CancelledError", "DeadlineExceededError",
    "UnavailableError", "from_rpc_error",
]
