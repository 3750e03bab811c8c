"""The generated diffusiond.v1 and grpc.health.v1 modules, in one place.

They ship inside the package under ``_pb`` (made by tools/gen_stubs.py from
proto/ and checked by the ctest python.stubs), so an installed wheel needs
nothing generated at install time. Their descriptors carry the same file
names as the stubs CMake builds into ``<build>/python``, so a process may
import both.
"""

from typing import Any

from ._pb.diffusiond.v1 import cache_service_pb2 as _cache_service_pb2
from ._pb.diffusiond.v1 import cache_service_pb2_grpc as _cache_service_pb2_grpc
from ._pb.diffusiond.v1 import denoise_service_pb2 as _denoise_service_pb2
from ._pb.diffusiond.v1 import denoise_service_pb2_grpc as _denoise_service_pb2_grpc
from ._pb.diffusiond.v1 import model_service_pb2 as _model_service_pb2
from ._pb.diffusiond.v1 import model_service_pb2_grpc as _model_service_pb2_grpc
from ._pb.diffusiond.v1 import pipeline_service_pb2 as _pipeline_service_pb2
from ._pb.diffusiond.v1 import pipeline_service_pb2_grpc as _pipeline_service_pb2_grpc
from ._pb.diffusiond.v1 import tensor_pb2 as _tensor_pb2
from ._pb.grpc_health.v1 import health_pb2 as _health_pb2
from ._pb.grpc_health.v1 import health_pb2_grpc as _health_pb2_grpc

# protoc builds their classes at import time, which no type checker sees:
# to mypy they are Any.
cache_service_pb2: Any = _cache_service_pb2
cache_service_pb2_grpc: Any = _cache_service_pb2_grpc
denoise_service_pb2: Any = _denoise_service_pb2
denoise_service_pb2_grpc: Any = _denoise_service_pb2_grpc
model_service_pb2: Any = _model_service_pb2
model_service_pb2_grpc: Any = _model_service_pb2_grpc
pipeline_service_pb2: Any = _pipeline_service_pb2
pipeline_service_pb2_grpc: Any = _pipeline_service_pb2_grpc
tensor_pb2: Any = _tensor_pb2
health_pb2: Any = _health_pb2
health_pb2_grpc: Any = _health_pb2_grpc

__all__ = [
    "cache_service_pb2", "cache_service_pb2_grpc", "denoise_service_pb2",
    "denoise_service_pb2_grpc", "model_service_pb2", "model_service_pb2_grpc",
    "pipeline_service_pb2", "pipeline_service_pb2_grpc",
    "tensor_pb2", "health_pb2", "health_pb2_grpc",
]
