"""diffusiond_client: a Python client of the diffusiond daemon.

    from diffusiond_client import Client, WireTensor

    with Client("localhost:50051", timeout=600) as c:
        info = c.load_model("z-image-turbo", on_progress=print)
        caption = WireTensor.from_floats(features, shape=(77, 2560))
        latents = c.denoise(info.model_id, caption, shape=(16, 128, 128), steps=8, on_step=print)
        image = c.generate("z-image-turbo", "a cat", width=1024, height=1024, on_progress=print)
        image.save("cat.png")

Pure Python over the stubs generated into <build>/python (CMake target
diffusiond_python_stubs): run with PYTHONPATH=<build>/python:proto/python.
Needs grpcio and protobuf; numpy and torch are used only when asked to convert.
"""

from .client import Client, DenoiseCall
from .pipeline import GenerateCall
from .errors import (CancelledError, DeadlineExceededError, DiffusiondError, FailedPreconditionError,
                     InvalidArgumentError, NotFoundError, PermissionDeniedError, ResourceExhaustedError,
                     UnavailableError, from_rpc_error)
from .results import (DenoiseStep, DeviceBudget, GenerateProgress, Image, LoadProgress, MakeRoomResult, ModelInfo,
                      Stats, UnloadResult)
from .tensor import DTYPE_NAMES, WireTensor, to_wire_proto

__all__ = [
    "Client", "DenoiseCall", "GenerateCall", "WireTensor", "to_wire_proto", "DTYPE_NAMES",
    "ModelInfo", "LoadProgress", "DenoiseStep", "UnloadResult", "DeviceBudget", "Stats", "MakeRoomResult",
    "GenerateProgress", "Image",
    "DiffusiondError", "InvalidArgumentError", "NotFoundError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "CancelledError", "DeadlineExceededError",
    "UnavailableError", "from_rpc_error",
]
